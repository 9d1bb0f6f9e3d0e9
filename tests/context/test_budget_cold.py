"""A cold trim of a long history reads only its newest part, and gives what a trim of the whole history gives.

The reference is the same manager with cold planning switched off (every message counted and cleared first). The
two must agree on the view, the summary, every summarizer input, the restorable originals and what later
incremental calls do; only ``tokens_before`` of the planned call is an estimate for the part dropped unread.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from windowkeeper.context import _compaction
from windowkeeper.context.budget import TokenBudgetContextManager
from windowkeeper.messages import Message
from windowkeeper.state import AgentState, add_messages
from windowkeeper.summarize import ExtractiveSummarizer
from windowkeeper.testing.sessiongen import generate_session
from windowkeeper.tokens import default_counter
from windowkeeper.units import validate

from .strategies import conversations

COUNTER = default_counter()


class CountingCounter:
    """The shared exact counter, recording which messages a trim priced."""

    name = "counting"

    def __init__(self) -> None:
        self.priced: set[Any] = set()

    def count_text(self, text: str) -> int:
        return COUNTER.count_text(text)

    def count_message(self, message: Message) -> int:
        self.priced.add(message.message_id)
        return COUNTER.count_message(message)

    def count_messages(self, messages: Sequence[Message]) -> int:
        return COUNTER.count_messages(messages)


def agent_history() -> list[Message]:
    return generate_session(900, seed=5).messages


def chat_history() -> list[Message]:
    out = [Message.text_message("You are a helpful assistant.", role="system", message_id="sys")]
    for i in range(400):
        out.append(
            Message.text_message(f"I moved to city {i} and bought {i % 7 + 2} lamps. Ideas?", message_id=f"u{i}")
        )
        advice = " ".join(f"Idea {k} for city {i}: paint the walls and add plants." for k in range(i % 5 * 4 + 3))
        out.append(Message.text_message(advice, role="assistant", message_id=f"a{i}"))
        if i % 97 == 50:
            out.append(Message.text_message(f"Note {i}: be brief.", role="system", message_id=f"s{i}"))
    return out


def recording(calls: list[tuple[list[Any], str | None]]) -> Any:
    def summarize(messages: list[Message], previous: str | None) -> str:
        calls.append(([m.model_dump_json() for m in messages], previous))
        return f"summary of {len(messages)} messages ending {messages[-1].message_id if messages else '-'}"

    return summarize


def run(history: list[Message], planned: bool, monkeypatch: pytest.MonkeyPatch, **kwargs: Any) -> dict[str, Any]:
    monkeypatch.setattr(_compaction, "COLD_PLAN_MIN_MESSAGES", 512 if planned else 10**9)
    counter = CountingCounter()
    calls: list[tuple[list[Any], str | None]] = []
    summarizer = kwargs.pop("summarizer", None)
    if summarizer == "recording":
        summarizer = recording(calls)
    manager: TokenBudgetContextManager[AgentState] = TokenBudgetContextManager(
        counter=counter, summarizer=summarizer, **kwargs
    )
    state = manager.trim_context(AgentState(context=list(history), context_summary="earlier facts"))
    first = manager.last_metrics
    priced = len(counter.priced)
    views = [[m.model_dump_json() for m in state.context]]
    summaries = [state.context_summary]
    restored = [m.model_dump_json() for m in manager.restore_context(state)]
    for i in range(3):  # later incremental calls continue from the remembered view
        more = [
            Message.text_message(f"follow-up {i} " * 80, message_id=f"f{i}", timestamp=0.0),
            Message.text_message(f"answer {i} " * 300, role="assistant", message_id=f"g{i}", timestamp=0.0),
        ]
        state.context = add_messages(state.context, more)
        state = manager.trim_context(state)
        views.append([m.model_dump_json() for m in state.context])
        summaries.append(state.context_summary)
    assert first is not None
    return {
        "views": views,
        "summaries": summaries,
        "restored": restored,
        "calls": calls,
        "priced": priced,
        "before": first.tokens_before,
        "after": first.tokens_after,
        "valid": not validate(state.context, "anthropic"),
    }


@pytest.mark.parametrize(
    ("history", "kwargs"),
    [
        (agent_history, {"max_tokens": 12_000, "reserve_tokens": 2_000}),
        (agent_history, {"max_tokens": 8_000, "reserve_tokens": 1_000, "summarizer": "recording"}),
        (agent_history, {"max_tokens": 34_000, "reserve_tokens": 2_000, "summarizer": ExtractiveSummarizer()}),
        (chat_history, {"max_tokens": 6_000, "reserve_tokens": 1_000, "summarizer": "recording"}),
        (
            chat_history,
            {"max_tokens": 10_000, "reserve_tokens": 2_000, "summary_mode": "update", "summarizer": "recording"},
        ),
        (chat_history, {"max_tokens": 10_000, "reserve_tokens": 2_000, "clear_reply_min_tokens": None}),
    ],
)
def test_planned_cold_trim_equals_the_full_trim(
    history: Any, kwargs: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    messages = history()
    full = run(messages, False, monkeypatch, **dict(kwargs))
    planned = run(messages, True, monkeypatch, **dict(kwargs))
    for key in ("views", "summaries", "restored", "calls", "after"):
        assert planned[key] == full[key], key
    assert planned["valid"] and full["valid"]
    # the planned call read a small part of the history, the full one all of it
    assert full["priced"] >= len(messages)
    assert planned["priced"] < len(messages) * 0.4
    # tokens_before is exact for the full count and estimated for the part dropped unread
    assert abs(planned["before"] - full["before"]) <= 0.15 * full["before"]


def test_short_or_fitting_histories_are_counted_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    messages = chat_history()
    short = messages[:300]  # under COLD_PLAN_MIN_MESSAGES: counted whole, tokens_before exact
    planned = run(short, True, monkeypatch, max_tokens=6_000, reserve_tokens=1_000)
    full = run(short, False, monkeypatch, max_tokens=6_000, reserve_tokens=1_000)
    assert planned == full and planned["priced"] >= len(short)
    # a long history that fits once its replies are cleared cannot be planned: nothing is certain to go
    fits = run(messages, True, monkeypatch, max_tokens=60_000, reserve_tokens=2_000)
    assert fits["priced"] >= len(messages)
    assert fits == run(messages, False, monkeypatch, max_tokens=60_000, reserve_tokens=2_000)


@contextmanager
def plan_from(messages: int) -> Iterator[None]:
    saved = _compaction.COLD_PLAN_MIN_MESSAGES
    _compaction.COLD_PLAN_MIN_MESSAGES = messages
    try:
        yield
    finally:
        _compaction.COLD_PLAN_MIN_MESSAGES = saved


def trim_once(messages: list[Message], summary: str | None, plan: bool, **kwargs: Any) -> tuple[Any, ...]:
    calls: list[tuple[list[Any], str | None]] = []
    summarize = kwargs.pop("summarize")
    with plan_from(2 if plan else 10**9):
        manager: TokenBudgetContextManager[AgentState] = TokenBudgetContextManager(
            counter=COUNTER, summarizer=recording(calls) if summarize else None, **kwargs
        )
        state = manager.trim_context(AgentState(context=list(messages), context_summary=summary))
    view = [m.model_dump_json() for m in state.context]
    restored = [m.model_dump_json() for m in manager.restore_context(state)]
    return view, state.context_summary, restored, calls


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    messages=conversations(min_messages=1, max_messages=120),
    summary=st.sampled_from((None, "Earlier: Sam from Berlin.")),
    max_tokens=st.integers(300, 5000),
    summarize=st.booleans(),
    mode=st.sampled_from(("append", "update")),
    keep=st.integers(0, 3),
    reply_min=st.sampled_from((None, 0, 20, 100)),
)
def test_any_conversation_plans_to_the_same_view(
    messages: list[Message],
    summary: str | None,
    max_tokens: int,
    summarize: bool,
    mode: str,
    keep: int,
    reply_min: int | None,
) -> None:
    kwargs: dict[str, Any] = {
        "max_tokens": max_tokens,
        "reserve_tokens": 0,
        "summarize": summarize,
        "summary_mode": mode,
        "keep_tool_results": keep,
        "keep_replies": keep,
        "clear_reply_min_tokens": reply_min,
        "clear_min_tokens": 10,
    }
    assert trim_once(messages, summary, True, **dict(kwargs)) == trim_once(messages, summary, False, **dict(kwargs))
