"""ToolNode: schemas from signatures and docstrings, concurrent execution, error results, state updates."""

from __future__ import annotations

import asyncio
import enum
import threading
from typing import Any, Literal

import pytest
from pydantic import BaseModel

from windowkeeper import AgentState, ConfigurationError, Message, ToolCallBlock, ToolResult
from windowkeeper.graph import END, InMemoryCheckpointer, StateGraph, ToolNode, parse_docstring


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Point(BaseModel):
    x: float
    y: float


def get_weather(location: str, unit: Literal["c", "f"] = "c", days: int = 1, state: Any = None) -> str:
    """Get the forecast for a place.

    Uses the cached forecast when one is fresh.

    Args:
        location (str): City name, for
            example Tokyo.
        unit: Temperature unit.
        days: How many days ahead.

    Returns:
        The forecast text.
    """
    return f"{location}: sunny, {days}d, unit {unit}"


def paint(color: Color, where: Point, tags: list[str] | None = None) -> dict[str, Any]:
    """Paint a point.

    Parameters
    ----------
    color : Color
        Paint colour.
    where : Point
        Target position
        in pixels.
    tags : list of str, optional
        Labels.
    """
    return {"color": color.value, "x": where.x, "tags": tags or []}


def test_schema_from_google_docstring_hides_runtime_parameters() -> None:
    spec = ToolNode([get_weather]).tool_specs()[0]
    assert spec["name"] == "get_weather"
    assert spec["description"] == "Get the forecast for a place.\n\nUses the cached forecast when one is fresh."
    params = spec["parameters"]
    assert params["type"] == "object"
    assert params["required"] == ["location"]
    assert set(params["properties"]) == {"location", "unit", "days"}
    assert params["properties"]["location"] == {"type": "string", "description": "City name, for example Tokyo."}
    assert params["properties"]["unit"] == {
        "type": "string",
        "enum": ["c", "f"],
        "default": "c",
        "description": "Temperature unit.",
    }
    assert params["properties"]["days"]["type"] == "integer"


def test_schema_from_numpy_docstring_with_enums_and_models() -> None:
    spec = ToolNode([paint]).tool_specs()[0]
    props = spec["parameters"]["properties"]
    assert spec["description"] == "Paint a point."
    assert props["where"]["description"] == "Target position in pixels."
    assert props["tags"]["description"] == "Labels."
    assert spec["parameters"]["required"] == ["color", "where"]
    assert "$defs" in spec["parameters"]
    assert spec["parameters"]["$defs"]["Color"]["enum"] == ["red", "blue"]


def test_sphinx_docstring_and_plain_docstring() -> None:
    doc = parse_docstring("Do it.\n\n:param a: the first\n    value\n:returns: nothing")
    assert doc.description == "Do it."
    assert doc.params == {"a": "the first value"}
    assert parse_docstring(None).params == {}


def test_bad_tool_definitions_fail_at_construction() -> None:
    with pytest.raises(ConfigurationError, match="unique"):
        ToolNode([get_weather, get_weather])
    with pytest.raises(ConfigurationError, match="not callable"):
        ToolNode([42])  # type: ignore[list-item]
    with pytest.raises(ConfigurationError, match="not usable"):
        ToolNode([lambda x: x])


def _calls_state(*calls: ToolCallBlock) -> AgentState:
    return AgentState(
        context=[
            Message.text_message("go", role="user", message_id="u1"),
            Message(role="assistant", content=list(calls), message_id="a1"),
        ],
    )


def _run(node: ToolNode, state: AgentState, **compile_kw: Any) -> dict[str, Any]:
    graph = StateGraph(type(state))
    graph.add_node("tools", node)
    graph.set_entry_point("tools")
    graph.add_edge("tools", END)
    app = graph.compile(checkpointer=InMemoryCheckpointer(), **compile_kw)
    checkpointer = app.checkpointer
    checkpointer.put("t", state)
    return app.invoke(None, config={"thread_id": "t"})


async def test_parallel_calls_run_concurrently_and_sync_tools_in_threads() -> None:
    both_started = asyncio.Event()
    started: list[str] = []
    loop_thread = threading.get_ident()
    threads: dict[str, int] = {}

    async def slow_a(tag: str) -> str:
        """A."""
        started.append(tag)
        if len(started) == 2:
            both_started.set()
        await asyncio.wait_for(both_started.wait(), timeout=2)
        return f"a:{tag}"

    def sync_b(tag: str) -> str:
        """B."""
        threads[tag] = threading.get_ident()
        return f"b:{tag}"

    node = ToolNode([slow_a, sync_b])
    state = _calls_state(
        ToolCallBlock(id="c1", name="slow_a", args={"tag": "one"}),
        ToolCallBlock(id="c2", name="sync_b", args={"tag": "two"}),
        ToolCallBlock(id="c3", name="slow_a", args={"tag": "three"}),
    )
    graph = StateGraph()
    graph.add_node("tools", node)
    graph.set_entry_point("tools")
    app = graph.compile(checkpointer=InMemoryCheckpointer())
    await app.checkpointer.aput("p", state)
    result = await app.ainvoke(None, config={"thread_id": "p"})
    blocks = [m.tool_result_blocks()[0] for m in result["messages"]]
    assert [(b.call_id, b.output, b.status, b.name) for b in blocks] == [
        ("c1", "a:one", "completed", "slow_a"),
        ("c2", "b:two", "completed", "sync_b"),
        ("c3", "a:three", "completed", "slow_a"),
    ]
    assert threads["two"] != loop_thread
    assert all(m.role == "tool" for m in result["messages"])


