"""`to_anthropic(cache_breakpoints=...)` marks the stable prefix with ``cache_control``, within Anthropic's limit."""

from __future__ import annotations

import pytest

from windowkeeper.blocks import ReasoningBlock, TextBlock, ToolCallBlock, ToolResultBlock
from windowkeeper.errors import FormatError
from windowkeeper.llm.formats import from_anthropic, to_anthropic
from windowkeeper.llm.formats.anthropic import CACHE_CONTROL, MAX_CACHE_BREAKPOINTS
from windowkeeper.messages import Message

MESSAGES = [
    Message.text_message("be brief", role="system"),
    Message.text_message("hi"),
    Message(
        role="assistant",
        content=[ReasoningBlock(text="hm", signature="sig"), ToolCallBlock(id="c1", name="f", args={})],
    ),
    Message.tool_message([ToolResultBlock(call_id="c1", output="42")]),
    Message(role="assistant", content=[TextBlock(text="done"), ReasoningBlock(text="after", signature="s2")]),
]


def _marked(messages: list[dict[str, object]]) -> list[tuple[int, int]]:
    return [
        (i, j)
        for i, m in enumerate(messages)
        for j, b in enumerate(m["content"])  # type: ignore[arg-type]
        if "cache_control" in b
    ]


def test_without_breakpoints_nothing_changes() -> None:
    system, messages = to_anthropic(MESSAGES)
    assert system == "be brief"
    assert _marked(messages) == []


def test_system_and_message_breakpoints() -> None:
    system, messages = to_anthropic(MESSAGES, cache_breakpoints=["system", 2, -1])
    assert system == [{"type": "text", "text": "be brief", "cache_control": CACHE_CONTROL}]
    # each marked message's last block carries the marker (thinking is written first, so it never is last)
    assert _marked(messages) == [(1, 1), (3, 1)]
    assert messages[1]["content"][1]["type"] == "tool_use"


def test_a_message_with_only_thinking_or_empty_text_gets_no_marker() -> None:
    only = [
        Message.text_message("hi"),
        Message(role="assistant", content=[ReasoningBlock(text="x", signature="s"), TextBlock(text="")]),
    ]
    _, messages = to_anthropic(only, cache_breakpoints=[1])
    assert _marked(messages) == []


def test_a_tool_result_merged_into_a_user_turn_is_marked_on_its_own_block() -> None:
    _, messages = to_anthropic(MESSAGES, cache_breakpoints=[3])
    assert _marked(messages) == [(2, 0)]
    assert messages[2]["content"][0]["type"] == "tool_result"


def test_marked_requests_read_back_the_same() -> None:
    system, messages = to_anthropic(MESSAGES, cache_breakpoints=["system", 1, 3, -1])
    back = from_anthropic(system, messages)
    assert [m.text() for m in back] == [m.text() for m in MESSAGES]


def test_more_than_four_breakpoints_or_bad_ones_are_refused() -> None:
    assert MAX_CACHE_BREAKPOINTS == 4
    with pytest.raises(FormatError, match="at most 4"):
        to_anthropic(MESSAGES, cache_breakpoints=["system", 1, 2, 3, 4])
    with pytest.raises(FormatError, match="cache_breakpoints\\[0\\]"):
        to_anthropic(MESSAGES, cache_breakpoints=[9])
    with pytest.raises(FormatError, match="must be a list"):
        to_anthropic(MESSAGES, cache_breakpoints="system")  # type: ignore[call-overload]
    # the same message twice is one breakpoint
    _, messages = to_anthropic(MESSAGES, cache_breakpoints=[1, -4, 1])
    assert len(_marked(messages)) == 1
