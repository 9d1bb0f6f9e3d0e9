"""`group_units_as` hands each unit's fields to a maker: the same units `group_units` builds, in order.

The grouping reads call ids from the content's call blocks in one pass; a message carrying only provider-native
``tools_calls`` dicts still goes through `Message.tool_call_ids`, which parses them.
"""

from __future__ import annotations

from windowkeeper import Message, ToolCallBlock, ToolResultBlock
from windowkeeper.units import group_units, group_units_as


def _fields(
    kind: str, start: int, end: int, messages: tuple[Message, ...], calls: tuple[str, ...], answered: tuple[str, ...]
) -> tuple[object, ...]:
    return (kind, start, end, messages, calls, answered)


def _history() -> list[Message]:
    native = Message(
        role="assistant",
        content=[],
        tools_calls=[{"id": "n1", "function": {"name": "f", "arguments": "{}"}}, {"id": "n2", "name": "g", "args": {}}],
        message_id="native",
    )
    return [
        Message.text_message("sys", role="system", message_id="s"),
        Message.text_message("q", message_id="u"),
        Message(role="assistant", content=[ToolCallBlock(id="a", name="f"), ToolCallBlock(id="b", name="f")]),
        Message.tool_message([ToolResultBlock(call_id="a", output="1")], message_id="ra"),
        Message.tool_message([ToolResultBlock(call_id="b", output="2")], message_id="rb"),
        Message.tool_message([ToolResultBlock(call_id="zz", output="?")], message_id="orphan"),
        native,
        Message.tool_message([ToolResultBlock(call_id="n1", output="x")], message_id="rn1"),
        Message.tool_message([ToolResultBlock(call_id="n2", output="y")], message_id="rn2"),
        Message(role="assistant", content=[ToolCallBlock(id="c", name="f")], message_id="mid"),
        Message.text_message("no answer came", message_id="u2"),
        Message.text_message("done", role="assistant", message_id="f"),
        Message(role="assistant", content=[ToolCallBlock(id="d", name="f"), ToolCallBlock(id="e", name="f")]),
        Message.tool_message([ToolResultBlock(call_id="d", output="3")], message_id="rd"),
    ]


def test_same_units_as_group_units() -> None:
    history = _history()
    built = [(u.kind, u.start, u.end, u.messages, u.call_ids, u.answered_ids) for u in group_units(history)]
    assert group_units_as(history, _fields) == built
    assert [b[0] for b in built] == [
        "system",
        "user",
        "tool_turn",
        "orphan",
        "tool_turn",
        "incomplete",
        "user",
        "assistant",
        "pending",
    ]


def test_native_tool_calls_are_read_when_no_call_block_is_present() -> None:
    history = _history()
    native = next(u for u in group_units(history) if u.messages[0].message_id == "native")
    assert native.call_ids == ("n1", "n2")
    assert native.answered_ids == ("n1", "n2")