def test_errors_become_error_results_never_crashes() -> None:
    def divide(a: int, b: int) -> float:
        """Divide a by b."""
        return a / b

    result = _run(
        ToolNode([divide]),
        _calls_state(
            ToolCallBlock(id="ok", name="divide", args={"a": 6, "b": 3}),
            ToolCallBlock(id="zero", name="divide", args={"a": 1, "b": 0}),
            ToolCallBlock(id="bad", name="divide", args={"a": "six"}),
            ToolCallBlock(id="extra", name="divide", args={"a": 1, "b": 1, "c": 2}),
            ToolCallBlock(id="ghost", name="missing_tool", args={}),
        ),
    )
    out = {m.tool_result_blocks()[0].call_id: m.tool_result_blocks()[0] for m in result["messages"]}
    assert out["ok"].status == "completed" and out["ok"].output == 2.0
    assert out["zero"].status == "error" and out["zero"].output == "ZeroDivisionError: division by zero"
    assert out["bad"].status == "error"
    assert out["bad"].output == (
        "invalid arguments for tool 'divide': a: Input should be a valid integer, unable to parse string as an "
        "integer; b: Field required"
    )
    assert out["extra"].output == "invalid arguments for tool 'divide': c: Extra inputs are not permitted"
    assert out["ghost"].output == "unknown tool 'missing_tool'; available tools: divide"
    assert list(out) == ["ok", "zero", "bad", "extra", "ghost"]


class CityState(AgentState):
    selected_city: str = ""


def test_tool_result_updates_state_and_runtime_parameters_are_injected() -> None:
    seen: dict[str, Any] = {}

    def select_city(city: str) -> ToolResult:
        """Set the selected city."""
        return ToolResult(message=f"City updated to '{city}'.", state={"selected_city": city})

    def inspect_run(note: str, state: CityState, config: dict[str, Any], tool_call_id: str) -> str:
        """Look at the run."""
        seen.update(note=note, thread=config["thread_id"], call=tool_call_id, n=len(state.context))
        return "ok"

    def bad_update() -> ToolResult:
        """Update a field that does not exist."""
        return ToolResult(message="x", state={"not_a_field": 1})

    node = ToolNode([select_city, inspect_run, bad_update])
    assert set(node.tool_specs()[1]["parameters"]["properties"]) == {"note"}
    state = CityState(
        context=_calls_state(
            ToolCallBlock(id="c1", name="select_city", args={"city": "Lisbon"}),
            ToolCallBlock(id="c2", name="inspect_run", args={"note": "hello"}),
            ToolCallBlock(id="c3", name="bad_update", args={}),
        ).context
    )
    result = _run(node, state)
    assert result["state"].selected_city == "Lisbon"
    assert seen == {"note": "hello", "thread": "t", "call": "c2", "n": 2}
    blocks = [m.tool_result_blocks()[0] for m in result["messages"]]
    assert blocks[0].output == "City updated to 'Lisbon'."
    assert blocks[2].status == "error" and "not_a_field" in str(blocks[2].output)


def test_only_unanswered_calls_of_the_last_assistant_message_run() -> None:
    ran: list[str] = []

    def tool(x: int) -> int:
        """Echo."""
        ran.append(str(x))
        return x

    state = _calls_state(
        ToolCallBlock(id="c1", name="tool", args={"x": 1}),
        ToolCallBlock(id="c2", name="tool", args={"x": 2}),
    )
    state.context.append(Message.tool_message([], message_id="t1"))
    from windowkeeper import ToolResultBlock

    state.context[-1] = Message.tool_message([ToolResultBlock(call_id="c1", output=1)], message_id="t1")
    result = _run(ToolNode([tool]), state)
    assert ran == ["2"]
    assert [m.tool_result_blocks()[0].call_id for m in result["messages"]] == ["c2"]
    plain = AgentState(context=[Message.text_message("hi", role="assistant")])
    assert _run(ToolNode([tool]), plain)["messages"] == []


def test_structured_outputs_are_json() -> None:
    result = _run(
        ToolNode([paint]),
        _calls_state(ToolCallBlock(id="c1", name="paint", args={"color": "red", "where": {"x": 1, "y": 2}})),
    )
    assert result["messages"][0].tool_result_blocks()[0].output == {"color": "red", "x": 1.0, "tags": []}
