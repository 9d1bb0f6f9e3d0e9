"""Custom state plus a tool that both answers the model and writes a state field (``ToolResult``).

Runs offline: a scripted model asks for ``select_city`` and then answers, so the script shows the whole loop
(model -> tool -> model) and the state field the tool set.
"""

from __future__ import annotations

from typing import Any

from windowkeeper.core.graph import Agent, StateGraph, ToolNode
from windowkeeper.core.state import AgentState, Message, ToolCallBlock
from windowkeeper.core.state.tool_result import ToolResult
from windowkeeper.llm import ScriptedClient
from windowkeeper.utils.constants import END


class MyState(AgentState):
    user_id: str = ""
    session_data: dict[str, Any] = {}
    selected_city: str = ""


def select_city(city: str) -> ToolResult:
    """Make ``city`` the city the rest of the workflow uses.

    Args:
        city: Name of the city to select.
    """
    return ToolResult(message=f"City updated to '{city}'.", state={"selected_city": city})


def route(state: MyState) -> str:
    return "TOOL" if state.context[-1].tool_call_blocks() else END


def build(client: ScriptedClient) -> StateGraph:
    tools = ToolNode([select_city])
    graph = StateGraph(MyState)
    graph.add_node("MAIN", Agent(client=client, system_prompt="You plan trips.", tool_node=tools))
    graph.add_node("TOOL", tools)
    graph.add_conditional_edges("MAIN", route, {"TOOL": "TOOL", END: END})
    graph.add_edge("TOOL", "MAIN")
    graph.set_entry_point("MAIN")
    return graph


if __name__ == "__main__":
    model = ScriptedClient(
        [
            Message(
                role="assistant",
                content=[ToolCallBlock(id="call_1", name="select_city", args={"city": "Lisbon"})],
            ),
            "Lisbon it is.",
        ],
    )
    result = build(model).compile().invoke(
        {"messages": [Message.text_message("Let's go to Lisbon.")], "user_id": "u-42"},
        config={"thread_id": "trip"},
    )
    state = result["state"]
    print(state.user_id, state.selected_city, result["messages"][-1].text())
