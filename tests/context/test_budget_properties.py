"""Properties of `TokenBudgetContextManager` over generated conversations, single calls and replays."""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from windowkeeper.context.budget import TokenBudgetContextManager
from windowkeeper.context.pointers import is_offloaded
from windowkeeper.context.recall import is_recall
from windowkeeper.messages import Message
from windowkeeper.state import AgentState, add_messages
from windowkeeper.units import group_units, validate

from .strategies import agent_states, conversations

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def check_view(before: Sequence[Message], after: Sequence[Message], mgr: TokenBudgetContextManager[AgentState]) -> None:
    """Valid for both providers, system messages untouched, nothing invented, replacements restorable."""
    assert not validate(after, "openai")
    if any(m.role == "user" for m in before):
        assert not validate(after, "anthropic")
    else:  # a manager cannot invent the user turn a conversation never had; it must add no other problem
        assert [p.code for p in validate(after, "anthropic")] in ([], ["no_user_message"])
    assert [m for m in after if m.role == "system"] == [m for m in before if m.role == "system"]
    for m in after:
        if m.role == "system":
            assert any(m is b for b in before)
    index = {m.message_id: (i, m) for i, m in enumerate(before)}
    positions = []
    for k, m in enumerate(after):
        if is_recall(m) and m.message_id not in index:
            # recalled history: marked, and placed right before the user message it serves
            assert k + 1 < len(after) and str(after[k + 1].message_id) == m.metadata["serves"]
            continue
        assert m.message_id in index, f"invented message {m.message_id!r}"
        pos, original = index[m.message_id]
        positions.append(pos)
        if m is original:
            continue
        # only a body replacement: same id and role, call ids kept, and the original comes back
        assert is_offloaded(m)
        assert m.role == original.role
        assert m.tool_call_ids() == original.tool_call_ids()
        assert [b.call_id for b in m.tool_result_blocks()] == [b.call_id for b in original.tool_result_blocks()]
        assert mgr.restore(m).model_dump_json() == mgr.restore(original).model_dump_json()
    assert positions == sorted(positions)


def within_budget_or_minimal(mgr: TokenBudgetContextManager[AgentState], after: Sequence[Message]) -> None:
    """Over budget only when nothing but the system zone, the pinned request and the newest unit is left."""
    metrics = mgr.last_metrics
    assert metrics is not None
    if metrics.tokens_after <= mgr.budget:
        return
    others = [u for u in group_units(after) if u.kind != "system"]
    assert len(others) <= 2, (metrics, [u.kind for u in others])


@SETTINGS
@given(
    state=agent_states(max_messages=80),
    max_tokens=st.integers(200, 6000),
    reserve=st.integers(0, 150),
    summarize=st.booleans(),
)
def test_single_call_properties(state: AgentState, max_tokens: int, reserve: int, summarize: bool) -> None:
    mgr: TokenBudgetContextManager[AgentState] = TokenBudgetContextManager(
        max_tokens + reserve,
        reserve,
        summarizer=(lambda msgs: f"{len(msgs)} messages") if summarize else None,
        clear_min_tokens=20,
        keep_tool_results=1,
    )
    before = list(state.context)
    summary_before = state.context_summary
    out = mgr.trim_context(state)
    metrics = mgr.last_metrics
    assert metrics is not None
    check_view(before, out.context, mgr)
    if metrics.tokens_before < mgr.high_limit:
        assert out.context == before and out.context_summary == summary_before
    else:
        within_budget_or_minimal(mgr, out.context)
        if summary_before and out.context_summary != summary_before:
            # appended to, or cut in its middle to fit beside a view that is still over the budget
            assert out.context_summary is not None
            assert out.context_summary.startswith(summary_before) or "truncated" in out.context_summary


@SETTINGS
@given(
    messages=conversations(min_messages=5, max_messages=120, allow_pending=False),
    max_tokens=st.integers(400, 4000),
    chunks=st.lists(st.integers(1, 6), min_size=1, max_size=60),
)
def test_replay_properties(messages: list[Message], max_tokens: int, chunks: list[int]) -> None:
    """Fed call by call: every view is valid, and between compactions the previous view is an exact prefix."""
    mgr: TokenBudgetContextManager[AgentState] = TokenBudgetContextManager(max_tokens, 0, clear_min_tokens=20)
    state = AgentState()
    start = 0
    previous: list[Message] | None = None
    step = 0
    while start < len(messages):
        size = chunks[step % len(chunks)]
        step += 1
        new = messages[start : start + size]
        start += size
        fed = add_messages(state.context, new)
        state.context = fed
        state = mgr.trim_context(state)
        metrics = mgr.last_metrics
        assert metrics is not None
        # validity of the new view is checked against the messages the manager was given
        check_view(fed, state.context, mgr)
        # a user message that refers back with less than `recall_room` left may compact below the high watermark
        room_asked = mgr.budget - metrics.tokens_before < mgr.recall_room and any(m.role == "user" for m in new)
        if metrics.tokens_before < mgr.high_limit and not room_asked:
            # untouched, except for a recall message placed before a user message that just arrived
            placed = [m for m in state.context if is_recall(m) and not any(m is f for f in fed)]
            assert state.context is fed or (
                len(placed) == 1
                and all(a is b for a, b in zip([m for m in state.context if m is not placed[0]], fed, strict=False))
            )
            if previous is not None:
                assert metrics.prefix_stable is True
                assert all(a is b for a, b in zip(previous, state.context, strict=False))
        else:
            within_budget_or_minimal(mgr, state.context)
        previous = list(state.context)
