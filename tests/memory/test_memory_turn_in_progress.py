"""The three-tier memory follows the turn in progress: a user line sent right after tool results, before the model
replied to them ("also use metric units", the text of an Anthropic ``[tool_result, text]`` turn), does not open a
turn of its own. Neither the summarization cut nor the last-resort compaction treats it as the turn's opener, so
the task, its call and its result are not summarized away (nor the task compacted) while the model answers them.
When that turn does not fit, the memory falls back to the newest user message as before, and logs it."""

from __future__ import annotations

import logging

import pytest

from turn_fixtures import FILLER, older_history, weather_call, weather_result
from windowkeeper.memory import InMemoryMemory
from windowkeeper.messages import Message
from windowkeeper.units import validate

SID = "turn-in-progress"


def task_with_a_line_after_results(task: str = "Weather in Paris?", result: str = "72 F.") -> list[Message]:
    """Short task, call and result (a gist would not be shorter, so compaction leaves them whole)."""
    return [
        *older_history(2, 12),
        Message.text_message(task, message_id="task"),
        weather_call(1, "Paris"),
        weather_result(1, result),
        Message.text_message("Also use metric units.", message_id="metric"),
    ]


async def managed(
    messages: list[Message], summarizer: object = None, summary_max_tokens: int | None = None, **thresholds: int
) -> tuple[InMemoryMemory, list[Message]]:
    """One management pass over ``messages`` added as they are."""
    memory = InMemoryMemory(
        enable_context_management=False,
        thresholds=thresholds,
        summarizer=summarizer,
        summary_max_tokens=summary_max_tokens,
    )
    for message in messages:
        await memory.add(message, session_id=SID)
    await memory.manage_context(SID)
    return memory, await memory.messages(SID)


def shown(view: list[Message], message: Message) -> bool:
    return any(m.message_id == message.message_id and m.text() == message.text() for m in view)


LIMITS = {"pre_rot_threshold": 900, "min_compaction_gain": 10**6}
"""Over the summarization trigger; compaction never counted as enough, so the pass summarizes."""


@pytest.mark.parametrize("keep_recent_count", [1, 2])
async def test_the_task_call_and_result_are_not_summarized_when_the_user_adds_a_line(keep_recent_count: int) -> None:
    messages = task_with_a_line_after_results()
    memory, view = await managed(messages, keep_recent_count=keep_recent_count, **LIMITS)
    report = memory.last_report(SID)
    assert report is not None and report.tier == "summarization", report
    assert not {"task", "call-1", "result-1", "metric"} & set(report.summarized_ids)
    assert all(shown(view, m) for m in messages[-4:])
    assert validate(view, "anthropic") == []


async def test_the_task_stays_while_the_model_keeps_working_after_the_line() -> None:
    messages = task_with_a_line_after_results()
    for n in range(2, 5):
        messages += [weather_call(n, f"City {n}"), weather_result(n, f"{n} C.")]
    memory, view = await managed(messages, keep_recent_count=3, **LIMITS)
    report = memory.last_report(SID)
    assert report is not None and report.tier == "summarization", report
    assert not {"task", "call-1", "result-1", "metric"} & set(report.summarized_ids)
    assert all(shown(view, m) for m in messages[-10:])


async def test_a_line_after_a_reply_opens_its_own_turn() -> None:
    """Once the model answered, the user's next message opens a turn, and the answered task may be summarized."""
    messages = task_with_a_line_after_results()
    messages.insert(-1, Message.text_message("It is 72 F in Paris.", role="assistant", message_id="answer"))
    memory, _ = await managed(messages, keep_recent_count=1, **LIMITS)
    report = memory.last_report(SID)
    assert report is not None
    assert {"task", "call-1", "result-1", "answer"} <= set(report.summarized_ids)


async def test_a_turn_in_progress_over_the_trigger_starts_at_the_newest_user_message(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The documented fallback: the task's result alone is over the room, so the turn starts at the line; the
    newest user message is still kept and never summarized."""
    result = "Hourly: " + " ".join(f"{h}:00 {15 + h % 7} C" for h in range(24)) * 4
    messages = task_with_a_line_after_results(result=result)
    with caplog.at_level(logging.INFO, logger="windowkeeper.memory.base"):
        memory, view = await managed(messages, keep_recent_count=1, **LIMITS)
    report = memory.last_report(SID)
    assert report is not None and report.tier == "summarization", report
    assert {"task", "call-1", "result-1"} <= set(report.summarized_ids)
    assert shown(view, messages[-1])
    assert any("turn in progress" in r.getMessage() and "does not fit" in r.getMessage() for r in caplog.records)


LONG_TASK = "Plan the trip: " + FILLER * 8


def wordy_summarizer(events: list[dict[str, object]]) -> dict[str, str]:
    """A summary larger than the events it would replace: the memory keeps the events, and only the last-resort
    compaction can hold the threshold."""
    return {"user_goal": "Keep every word of the trip plan and the forecast. " * 60}


WORDY = {"summarizer": wordy_summarizer, "summary_max_tokens": 2_000}


async def test_the_last_resort_compaction_spares_the_task_that_opened_the_turn() -> None:
    """The view is held by compacting what the tiers left, oldest first: the task that opened the turn is not the
    first to go just because the user added a line after the results; the result goes instead."""
    result = "Paris forecast: " + FILLER * 8
    messages = task_with_a_line_after_results(task=LONG_TASK, result=result)[-4:]
    memory, view = await managed(messages, **WORDY, pre_rot_threshold=300, keep_recent_count=10)
    report = memory.last_report(SID)
    assert report is not None and not report.summarized_ids, report
    assert "result-1" in report.compacted_ids and "task" not in report.compacted_ids, report
    assert shown(view, messages[0]) and shown(view, messages[-1])
    assert await memory.tokens(SID) <= 300


async def test_the_last_resort_compaction_takes_the_task_only_when_nothing_else_is_left(
    caplog: pytest.LogCaptureFixture,
) -> None:
    messages = task_with_a_line_after_results(task=LONG_TASK)[-4:]
    with caplog.at_level(logging.INFO, logger="windowkeeper.memory.base"):
        memory, view = await managed(messages, **WORDY, pre_rot_threshold=150, keep_recent_count=10)
    report = memory.last_report(SID)
    assert report is not None and "task" in report.compacted_ids, report
    assert shown(view, messages[-1])
    assert any("opened the turn in progress was compacted" in r.getMessage() for r in caplog.records)
