"""MessageContextManager: the documented user-turn window, system pinning and tool-sequence removal."""

from __future__ import annotations

import asyncio
import logging

import pytest

from windowkeeper.blocks import TextBlock, ToolCallBlock, ToolResultBlock
from windowkeeper.context import MessageContextManager
from windowkeeper.errors import ConfigurationError
from windowkeeper.messages import Message
from windowkeeper.state import AgentState


def msg(mid: str, role: str, text: str = "") -> Message:
    return Message.text_message(text or mid, role=role, message_id=mid)  # type: ignore[arg-type]


def call(mid: str, *ids: str) -> Message:
    return Message(message_id=mid, role="assistant", content=[ToolCallBlock(id=i, name="search") for i in ids])


def result(mid: str, *ids: str) -> Message:
    return Message.tool_message([ToolResultBlock(call_id=i, output=f"out {i}") for i in ids], message_id=mid)


def ids(state: AgentState) -> list[str | int]:
    return [m.message_id for m in state.context]


def run(mgr: MessageContextManager[AgentState], context: list[Message]) -> list[str | int]:
    return ids(mgr.trim_context(AgentState(context=list(context))))


def test_within_limit_leaves_context_untouched_including_order() -> None:
    ctx = [msg("u1", "user"), msg("s1", "system"), msg("a1", "assistant")]
    state = AgentState(context=list(ctx))
    out = MessageContextManager(max_messages=1).trim_context(state)
    assert out is state
    assert out.context == ctx


def test_keeps_last_n_user_turns_and_moves_systems_first() -> None:
    ctx = [
        msg("u1", "user"),
        msg("s1", "system"),
        msg("a1", "assistant"),
        msg("u2", "user"),
        msg("a2", "assistant"),
        msg("s2", "system"),
        msg("u3", "user"),
        msg("a3", "assistant"),
    ]
    assert run(MessageContextManager(max_messages=2), ctx) == ["s1", "s2", "u2", "a2", "u3", "a3"]
    assert run(MessageContextManager(max_messages=1), ctx) == ["s1", "s2", "u3", "a3"]
    with pytest.raises(ConfigurationError, match="max_messages"):
        MessageContextManager(max_messages=-1)
    assert run(MessageContextManager(max_messages=3), ctx) == [m.message_id for m in ctx]


def test_role_must_be_exactly_system() -> None:
    # a developer-style prompt sent as a user message is trimmed like any user message
    ctx = [msg("p", "user", "You are terse."), msg("u1", "user"), msg("u2", "user")]
    assert run(MessageContextManager(max_messages=1), ctx) == ["u2"]


def test_cut_keeps_tool_turns_whole() -> None:
    ctx = [
        msg("u1", "user"),
        call("c1", "x", "y"),
        result("r1", "x"),
        result("r2", "y"),
        msg("a1", "assistant"),
        msg("u2", "user"),
        call("c2", "z"),
        result("r3", "z"),
    ]
    assert run(MessageContextManager(max_messages=1), ctx) == ["u2", "c2", "r3"]


def test_remove_tool_msgs_drops_only_completed_sequences() -> None:
    ctx = [
        msg("s", "system"),
        msg("u1", "user"),
        call("c1", "x"),
        result("r1", "x"),
        call("c2", "y", "z"),  # chained second call inside the same sequence
        result("r2", "y", "z"),
        msg("a1", "assistant", "answer using x, y and z"),
        msg("u2", "user"),
        call("c3", "w"),
        result("r3", "w"),  # no final answer yet: incomplete sequence, kept whole
        msg("u3", "user"),
        call("c4", "v"),  # pending: kept
    ]
    mgr: MessageContextManager[AgentState] = MessageContextManager(max_messages=5, remove_tool_msgs=True)
    # nothing to trim, but completed sequences go and the order is otherwise untouched
    assert run(mgr, ctx) == ["s", "u1", "u2", "c3", "r3", "u3", "c4"]
    mgr2: MessageContextManager[AgentState] = MessageContextManager(max_messages=2, remove_tool_msgs=True)
    assert run(mgr2, ctx) == ["s", "u2", "c3", "r3", "u3", "c4"]
    # without the flag the tool messages stay
    assert run(MessageContextManager(max_messages=2), ctx) == ["s", "u2", "c3", "r3", "u3", "c4"]
    assert run(MessageContextManager(max_messages=3), ctx) == [m.message_id for m in ctx]


def test_assistant_with_text_and_call_counts_as_call() -> None:
    mixed = Message(
        message_id="c1",
        role="assistant",
        content=[TextBlock(text="let me look"), ToolCallBlock(id="x", name="search")],
    )
    ctx = [msg("u1", "user"), mixed, result("r1", "x"), msg("a1", "assistant"), msg("u2", "user")]
    mgr: MessageContextManager[AgentState] = MessageContextManager(max_messages=5, remove_tool_msgs=True)
    assert run(mgr, ctx) == ["u1", "u2"]


async def test_sync_and_async_agree() -> None:
    ctx = [msg("s", "system")] + [msg(f"{r}{i}", r) for i in range(6) for r in ("user", "assistant")]
    mgr: MessageContextManager[AgentState] = MessageContextManager(max_messages=2)
    sync_state = mgr.trim_context(AgentState(context=list(ctx)))
    async_state = await mgr.atrim_context(AgentState(context=list(ctx)))
    assert ids(sync_state) == ids(async_state) == ["s", "user4", "assistant4", "user5", "assistant5"]
    results = await asyncio.gather(*(mgr.atrim_context(AgentState(context=ctx[: 3 + k])) for k in range(5)))
    assert [ids(r)[-1] for r in results] == ["assistant0", "user1", "assistant1", "user2", "assistant2"]
    assert [len(r.context) for r in results] == [3, 4, 5, 4, 5]


@pytest.mark.parametrize("bad", [-1, 1.5, "3", True, None])
def test_bad_max_messages_is_rejected(bad: object) -> None:
    with pytest.raises(ConfigurationError, match="max_messages") as info:
        MessageContextManager(max_messages=bad)  # type: ignore[arg-type]
    assert isinstance(info.value, ValueError)
    assert repr(bad) in str(info.value)


def test_max_messages_zero_keeps_only_the_turn_in_progress(caplog: pytest.LogCaptureFixture) -> None:
    ctx = [msg("s", "system"), msg("u1", "user"), msg("a1", "assistant"), msg("u2", "user"), msg("a2", "assistant")]
    manager: MessageContextManager[AgentState] = MessageContextManager(max_messages=0)
    with caplog.at_level(logging.INFO, logger="windowkeeper.context.message"):
        assert run(manager, ctx) == ["s", "u2", "a2"]  # never the system message alone: no user turn is invalid
        assert run(manager, ctx) == ["s", "u2", "a2"]
    told = [r.getMessage() for r in caplog.records if "max_messages=0" in r.getMessage()]
    assert len(told) == 1 and "newest user turn" in told[0]
    assert run(MessageContextManager(max_messages=0), [msg("s", "system"), msg("u1", "user")]) == ["s", "u1"]
