"""A plain node that receives the graph's context manager by injection and trims before its own work.

The parameter is filled per graph (``None`` when the graph has no manager), so two graphs in one process never
share a manager through a global container.
"""

from __future__ import annotations

from injectq import Inject

from windowkeeper.core.graph import StateGraph
from windowkeeper.core.state import AgentState, BaseContextManager, Message, MessageContextManager
from windowkeeper.utils.constants import END


async def my_node(
    state: AgentState,
    # injectq types its marker as a class, so a checker needs to be told the default stands for the instance
    ctx_mgr: BaseContextManager | None = Inject[BaseContextManager],  # type: ignore[assignment]
) -> AgentState:
    if ctx_mgr:
        state = await ctx_mgr.atrim_context(state)
    return state


def build(manager: BaseContextManager | None) -> StateGraph:
    graph = StateGraph(context_manager=manager)
    graph.add_node("trim", my_node)
    graph.add_edge("trim", END)
    graph.set_entry_point("trim")
    return graph


if __name__ == "__main__":
    turns = [Message.text_message(f"question {i}", message_id=f"q{i}") for i in range(6)]
    for label, manager in (("with manager", MessageContextManager(max_messages=2)), ("without", None)):
        result = build(manager).compile().invoke({"messages": turns})
        print(label, "->", [m.text() for m in result["state"].context])
