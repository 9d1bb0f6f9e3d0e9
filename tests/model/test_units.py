"""Units: one grouping for every strategy, and the provider validity check."""

from __future__ import annotations

import pytest

from windowkeeper import ConfigurationError, Message, ToolCallBlock, ToolResultBlock
from windowkeeper.units import flatten, group_units, is_valid, validate


def call(*ids: str) -> Message:
    return Message(
        role="assistant", content=[ToolCallBlock(id=i, name="f") for i in ids], message_id="a-" + "".join(ids)
    )


def result(cid: str) -> Message:
    return Message.tool_message([ToolResultBlock(call_id=cid, output="ok")], message_id="r-" + cid)


SYS = Message.text_message("sys", role="system", message_id="s")
USER = Message.text_message("q", message_id="u")
FINAL = Message.text_message("done", role="assistant", message_id="f")


def kinds(messages: list[Message]) -> list[tuple[str, int, int]]:
    return [(u.kind, u.start, u.end) for u in group_units(messages)]


def test_parallel_calls_form_one_unit() -> None:
    msgs = [SYS, USER, call("a", "b"), result("b"), result("a"), FINAL]
    assert kinds(msgs) == [("system", 0, 1), ("user", 1, 2), ("tool_turn", 2, 5), ("assistant", 5, 6)]
    assert flatten(group_units(msgs)) == msgs
    assert is_valid(msgs, "openai") and is_valid(msgs, "anthropic")


def test_trailing_call_is_pending_and_valid() -> None:
    msgs = [USER, call("a", "b"), result("a")]
    assert kinds(msgs)[-1] == ("pending", 1, 3)
    assert validate(msgs) == []


def test_problems_carry_indices_and_codes() -> None:
    msgs = [SYS, FINAL, result("zz"), USER, call("a", "b"), result("a"), USER, call("c"), USER]
    got = [(p.index, p.code) for p in validate(msgs, "anthropic")]
    assert got == [
        (1, "first_message_not_user"),
        (2, "orphan_tool_result"),
        (4, "partial_parallel_results"),
        (7, "unanswered_tool_call"),
    ]
    assert [(p.index, p.code) for p in validate(msgs, "openai")] == got[1:]


def test_duplicate_call_ids_are_reported() -> None:
    msgs = [USER, call("a"), result("a"), USER, call("a"), result("a")]
    assert [p.code for p in validate(msgs, "anthropic")] == ["duplicate_tool_call_id"]
    assert validate(msgs, "openai") == []


def test_unknown_provider_is_rejected() -> None:
    with pytest.raises(ConfigurationError, match="unknown provider 'bedrock'"):
        validate([], "bedrock")
