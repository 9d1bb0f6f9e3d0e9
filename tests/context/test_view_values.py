"""A view read back from the caller's own JSON is recognised by comparing laid-out values (`ViewValues`), and an
edit inside it is still seen: the laid-out comparison says "the same" only when `same_message` would."""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from windowkeeper.blocks import ImageBlock, MediaRef, ReasoningBlock, TextBlock, ToolCallBlock, ToolResultBlock
from windowkeeper.context._view_values import ViewValues, _typed
from windowkeeper.context.budget import TokenBudgetContextManager
from windowkeeper.messages import Message, same_message
from windowkeeper.state import AgentState, ExecMeta
from windowkeeper.testing.sessiongen import generate_session

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.floats(-2, 2, allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=8,
)


def _reloaded(messages: list[Message]) -> list[Message]:
    return [Message.model_validate_json(m.model_dump_json()) for m in messages]


def _turn(i: int, args: dict[str, Any], output: Any, *, native: bool = False) -> list[Message]:
    call = ToolCallBlock(id=f"call_{i}", name="lookup", args=args)
    calls = [{"id": f"call_{i}", "type": "function", "function": {"name": "lookup", "arguments": args}}]
    return [
        Message.text_message(f"question {i}", message_id=f"u{i}"),
        Message(
            message_id=f"a{i}",
            role="assistant",
            content=[ReasoningBlock(text="thinking"), call],
            tools_calls=calls if native else None,
        ),
        Message.tool_message([ToolResultBlock(call_id=f"call_{i}", output=output)], message_id=f"t{i}"),
    ]


@settings(max_examples=200, deadline=None)
@given(json_values, json_values, json_values, json_values, st.booleans())
def test_laid_out_values_say_same_only_when_same_message_does(
    args: Any, other_args: Any, output: Any, other_output: Any, native: bool
) -> None:
    mine = _turn(0, {"q": args}, output, native=native)
    theirs = _reloaded(_turn(0, {"q": other_args}, other_output, native=native))
    expected = all(map(same_message, mine, theirs))
    found = ViewValues.of(mine).matches(theirs)
    assert not found or expected
    # an unchanged copy is recognised here unless a value cannot be compared type for type (marshal refuses it)
    copy = _reloaded(mine)
    assert all(map(same_message, mine, copy))


def test_an_unchanged_copy_is_recognised_and_an_edit_of_any_kind_is_not() -> None:
    mine = [*_turn(0, {"n": 1, "x": 0.0}, "rows: 3"), *_turn(1, {"n": 2}, {"rows": [1, 2]}, native=True)]
    assert ViewValues.of(mine).matches(_reloaded(mine))
    edits = [
        lambda ms: ms[1].content.__setitem__(1, ToolCallBlock(id="call_0", name="lookup", args={"n": True, "x": 0.0})),
        lambda ms: ms[1].content.__setitem__(1, ToolCallBlock(id="call_0", name="lookup", args={"n": 1.0, "x": 0.0})),
        lambda ms: ms[1].content.__setitem__(1, ToolCallBlock(id="call_0", name="lookup", args={"n": 1, "x": -0.0})),
        lambda ms: ms[5].content.__setitem__(0, ToolResultBlock(call_id="call_1", output={"rows": [1, 2.0]})),
        lambda ms: ms[2].content.__setitem__(0, ToolResultBlock(call_id="call_0", output="rows: 4")),
        lambda ms: ms[0].content.__setitem__(0, TextBlock(text="question 0?")),
        lambda ms: setattr(ms[1], "reasoning", "more"),
        lambda ms: setattr(ms[4], "tools_calls", [{"id": "call_1", "function": {"name": "lookup", "arguments": {}}}]),
        lambda ms: ms[1].content.__setitem__(0, TextBlock(text="thinking")),
        lambda ms: ms[4].tools_calls[0]["function"].__setitem__("name", "search"),
    ]
    for edit in edits:
        theirs = _reloaded(mine)
        edit(theirs)
        assert not all(map(same_message, mine, theirs))
        assert not ViewValues.of(mine).matches(theirs)


def test_blocks_holding_models_are_left_to_same_message() -> None:
    image = Message(message_id="i1", role="user", content=[ImageBlock(media=MediaRef(url="https://x/y.png"))])
    assert not ViewValues.of([image]).matches(_reloaded([image]))
    assert same_message(image, _reloaded([image])[0])


def _manager() -> TokenBudgetContextManager[AgentState]:
    return TokenBudgetContextManager(1500, 300, keep_tool_results=1, recall=False)


def _session(turns: int) -> list[list[Message]]:
    return [_turn(i, {"item": i, "flag": True}, "\n".join(f"row {k} of {i}" for k in range(12))) for i in range(turns)]


def test_a_view_from_the_callers_json_is_managed_as_the_live_one() -> None:
    live, reloaded = _manager(), _manager()
    live_state = AgentState(execution_meta=ExecMeta(thread_id="t"))
    json_state = AgentState(execution_meta=ExecMeta(thread_id="t"))
    for turn in _session(30):
        live_state.context = [*live_state.context, *turn]
        live_state = live.trim_context(live_state)
        json_state = AgentState.model_validate_json(json_state.model_dump_json())
        json_state.context = [*json_state.context, *(m.model_copy() for m in turn)]
        json_state = reloaded.trim_context(json_state)
        assert [m.model_dump_json() for m in json_state.context] == [m.model_dump_json() for m in live_state.context]
        assert reloaded.last_metrics == live.last_metrics.model_copy(
            update={"duration_s": reloaded.last_metrics.duration_s}  # type: ignore[union-attr]
        )


