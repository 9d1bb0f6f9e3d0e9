"""Properties every built-in manager keeps on any valid conversation, with any parameters.

Output passes the OpenAI and Anthropic structural checks, keeps each system message byte-identical and in order,
invents nothing (each output message equals an input message with the same id), keeps non-system messages in
their original order, and keeps the newest user message unless the parameters asked for it to go.
"""

from __future__ import annotations

import asyncio

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from windowkeeper.context import MessageContextManager, SummaryContextManager
from windowkeeper.context.summary import estimate_text_tokens
from windowkeeper.messages import Message
from windowkeeper.state import AgentState
from windowkeeper.units import validate

from .strategies import agent_states

SETTINGS = settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def count_summary(messages: list[Message], previous_summary: str | None) -> str:
    return f"summary of {len(messages)} messages"


def check_invariants(before: list[Message], after: list[Message]) -> None:
    assert validate(after, "openai") == []
    if any(m.role == "user" for m in before):
        assert validate(after, "anthropic") == []
    else:  # a manager cannot invent the user turn a conversation never had; it must add no other problem
        assert [p.code for p in validate(after, "anthropic")] in ([], ["no_user_message"])
    by_id = {m.message_id: m.model_dump_json() for m in before}
    assert len({m.message_id for m in after}) == len(after)
    for m in after:
        assert by_id.get(m.message_id) == m.model_dump_json(), f"message {m.message_id} was invented or changed"
    systems_before = [m.model_dump_json() for m in before if m.role == "system"]
    systems_after = [m.model_dump_json() for m in after if m.role == "system"]
    assert systems_after == systems_before
    order = {m.message_id: i for i, m in enumerate(before)}
    positions = [order[m.message_id] for m in after if m.role != "system"]
    assert positions == sorted(positions)


def newest_user_id(messages: list[Message]) -> str | int | None:
    users = [m.message_id for m in messages if m.role == "user"]
    return users[-1] if users else None


@SETTINGS
@given(state=agent_states(), max_messages=st.integers(1, 12), remove_tools=st.booleans())
def test_message_manager_properties(state: AgentState, max_messages: int, remove_tools: bool) -> None:
    before = list(state.context)
    mgr: MessageContextManager[AgentState] = MessageContextManager(max_messages, remove_tool_msgs=remove_tools)
    after = mgr.trim_context(state).context
    check_invariants(before, after)
    newest = newest_user_id(before)
    if max_messages > 0 and newest is not None:
        assert newest in {m.message_id for m in after}
    users_before = sum(1 for m in before if m.role == "user")
    users_after = sum(1 for m in after if m.role == "user")
    assert users_after == (max_messages if users_before > max_messages else users_before)


@SETTINGS
@given(
    state=agent_states(),
    max_messages=st.none() | st.integers(0, 60),
    token_budget=st.none() | st.integers(1, 4000),
    keep_recent=st.integers(0, 12),
    remove_tools=st.booleans(),
)
def test_summary_manager_properties(
    state: AgentState,
    max_messages: int | None,
    token_budget: int | None,
    keep_recent: int,
    remove_tools: bool,
) -> None:
    before = list(state.context)
    previous = state.context_summary
    mgr: SummaryContextManager[AgentState] = SummaryContextManager(
        summarizer=count_summary,
        max_messages=max_messages,
        token_budget=token_budget,
        keep_recent=keep_recent,
        remove_tool_msgs=remove_tools,
    )
    out = asyncio.run(mgr.atrim_context(state))
    after = out.context
    check_invariants(before, after)
    metrics = mgr.last_metrics
    assert metrics is not None
    if metrics.summaries_made:
        summary = out.context_summary
        assert summary is not None
        # the running summary is bounded in exact tokens (`SummaryContextManager._bounded`), not the estimate
        assert mgr.counter.count_text(summary) <= mgr.max_running_summary_tokens
        appended = f"{previous}\n\n" if previous else ""
        # the summarizer's own line (a condensed summary may end with the cut marker instead)
        new = next((line for line in summary.splitlines()[::-1] if line.startswith("summary of ")), None)
        if new is not None and estimate_text_tokens(f"{appended}{new}") <= mgr.max_running_summary_tokens:
            assert summary.endswith(" messages") and summary.startswith(appended)
        kept = [m for m in after if m.role != "system"]
        # fewer than keep_recent only when those would not fit token_budget: the cut moved to a later user turn
        assert len(kept) >= keep_recent or (token_budget is not None and kept[0].role == "user")
    else:
        assert after == before
        # the running summary changes without a new one only to give way to a view it does not fit beside
        assert out.context_summary == previous or (
            token_budget is not None and mgr.sent_tokens(before, previous) > token_budget
        )
    if max_messages is None and token_budget is None:
        assert metrics.summaries_made == 0
    newest = newest_user_id(before)
    if newest is not None:  # the request being answered is never summarized away, even with keep_recent=0
        assert newest in {m.message_id for m in after}


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(state=agent_states(max_messages=120), keep_recent=st.integers(0, 6))
def test_sync_and_async_summary_results_are_identical(state: AgentState, keep_recent: int) -> None:
    mgr: SummaryContextManager[AgentState] = SummaryContextManager(
        summarizer=count_summary, max_messages=10, keep_recent=keep_recent
    )
    a = mgr.trim_context(state.model_copy(deep=True))
    b = asyncio.run(mgr.atrim_context(state.model_copy(deep=True)))
    assert a.model_dump_json() == b.model_dump_json()
