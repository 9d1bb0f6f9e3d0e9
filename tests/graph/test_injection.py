"""A node receives its own graph's context manager through ``Inject[...]``, never another graph's."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from injectq import Inject, InjectQ

from windowkeeper import AgentState, GraphCompileError, Message
from windowkeeper.context import BaseContextManager, MessageContextManager
from windowkeeper.graph import END, CompiledGraph, InMemoryCheckpointer, StateGraph, ToolNode
from windowkeeper.graph.checkpointer import BaseCheckpointer


class Tagged(BaseContextManager[AgentState]):
    def __init__(self, tag: str) -> None:
        self.tag = tag

    def trim_context(self, state: AgentState) -> AgentState:
        return state

    async def atrim_context(self, state: AgentState) -> AgentState:
        return state


def _single(fn: Any, manager: Any = None, **compile_kw: Any) -> CompiledGraph:
    graph = StateGraph(context_manager=manager)
    graph.add_node("node", fn)
    graph.add_edge("node", END)
    graph.set_entry_point("node")
    return graph.compile(**compile_kw)


async def test_two_graphs_see_only_their_own_manager_even_concurrently() -> None:
    seen: list[tuple[str, str | None]] = []

    async def node(
        state: AgentState,
        config: dict[str, Any],
        ctx_mgr: BaseContextManager | None = Inject[BaseContextManager],
    ) -> None:
        await asyncio.sleep(0.005)
        seen.append((config["thread_id"], getattr(ctx_mgr, "tag", None)))

    first = _single(node, Tagged("first"))
    second = _single(node, Tagged("second"))
    bare = _single(node)
    await asyncio.gather(
        *(
            g.ainvoke({"messages": []}, {"thread_id": f"{name}-{i}"})
            for i in range(3)
            for name, g in (("first", first), ("second", second), ("bare", bare))
        ),
    )
    assert sorted(seen) == sorted(
        [(f"first-{i}", "first") for i in range(3)]
        + [(f"second-{i}", "second") for i in range(3)]
        + [(f"bare-{i}", None) for i in range(3)],
    )


def test_injectq_global_container_is_never_consulted() -> None:
    container = InjectQ.get_instance()
    decoy = Tagged("global")
    container.bind(BaseContextManager, decoy)
    got: list[object] = []

    def node(state: AgentState, ctx_mgr: BaseContextManager | None = Inject[BaseContextManager]) -> None:
        got.append(ctx_mgr)

    _single(node).invoke({"messages": []})
    mine = Tagged("mine")
    _single(node, mine).invoke({"messages": []})
    assert got == [None, mine]


def test_other_graph_objects_are_injectable_and_missing_ones_fail_at_compile() -> None:
    got: dict[str, Any] = {}
    saver = InMemoryCheckpointer()

    def node(
        state: AgentState,
        saver_: BaseCheckpointer = Inject[BaseCheckpointer],
        graph: CompiledGraph = Inject[CompiledGraph],
    ) -> None:
        got.update(saver=saver_, graph=graph)

    app = _single(node, checkpointer=saver)
    app.invoke({"messages": []})
    assert got == {"saver": saver, "graph": app}

    def needs_manager(state: AgentState, mgr: BaseContextManager = Inject[BaseContextManager]) -> None:
        return None

    with pytest.raises(GraphCompileError, match=r"node 'node': parameter 'mgr' asks for Inject\[BaseContextManager\]"):
        _single(needs_manager)


def test_tools_receive_injected_manager_hidden_from_the_schema() -> None:
    seen: list[object] = []

    def remember(fact: str, mgr: BaseContextManager | None = Inject[BaseContextManager]) -> str:
        """Store a fact."""
        seen.append(mgr)
        return "ok"

    tools = ToolNode([remember])
    assert set(tools.tool_specs()[0]["parameters"]["properties"]) == {"fact"}
    manager = MessageContextManager(max_messages=3)
    graph = StateGraph(context_manager=manager)
    graph.add_node("tools", tools)
    graph.set_entry_point("tools")
    app = graph.compile(checkpointer=InMemoryCheckpointer())
    from windowkeeper import ToolCallBlock

    state = AgentState(
        context=[
            Message.text_message("hi", message_id="u"),
            Message(role="assistant", content=[ToolCallBlock(id="c", name="remember", args={"fact": "x"})]),
        ]
    )
    app.checkpointer.put("t", state)
    app.invoke(None, {"thread_id": "t"})
    assert seen == [manager]
