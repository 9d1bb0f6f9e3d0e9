"""Threads of conversation: `compile()` keeps them in memory by default, a ``thread_id`` means the same thing on
every checkpointer, and synchronous user code (nodes, conditions, tools) runs off the event loop."""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from injectq import Inject

from windowkeeper import AgentState, Message
from windowkeeper.blocks import ToolCallBlock
from windowkeeper.context import MessageContextManager
from windowkeeper.context.base import BaseContextManager
from windowkeeper.graph import (
    END,
    BaseCheckpointer,
    InMemoryCheckpointer,
    PostgresCheckpointer,
    RedisCheckpointer,
    SQLiteCheckpointer,
    StateGraph,
    ToolNode,
)
from windowkeeper.graph.checkpointer import Checkpointer


def _user(text: str, mid: str) -> Message:
    return Message.text_message(text, message_id=mid)


def _echo(state: AgentState) -> Message:
    """Answers with the number of user turns it can see, so a test can tell whether history was kept."""
    users = sum(1 for m in state.context if m.role == "user")
    return Message.text_message(f"seen {users}", role="assistant")


def _echo_graph() -> StateGraph:
    graph = StateGraph()
    graph.add_node("echo", _echo)
    graph.set_entry_point("echo")
    graph.add_edge("echo", END)
    return graph


# -- compile() with no checkpointer keeps threads in memory --------------------------------------------------------


def test_compile_without_a_checkpointer_keeps_each_thread_in_memory() -> None:
    app = _echo_graph().compile()
    assert isinstance(app.checkpointer, InMemoryCheckpointer)
    first = app.invoke({"messages": [_user("one", "u1")]}, {"thread_id": "a"})
    second = app.invoke({"messages": [_user("two", "u2")]}, {"thread_id": "a"})
    other = app.invoke({"messages": [_user("else", "u3")]}, {"thread_id": "b"})
    assert first["messages"][-1].text() == "seen 1"
    assert second["messages"][-1].text() == "seen 2"
    assert other["messages"][-1].text() == "seen 1"
    stored = app.get_state({"thread_id": "a"})
    assert stored is not None and [m.text() for m in stored.context] == ["one", "seen 1", "two", "seen 2"]
    assert app.get_state({"thread_id": "never-run"}) is None
    # each compiled graph has its own memory: a second compile starts empty
    assert _echo_graph().compile().get_state({"thread_id": "a"}) is None


# -- one thread_id, the same behaviour on every checkpointer -------------------------------------------------------


def _prefix() -> str:
    return f"wkt_{uuid.uuid4().hex[:12]}"


