"""Notes in the default summary: what a chat between people said once survives its summary (issue 20)."""

from __future__ import annotations

from typing import Any

import pytest

from windowkeeper.errors import ConfigurationError
from windowkeeper.memory import InMemoryMemory, StructuredSummary
from windowkeeper.memory.structured import NOTES_KEY, fit_summary, summarize_structured, with_notes
from windowkeeper.tokens import default_counter

from .conftest import event

SMALL_TALK = [
    "How was the rest of your week?",
    "Right? I thought the same.",
    "My train was late again, twenty minutes this time.",
    "Honestly I just need a quiet weekend.",
]
FACT = "Signed the contract today, I'm joining Thornbury Design Studio."


def chat(n: int, fact_at: int) -> list[dict[str, Any]]:
    """``n`` turns of repeated small talk between two people, one fact said once at ``fact_at``."""
    return [
        event(i, FACT if i == fact_at else SMALL_TALK[i % len(SMALL_TALK)], role="user" if i % 2 else "assistant")
        for i in range(n)
    ]


def test_notes_keep_what_was_said_once_and_leave_small_talk_out() -> None:
    count = default_counter().count_text
    events = chat(40, fact_at=13)
    plain = summarize_structured(events)
    assert "Thornbury" not in plain.render()  # the pattern fields have no place for it
    noted = with_notes(plain, events, count, 200)
    notes = noted.critical_context[NOTES_KEY]
    assert any("Thornbury Design Studio" in n for n in notes)
    assert not any("Right? I thought the same." in n for n in notes)  # said twenty times: no word of its own
    assert count(noted.render()) <= 200


def test_notes_never_exceed_the_room_and_an_already_full_summary_is_left_as_it_is() -> None:
    count = default_counter().count_text
    events = chat(40, fact_at=13)
    plain = summarize_structured(events)
    size = count(plain.render())
    assert with_notes(plain, events, count, size) == plain
    for room in (size + 5, size + 30, size + 400):
        assert count(with_notes(plain, events, count, room).render()) <= room


def test_the_oldest_notes_go_first_when_a_summary_is_fitted() -> None:
    count = default_counter().count_text
    notes = ["a: the old flat was on Elm Road", "b: the new one is on Fir Lane"]
    summary = StructuredSummary(count=3, user_goal="plan the move", critical_context={NOTES_KEY: notes})
    size = count(summary.render())
    fitted = fit_summary(summary, count, size - 3)
    assert fitted.critical_context[NOTES_KEY] == ["b: the new one is on Fir Lane"]
    assert fitted.user_goal == "plan the move"


async def test_a_fact_of_a_summarized_chat_stays_in_the_view() -> None:
    """Before notes the default summary of this chat held only its first request and last line: the fact was in
    no view after the first summary."""
    memory = InMemoryMemory(thresholds={"pre_rot_threshold": 2000, "keep_recent_count": 4}, summary_notes=True)
    for e in chat(300, fact_at=5):
        await memory.add(e, session_id="s")
    summaries = await memory.summaries("s")
    assert summaries, "the chat outgrew the threshold: it was summarized"
    assert "m5" not in {str(m.message_id) for m in await memory.messages("s")}
    assert "Thornbury Design Studio" in "\n".join(s.render() for s in summaries)
    assert await memory.tokens("s") <= 2000


async def test_a_custom_summarizer_gets_no_notes() -> None:
    """Notes fill the offline default's unused room only: a caller's summarizer says what it says."""

    def mine(events: list[dict[str, Any]]) -> dict[str, Any]:
        return {"count": len(events), "user_goal": "small talk"}

    memory = InMemoryMemory(
        thresholds={"pre_rot_threshold": 600, "keep_recent_count": 4}, summarizer=mine, summary_notes=True
    )
    for e in chat(80, fact_at=5):
        await memory.add(e, session_id="s")
    summaries = await memory.summaries("s")
    assert summaries and all(NOTES_KEY not in s.critical_context for s in summaries)


async def test_notes_are_on_by_default_can_be_turned_off_and_the_option_is_checked() -> None:
    """On by default since session 25: the default memory keeps the fact of a summarized chat (issue 20)."""
    memory = InMemoryMemory(thresholds={"pre_rot_threshold": 2000, "keep_recent_count": 4})
    for e in chat(300, fact_at=5):
        await memory.add(e, session_id="s")
    summaries = await memory.summaries("s")
    assert summaries and "Thornbury Design Studio" in "\n".join(s.render() for s in summaries)
    off = InMemoryMemory(thresholds={"pre_rot_threshold": 2000, "keep_recent_count": 4}, summary_notes=False)
    for e in chat(300, fact_at=5):
        await off.add(e, session_id="s")
    summaries = await off.summaries("s")
    assert summaries and all(NOTES_KEY not in s.critical_context for s in summaries)
    with pytest.raises(ConfigurationError, match="summary_notes='yes' must be True or False"):
        InMemoryMemory(summary_notes="yes")


async def test_a_tool_session_gets_notes_only_in_proportion_to_its_plain_lines() -> None:
    """A summary of tool calls and long results has its fields for them: the short lines said between them are
    no notes (they made summaries fuller and more frequent on coding-agent sessions: session 25)."""
    log = " ".join(f"line {k}: test_{k} passed in {k}.{k}s" for k in range(60))
    memory = InMemoryMemory(thresholds={"pre_rot_threshold": 3000, "keep_recent_count": 4})
    messages: list[dict[str, Any]] = [event(0, "Fix the flaky test suite.")]
    for i in range(1, 41):
        messages.append(event(3 * i, f"Checking the suite on runner {i}z now.", role="assistant"))
        call = {"id": f"c{i}", "name": "run_tests", "arguments": {"target": f"suite_{i}"}}
        messages.append({"message": {"id": f"t{i}", "role": "assistant", "content": "", "tool_calls": [call]}})
        result = {"id": f"r{i}", "role": "tool", "content": f"run {i}: {log}", "tool_call_id": f"c{i}"}
        messages.append({"message": result})
    for message in messages:
        await memory.add(message, session_id="s")
    summaries = await memory.summaries("s")
    assert summaries, "the session outgrew the threshold: it was summarized"
    notes = [n for s in summaries for n in s.critical_context.get(NOTES_KEY, [])]
    assert len(notes) <= 2, notes
