"""Running compiled graphs: node return shapes, routing, limits, sync/async entry points, streaming, interrupts."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from windowkeeper import (
    AgentState,
    ConfigurationError,
    ExecutionStatus,
    GraphError,
    Message,
    RecursionLimitError,
    TokenUsages,
    ToolResult,
)
from windowkeeper.graph import END, CompiledGraph, GraphEvent, InMemoryCheckpointer, StateGraph


class MyState(AgentState):
    user_id: str = ""
    counter: int = 0
    notes: list[str] = []


def _msg(text: str, mid: str, role: str = "assistant", **kw: Any) -> Message:
    return Message.text_message(text, role=role, message_id=mid, **kw)  # type: ignore[arg-type]


def _chain(*nodes: tuple[str, Any], state: Any = None, **compile_kw: Any) -> CompiledGraph:
    graph = StateGraph(state)
    for name, fn in nodes:
        graph.add_node(name, fn)
    names = [n for n, _ in nodes]
    graph.set_entry_point(names[0])
    for a, b in zip(names, [*names[1:], END], strict=True):
        graph.add_edge(a, b)
    return graph.compile(**compile_kw)


def test_every_return_shape_is_merged() -> None:
    def returns_message(state: MyState) -> Message:
        return _msg("one", "a1")

    async def returns_list(state: MyState) -> list[Message]:
        return [_msg("two", "a2"), _msg("three", "a3")]

    def returns_tool_result(state: MyState) -> ToolResult:
        return ToolResult(message="four", state={"user_id": "u-9"})

    def returns_dict(state: MyState, config: dict[str, Any]) -> dict[str, Any]:
        return {"counter": state.counter + 1, "notes": [config["thread_id"]], "messages": [_msg("five", "a5")]}

    def returns_state(state: MyState) -> MyState:
        state.counter += 10
        return state

    def returns_none(state: MyState) -> None:
        return None

    app = _chain(
        ("M", returns_message),
        ("L", returns_list),
        ("T", returns_tool_result),
        ("D", returns_dict),
        ("S", returns_state),
        ("N", returns_none),
        state=MyState,
    )
    user = _msg("go", "u1", role="user")
    result = app.invoke({"messages": [user], "user_id": "u-1"}, config={"thread_id": "t-shapes"})
    texts = [m.text() for m in result["messages"]]
    assert texts == ["go", "one", "two", "three", "four", "five"]
    assert [m.message_id for m in result["messages"]][:5] == ["u1", "a1", "a2", "a3", result["messages"][4].message_id]
    state = result["state"]
    assert isinstance(state, MyState)
    assert state.user_id == "u-9"
    assert state.counter == 11
    assert state.notes == ["t-shapes"]
    assert result["thread_id"] == "t-shapes"
    assert result["status"] == "completed"
    assert state.execution_meta.step == 6
    assert state.execution_meta.current_node == "N"


def test_bad_return_and_bad_field_name_the_node() -> None:
    app = _chain(("X", lambda state: 42))
    with pytest.raises(GraphError, match=r"node 'X' returned int"):
        app.invoke({"messages": []})
    app = _chain(("Y", lambda state: {"nope": 1}))
    with pytest.raises(GraphError, match=r"node 'Y' updated unknown state field 'nope'"):
        app.invoke({"messages": []})
    with pytest.raises(ConfigurationError, match=r"unknown state field 'user'"):
        _chain(("Z", lambda state: None)).invoke({"messages": [], "user": "x"})


def test_conditional_routing_and_path_map_errors() -> None:
    def count(state: MyState) -> dict[str, int]:
        return {"counter": state.counter + 1}

    async def route(state: MyState, config: dict[str, Any]) -> str:
        return "again" if state.counter < 3 else "done"

    graph = StateGraph(MyState)
    graph.add_node("count", count)
    graph.add_conditional_edges("count", route, {"again": "count", "done": END})
    graph.set_entry_point("count")
    result = graph.compile().invoke({"messages": []})
    assert result["state"].counter == 3

    bad = StateGraph(MyState)
    bad.add_node("count", count)
    bad.add_conditional_edges("count", lambda s: "elsewhere", {"again": "count"})
    bad.set_entry_point("count")
    with pytest.raises(GraphError, match=r"condition of node 'count' returned 'elsewhere'"):
        bad.compile().invoke({"messages": []})


def test_recursion_limit_names_limit_and_path() -> None:
    graph = StateGraph()
    graph.add_node("think", lambda state: None)
    graph.add_node("act", lambda state: None)
    graph.add_edge("think", "act")
    graph.add_edge("act", "think")
    graph.set_entry_point("think")
    app = graph.compile()
    with pytest.raises(RecursionLimitError) as info:
        app.invoke({"messages": []}, config={"recursion_limit": 5})
    err = info.value
    assert err.limit == 5
    assert err.path == ["think", "act", "think", "act", "think", "act"]
    assert "recursion limit of 5 steps" in str(err)
    assert "think -> act -> think -> act -> think -> act" in str(err)
    with pytest.raises(ConfigurationError, match="recursion_limit"):
        app.invoke({"messages": []}, config={"recursion_limit": 0})


async def test_sync_invoke_inside_a_running_loop_points_to_ainvoke() -> None:
    app = _chain(("A", lambda state: _msg("x", "x1")))
    with pytest.raises(RuntimeError, match=r"await graph.ainvoke"):
        app.invoke({"messages": []})
    with pytest.raises(RuntimeError, match=r"astream"):
        next(iter(app.stream({"messages": []})))
    result = await app.ainvoke({"messages": []})
    assert result["messages"][-1].message_id == "x1"


def test_sync_and_async_nodes_and_usage_totals() -> None:
    def first(state: AgentState) -> Message:
        return _msg("a", "m1", usages=TokenUsages(prompt_tokens=10, completion_tokens=2, total_tokens=12))

    async def second(state: AgentState) -> Message:
        await asyncio.sleep(0)
        return _msg("b", "m2", usages=TokenUsages(prompt_tokens=20, completion_tokens=3, total_tokens=23))

    result = _chain(("first", first), ("second", second)).invoke({"messages": []})
    usage = result["usage"]
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (30, 5, 35)


def test_stream_yields_one_event_per_node_then_end() -> None:
    app = _chain(("A", lambda s: _msg("a", "ma")), ("B", lambda s: [_msg("b1", "mb1"), _msg("b2", "mb2")]))
    events = list(app.stream({"messages": [_msg("hi", "u", role="user")]}, config={"thread_id": "s"}))
    assert [(e.event, e.node) for e in events] == [("node", "A"), ("node", "B"), ("end", None)]
    assert [m.message_id for m in events[1].messages] == ["mb1", "mb2"]
    assert all(isinstance(e, GraphEvent) for e in events)
    assert [m.message_id for m in events[-1].result["messages"]] == ["u", "ma", "mb1", "mb2"]  # type: ignore[index]
    messages = list(app.stream({"messages": []}, stream_mode="messages"))
    assert [m.message_id for m in messages] == ["ma", "mb1", "mb2"]


async def test_astream_messages_mode() -> None:
    app = _chain(("A", lambda s: _msg("a", "ma")))
    seen = [m.message_id async for m in app.astream({"messages": []}, stream_mode="messages")]
    assert seen == ["ma"]


def test_state_template_instance_starts_each_thread() -> None:
    template = MyState(user_id="default-user", notes=["seed"])
    app = _chain(("A", lambda s: {"notes": [*s.notes, "run"]}), state=template)
    first = app.invoke({"messages": []}, config={"thread_id": "a"})
    second = app.invoke({"messages": []}, config={"thread_id": "b"})
    assert first["state"].notes == ["seed", "run"] and second["state"].notes == ["seed", "run"]
    assert template.notes == ["seed"]


def test_interrupt_before_and_resume() -> None:
    calls: list[str] = []

    def plan(state: AgentState) -> Message:
        calls.append("plan")
        return _msg("plan ready", f"p{len(calls)}")

    def act(state: AgentState) -> Message:
        calls.append("act")
        return _msg("done", "act-1")

    saver = InMemoryCheckpointer()
    app = _chain(("plan", plan), ("act", act), checkpointer=saver, interrupt_before=["act"])
    cfg = {"thread_id": "hitl"}
    paused = app.invoke({"messages": [_msg("please", "u1", role="user")]}, config=cfg)
    assert paused["interrupted"] == "act"
    assert paused["status"] == ExecutionStatus.INTERRUPTED_BEFORE.value
    assert calls == ["plan"]
    stored = saver.get_state("hitl")
    assert stored is not None and stored.execution_meta.interrupted_node == "act"
    resumed = app.invoke({"messages": [_msg("approved", "u2", role="user")]}, config=cfg)
    assert calls == ["plan", "act"]
    assert resumed["status"] == "completed" and resumed["interrupted"] is None
    assert [m.message_id for m in resumed["messages"]] == ["u2", "act-1"]
    assert [m.message_id for m in saver.get_messages("hitl")] == ["u1", "p1", "u2", "act-1"]


def test_interrupt_after_resumes_at_the_next_node() -> None:
    calls: list[str] = []
    saver = InMemoryCheckpointer()
    app = _chain(
        ("a", lambda s: calls.append("a")),
        ("b", lambda s: calls.append("b")),
        checkpointer=saver,
        interrupt_after=["a"],
    )
    first = app.invoke({"messages": []}, config={"thread_id": "ia"})
    assert first["interrupted"] == "a" and first["status"] == "interrupted_after" and calls == ["a"]
    app.invoke(None, config={"thread_id": "ia"})
    assert calls == ["a", "b"]
    assert saver.get_state("ia").execution_meta.status == ExecutionStatus.COMPLETED  # type: ignore[union-attr]


def test_node_error_persists_state_and_messages_then_reraises() -> None:
    def boom(state: AgentState) -> None:
        raise ValueError("disk on fire")

    saver = InMemoryCheckpointer()
    app = _chain(("ok", lambda s: _msg("fine", "ok-1")), ("boom", boom), checkpointer=saver)
    with pytest.raises(ValueError, match="disk on fire"):
        app.invoke({"messages": [_msg("q", "u1", role="user")]}, config={"thread_id": "err"})
    stored = saver.get_state("err")
    assert stored is not None
    assert stored.execution_meta.status == ExecutionStatus.ERROR
    assert stored.execution_meta.error == "ValueError: disk on fire"
    assert [m.message_id for m in saver.get_messages("err")] == ["u1", "ok-1"]


def test_stop_request_from_a_node_ends_the_run_and_persists() -> None:
    def first(state: AgentState) -> Message:
        state.request_stop()
        return _msg("stopping", "s1")

    saver = InMemoryCheckpointer()
    app = _chain(("first", first), ("never", lambda s: _msg("no", "n1")), checkpointer=saver)
    result = app.invoke({"messages": []}, config={"thread_id": "stop"})
    assert result["stopped"] is True
    assert [m.message_id for m in result["messages"]] == ["s1"]
    assert [m.message_id for m in saver.get_messages("stop")] == ["s1"]
    assert app.stop({"thread_id": "stop"}) is False


def test_thread_state_continues_across_invocations() -> None:
    saver = InMemoryCheckpointer()
    app = _chain(("echo", lambda s: _msg(f"seen {len(s.context)}", f"e{len(s.context)}")), checkpointer=saver)
    app.invoke({"messages": [_msg("one", "u1", role="user")]}, config={"thread_id": "c"})
    second = app.invoke({"messages": [_msg("two", "u2", role="user")]}, config={"thread_id": "c"})
    assert second["messages"][-1].text() == "seen 3"
    assert [m.message_id for m in second["state"].context] == ["u1", "e1", "u2", "e3"]
    other = app.invoke({"messages": [_msg("x", "u9", role="user")]}, config={"thread_id": "other"})
    assert other["messages"][-1].text() == "seen 1"
    assert app.get_state({"thread_id": "c"}).context[-1].message_id == "e3"  # type: ignore[union-attr]


async def test_concurrent_runs_on_one_thread_are_serialized() -> None:
    saver = InMemoryCheckpointer()

    async def slow(state: AgentState) -> Message:
        await asyncio.sleep(0.01)
        return _msg(f"n={len(state.context)}", f"r{len(state.context)}")

    app = _chain(("slow", slow), checkpointer=saver)
    cfg = {"thread_id": "busy"}
    await asyncio.gather(*(app.ainvoke({"messages": [_msg("q", f"u{i}", role="user")]}, cfg) for i in range(4)))
    log = await saver.aget_messages("busy")
    assert len(log) == 8
    assert [m.text() for m in log if m.role == "assistant"] == ["n=1", "n=3", "n=5", "n=7"]
