"""The summary manager's cut follows the turn in progress: a user line sent right after tool results, before the
model replied to them ("also use metric units", the text of an Anthropic ``[tool_result, text]`` turn), does not
open a turn of its own, so the task, its call and its result are not summarized while the model still answers
them. When that turn does not fit ``token_budget``, the turn starts at the newest user message as before (logged),
and the newest user message is still never summarized."""

from __future__ import annotations

import logging

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from turn_fixtures import older_history, weather_call, weather_result
from windowkeeper.context import SummaryContextManager
from windowkeeper.messages import Message
from windowkeeper.state import AgentState
from windowkeeper.tokens import default_counter

from .strategies import agent_states


def task_with_a_line_after_results(result_body: str = "Paris: 72 F, wind 10 mph, humidity 40%.") -> list[Message]:
    return [
        Message.text_message("You are a weather assistant.", role="system", message_id="sys"),
        *older_history(2, 30),
        Message.text_message("What is the weather in Paris today?", message_id="task"),
        weather_call(1, "Paris"),
        weather_result(1, result_body),
        Message.text_message("Also use metric units.", message_id="metric"),
    ]


class Recorder:
    """A summarizer that remembers which messages it was given."""

    def __init__(self) -> None:
        self.summarized: list[str] = []

    def __call__(self, messages: list[Message], previous_summary: str | None) -> str:
        self.summarized.extend(str(m.message_id) for m in messages)
        return f"summary of {len(messages)} messages"


def run(messages: list[Message], **options: object) -> tuple[AgentState, Recorder, SummaryContextManager[AgentState]]:
    recorder = Recorder()
    manager: SummaryContextManager[AgentState] = SummaryContextManager(
        summarizer=recorder, max_messages=None, max_summary_tokens=100, **options
    )
    state = manager.trim_context(AgentState(context=list(messages)))
    return state, recorder, manager


@pytest.mark.parametrize("keep_recent", [0, 1, 2, 8])
def test_the_task_call_and_result_stay_when_the_user_adds_a_line_after_the_results(keep_recent: int) -> None:
    messages = task_with_a_line_after_results()
    state, recorder, manager = run(messages, token_budget=1_000, keep_recent=keep_recent)
    kept = [m.message_id for m in state.context]
    assert recorder.summarized, "a cut is needed at this budget"
    assert kept == ["sys", "task", "call-1", "result-1", "metric"]
    assert not {"task", "call-1", "result-1", "metric"} & set(recorder.summarized)
    assert manager.sent_tokens(state.context, state.context_summary) <= 1_000


def test_the_task_stays_while_the_model_keeps_working_after_the_line() -> None:
    """The model goes on calling tools after the line; ``keep_recent`` alone would cut at the line."""
    messages = task_with_a_line_after_results()
    for n in range(2, 6):
        messages += [weather_call(n, f"City {n}"), weather_result(n, f"City {n}: 20 C.")]
    state, recorder, _ = run(messages, token_budget=1_200, keep_recent=8)
    kept = [m.message_id for m in state.context]
    assert recorder.summarized
    assert kept[:5] == ["sys", "task", "call-1", "result-1", "metric"]
    assert not {"task", "call-1", "result-1"} & set(recorder.summarized)


def test_a_line_after_a_reply_opens_its_own_turn() -> None:
    """Only a line sent with the results joins the turn before it: after the model answered, a new user message
    opens a new turn, and the answered task may be summarized as before."""
    messages = task_with_a_line_after_results()
    messages.insert(-1, Message.text_message("It is 72 F in Paris.", role="assistant", message_id="answer"))
    state, recorder, _ = run(messages, token_budget=1_000, keep_recent=1)
    assert [m.message_id for m in state.context] == ["sys", "metric"]
    assert {"task", "call-1", "result-1", "answer"} <= set(recorder.summarized)


def test_one_step_back_only() -> None:
    """A client that never replies after tool results: each line after results joins one turn back, not all the
    way to the first task (which would make the whole conversation one turn nothing may cut)."""
    messages = task_with_a_line_after_results()
    messages += [
        weather_call(2, "Lyon"),
        weather_result(2, "Lyon: 70 F."),
        Message.text_message("And Nice?", message_id="nice"),
    ]
    state, recorder, _ = run(messages, token_budget=1_000, keep_recent=0)
    assert [m.message_id for m in state.context] == ["sys", "metric", "call-2", "result-2", "nice"]
    assert {"task", "call-1", "result-1"} <= set(recorder.summarized)


def test_a_turn_in_progress_over_the_budget_starts_at_the_newest_user_message(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The documented fallback: the task's result alone is over the room, so the turn starts at the line, as if it
    had opened one; the budget is held and the newest user message stays."""
    big = "Paris hourly: " + " ".join(f"{h}:00 {15 + h % 7} C" for h in range(24)) * 12
    messages = task_with_a_line_after_results(big)
    counter = default_counter()
    assert counter.count_message(messages[-2]) > 1_000
    with caplog.at_level(logging.INFO, logger="windowkeeper.context.summary"):
        state, recorder, manager = run(messages, token_budget=1_000, keep_recent=1)
    assert [m.message_id for m in state.context] == ["sys", "metric"]
    assert {"task", "call-1", "result-1"} <= set(recorder.summarized)
    assert manager.sent_tokens(state.context, state.context_summary) <= 1_000
    assert any("the turn in progress" in r.getMessage() and "does not fit" in r.getMessage() for r in caplog.records)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    state=agent_states(),
    max_messages=st.none() | st.integers(0, 60),
    token_budget=st.none() | st.integers(1, 4000),
    keep_recent=st.integers(0, 12),
)
def test_the_cut_never_falls_inside_the_turn_in_progress_before_its_newest_user_message(
    state: AgentState, max_messages: int | None, token_budget: int | None, keep_recent: int
) -> None:
    """Either the whole turn in progress stays, or (the fallback) it starts at the newest user message."""
    from windowkeeper.context._turns import newest_user_index, turn_start

    others = [m for m in state.context if m.role != "system"]
    start, newest = turn_start(others), newest_user_index(others)
    manager: SummaryContextManager[AgentState] = SummaryContextManager(
        summarizer=Recorder(), max_messages=max_messages, token_budget=token_budget, keep_recent=keep_recent
    )
    kept = {m.message_id for m in manager.trim_context(state.model_copy(deep=True)).context}
    if start is None or newest is None:
        return
    whole = all(m.message_id in kept for m in others[start:])
    assert whole or (others[newest].message_id in kept and not any(m.message_id in kept for m in others[start:newest]))