def test_an_edit_inside_a_view_read_back_from_json_is_seen() -> None:
    manager = _manager()
    state = AgentState(execution_meta=ExecMeta(thread_id="t"))
    for turn in _session(12):
        state = AgentState.model_validate_json(state.model_dump_json())
        state.context = [*state.context, *turn]
        state = manager.trim_context(state)

    # the previous turn's call (its arguments, type for type) and result: inside the view, not at its end
    def retyped(m: Message) -> None:  # True becomes 1: equal in Python, not in JSON
        m.content[1] = ToolCallBlock(id=m.content[1].id, name="lookup", args={"item": 10, "flag": 1})

    def longer(m: Message) -> None:
        m.content[0] = ToolResultBlock(call_id=m.content[0].call_id, output="x " * 300)

    edits = ((-5, retyped), (-4, longer))
    for position, edit in edits:
        state = AgentState.model_validate_json(state.model_dump_json())
        edit(state.context[position])
        fresh = _manager()
        expected = fresh.trim_context(AgentState.model_validate_json(state.model_dump_json()))
        state = manager.trim_context(state)
        assert manager.last_metrics is not None and fresh.last_metrics is not None
        # counted from the edited message, as a manager that never saw the thread counts it
        assert manager.last_metrics.tokens_before == fresh.last_metrics.tokens_before
        assert [m.model_dump_json() for m in state.context] == [m.model_dump_json() for m in expected.context]


def test_native_tool_calls_of_text_alone_are_compared_too() -> None:
    # text-only tools_calls are picked for no type-for-type comparison, so `==` must still see them differ
    calls = [{"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": '{"q": "a"}'}}]
    mine = [Message(message_id="a1", role="assistant", content=[TextBlock(text="ok")], tools_calls=calls)]
    assert ViewValues.of(mine).matches(_reloaded(mine))
    theirs = _reloaded(mine)
    theirs[0].tools_calls = [{**calls[0], "function": {"name": "lookup", "arguments": '{"q": "b"}'}}]
    assert not same_message(mine[0], theirs[0])
    assert not ViewValues.of(mine).matches(theirs)


def _typed_walk(value: Any) -> bool:
    """`_typed` as first written: one call per item."""
    kind = type(value)
    if kind is str or value is None:
        return False
    if kind is list:
        return any(map(_typed_walk, value))
    if kind is dict:
        return not all(type(key) is str for key in value) or any(map(_typed_walk, value.values()))
    return True


@given(st.recursive(json_values, lambda inner: st.dictionaries(st.integers(0, 2) | st.text(max_size=2), inner)))
def test_typed_answers_as_the_walk_over_every_item(value: Any) -> None:
    assert _typed(value) == _typed_walk(value)


def _layout(values: ViewValues) -> tuple[Any, ...]:
    return tuple(getattr(values, name) for name in ViewValues.__slots__)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(json_values, json_values, st.booleans()), min_size=1, max_size=4), st.data())
def test_a_slice_of_a_layout_is_the_layout_of_those_messages(turns: list[Any], data: st.DataObject) -> None:
    messages = [
        m for i, (args, output, native) in enumerate(turns) for m in _turn(i, {"q": args}, output, native=native)
    ]
    whole = ViewValues.of(messages)
    start = data.draw(st.integers(0, len(messages)))
    stop = data.draw(st.integers(start, len(messages)))
    head = data.draw(st.integers(0, len(messages)))
    taken = ViewValues.of(messages[:head])
    taken.extend_from(whole, start, stop)
    assert _layout(taken) == _layout(ViewValues.of([*messages[:head], *messages[start:stop]]))


def test_after_a_compaction_the_layout_kept_is_that_of_the_view() -> None:
    # the keys of a thread read back from JSON take a compacted view's layout partly from the one before it
    manager = _manager()
    state = AgentState(execution_meta=ExecMeta(thread_id="t"))
    compactions = 0
    for turn in _session(40):
        state = AgentState.model_validate_json(state.model_dump_json())
        state.context = [*state.context, *turn]
        before = manager._tracks.peek("t")
        state = manager.trim_context(state)
        track = manager._tracks.peek("t")
        assert track is not None
        if before is not None and track.keys is not before.keys and track.keys.laid_out:
            compactions += 1
            assert track.keys.laid_out == len(track.view)
            assert _layout(track.keys.values) == _layout(ViewValues.of(track.view))
    assert compactions > 3


def test_the_callers_copies_are_not_kept_when_a_recall_message_is_placed() -> None:
    # the view remembered after a reload holds the manager's own messages, and so does the list as the caller gave
    # it when a recall message went into the view: the caller's copies are freed with its state, not in the next call
    messages = generate_session(61, seed=11).messages
    starts = [0, *(i for i, m in enumerate(messages) if m.role == "assistant" and i > 0)]
    manager = TokenBudgetContextManager(4000, 300)
    stored = AgentState(execution_meta=ExecMeta(thread_id="t")).model_dump_json()
    placed = 0
    for start, stop in itertools.pairwise(starts[:61]):
        state = AgentState.model_validate_json(stored)
        copies = {id(m) for m in state.context}
        before = manager._tracks.peek("t")
        incoming = state.context = [*state.context, *messages[start:stop]]
        state = manager.trim_context(state)
        track = manager._tracks.peek("t")
        assert track is not None
        if state.context is not incoming and before is not None and track.keys is before.keys:
            placed += 1  # a recall message placed, no compaction
            assert not any(id(m) in copies for m in (*track.view, *track.source))
        stored = state.model_dump_json()
    assert placed