@pytest.fixture(params=["default", "memory", "sqlite", "postgres", "redis"])
async def checkpointer(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[BaseCheckpointer | None]:
    kind = request.param
    if kind == "default":
        yield None
        return
    saver: Checkpointer
    if kind == "memory":
        saver = InMemoryCheckpointer()
    elif kind == "sqlite":
        saver = SQLiteCheckpointer(tmp_path / "threads.db")
    elif kind == "postgres":
        saver = PostgresCheckpointer(request.getfixturevalue("postgres_server"), prefix=_prefix())
    else:
        saver = RedisCheckpointer(request.getfixturevalue("redis_server"), prefix=_prefix())
    try:
        yield saver
    finally:
        drop = getattr(saver.store, "drop", None)
        if drop is not None:
            await drop()
        await saver.aclose()


async def test_thread_id_continues_a_conversation_on_every_checkpointer(checkpointer: BaseCheckpointer | None) -> None:
    app = _echo_graph().compile(checkpointer=checkpointer)
    await app.ainvoke({"messages": [_user("one", "u1")]}, {"thread_id": "t-1"})
    again = await app.ainvoke({"messages": [_user("two", "u2")]}, {"configurable": {"thread_id": "t-1"}})
    fresh = await app.ainvoke({"messages": [_user("solo", "u9")]}, {"thread_id": "t-2"})
    assert [m.text() for m in again["state"].context] == ["one", "seen 1", "two", "seen 2"]
    assert [m.text() for m in fresh["state"].context] == ["solo", "seen 1"]
    assert again["thread_id"] == "t-1" and fresh["thread_id"] == "t-2"
    stored = await app.aget_state({"thread_id": "t-1"})
    assert stored is not None and [m.message_id for m in stored.context][::2] == ["u1", "u2"]
    log = await app.checkpointer.aget_messages("t-1")
    assert [m.text() for m in log] == ["one", "seen 1", "two", "seen 2"]


async def test_the_stored_view_is_trimmed_and_the_log_is_whole_on_the_default_checkpointer() -> None:
    graph = StateGraph(context_manager=MessageContextManager(max_messages=1))
    graph.add_node("echo", _echo)
    graph.set_entry_point("echo")
    app = graph.compile()
    for i in range(3):
        await app.ainvoke({"messages": [_user(f"q{i}", f"u{i}")]}, {"thread_id": "trim"})
    stored = await app.aget_state({"thread_id": "trim"})
    assert stored is not None and [m.text() for m in stored.context] == ["q2", "seen 2"]
    assert len(await app.checkpointer.aget_messages("trim")) == 6


# -- synchronous user code runs in a worker thread -----------------------------------------------------------------

SLOW = 0.3


def _slow_graph(node: Callable[..., Any]) -> StateGraph:
    graph = StateGraph()
    graph.add_node("slow", node)
    graph.set_entry_point("slow")
    return graph


async def test_four_threads_with_a_slow_sync_node_run_concurrently() -> None:
    def slow(state: AgentState) -> Message:
        time.sleep(SLOW)  # a blocking call, as user code makes them
        return Message.text_message("done", role="assistant")

    app = _slow_graph(slow).compile()
    await app.ainvoke({"messages": [_user("warm-up", "w")]}, {"thread_id": "warm"})  # executor threads started
    started = time.perf_counter()
    results = await asyncio.gather(
        *(app.ainvoke({"messages": [_user("go", f"u{i}")]}, {"thread_id": f"t{i}"}) for i in range(4)),
    )
    elapsed = time.perf_counter() - started
    assert [r["messages"][-1].text() for r in results] == ["done"] * 4
    assert elapsed < 0.8, f"4 x {SLOW}s sync nodes took {elapsed:.2f}s: they ran one after another on the loop"


async def test_sync_node_and_condition_run_off_the_loop_with_context_and_injection() -> None:
    request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="unset")
    loop_thread = threading.get_ident()
    seen: dict[str, Any] = {}
    manager: MessageContextManager[AgentState] = MessageContextManager(max_messages=50)

    def node(
        state: AgentState,
        ctx_mgr: BaseContextManager[Any] | None = Inject[BaseContextManager],  # type: ignore[assignment,type-arg]
    ) -> Message:
        seen["node_thread"] = threading.get_ident()
        seen["node_request"] = request_id.get()
        seen["manager"] = ctx_mgr
        return Message.text_message("ok", role="assistant")

    def route(state: AgentState) -> str:
        seen["route_thread"] = threading.get_ident()
        seen["route_request"] = request_id.get()
        return END

    graph = StateGraph(context_manager=manager)
    graph.add_node("node", node)
    graph.set_entry_point("node")
    graph.add_conditional_edges("node", route)
    request_id.set("req-42")
    await graph.compile().ainvoke({"messages": [_user("hi", "u1")]}, {"thread_id": "ctx"})
    assert seen["node_thread"] != loop_thread and seen["route_thread"] != loop_thread
    assert seen["node_request"] == seen["route_request"] == "req-42"
    assert seen["manager"] is manager


async def test_a_sync_node_can_call_a_sync_api_that_refuses_to_run_inside_the_loop() -> None:
    """In the worker thread no loop is running, so the sync trim of a manager works from a sync node."""
    from windowkeeper.context import SummaryContextManager

    manager: SummaryContextManager[AgentState] = SummaryContextManager(
        summarizer="extractive", max_messages=2, keep_recent=1
    )

    def node(state: AgentState) -> AgentState:
        trimmed: AgentState = manager.trim_context(state)
        return trimmed

    graph = StateGraph()
    graph.add_node("trim", node)
    graph.set_entry_point("trim")
    turns = [_user(f"My name is Sam and I live in Oslo, note {i}.", f"u{i}") for i in range(4)]
    result = await graph.compile().ainvoke({"messages": turns}, {"thread_id": "trim"})
    assert [m.message_id for m in result["state"].context] == ["u3"]
    assert result["state"].context_summary


async def test_sync_tools_run_concurrently_with_the_callers_context() -> None:
    tenant: contextvars.ContextVar[str] = contextvars.ContextVar("tenant", default="none")
    threads: set[int] = set()

    def lookup(city: str) -> str:
        """Look a city up.

        Args:
            city: the city
        """
        threads.add(threading.get_ident())
        time.sleep(SLOW)
        return f"{city} for {tenant.get()}"

    calls = [ToolCallBlock(id=f"c{i}", name="lookup", args={"city": f"city{i}"}) for i in range(4)]
    state = AgentState(context=[_user("look", "u1"), Message(role="assistant", content=list(calls))])
    graph = StateGraph(state)
    graph.add_node("tools", ToolNode([lookup]))
    graph.set_entry_point("tools")
    tenant.set("acme")
    started = time.perf_counter()
    result = await graph.compile().ainvoke(None, {"thread_id": "tools"})
    elapsed = time.perf_counter() - started
    outputs = [m.tool_result_blocks()[0].output for m in result["messages"]]
    assert outputs == [f"city{i} for acme" for i in range(4)]
    assert threading.get_ident() not in threads
    assert elapsed < 0.8, f"4 parallel {SLOW}s sync tools took {elapsed:.2f}s"
