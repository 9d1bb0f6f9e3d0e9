"""The turn in progress is never cleared: tool results of the newest user turn stay in full until the model has
answered it; only when that turn alone is over the budget are its older results cleared to pointers (logged)."""

from __future__ import annotations

import logging
import random

import pytest

from windowkeeper.blocks import TextBlock, ToolCallBlock, ToolResultBlock
from windowkeeper.context import TokenBudgetContextManager
from windowkeeper.evaluation.replay import call_points
from windowkeeper.evaluation.strategies import ManagedStrategy
from windowkeeper.messages import Message
from windowkeeper.summarize import ExtractiveSummarizer
from windowkeeper.tokens import default_counter

WORDS = ["config", "server", "timeout", "retry", "shard", "pool", "cache", "index", "query", "order", "flight", "seat"]


def tool_heavy_run(seed: int, turns: int = 24, max_calls: int = 2) -> list[Message]:
    """User tasks answered after one or two rounds of one or two file reads of about 1k tokens each."""
    rng = random.Random(seed)
    out = [Message.text_message("You are a careful agent.", role="system", message_id="sys")]
    n = 0
    for t in range(turns):
        out.append(Message.text_message(f"Task {t}: look into the {rng.choice(WORDS)} problem.", message_id=f"u{t}"))
        for _ in range(rng.randint(1, 2)):
            n += 1
            calls = [
                ToolCallBlock(id=f"c{n}_{k}", name="read_file", args={"path": f"src/{rng.choice(WORDS)}_{n}_{k}.py"})
                for k in range(rng.randint(1, max_calls))
            ]
            out.append(Message(role="assistant", content=[TextBlock(text="Reading."), *calls], message_id=f"a{n}"))
            for call in calls:
                body = " ".join(f"{rng.choice(WORDS)}{rng.randint(0, 99)}" for _ in range(rng.randint(450, 650)))
                out.append(
                    Message.tool_message([ToolResultBlock(call_id=call.id, output=body)], message_id=f"r{call.id}")
                )
        out.append(Message.text_message(f"Done with task {t}.", role="assistant", message_id=f"f{t}"))
    return out


async def drive(messages: list[Message], budget: int) -> tuple[int, int, int]:
    """(calls, calls whose view lacks a result of its own turn in full, calls whose prompt extends the last)."""
    counter = default_counter()
    manager: TokenBudgetContextManager = TokenBudgetContextManager(
        max_tokens=budget + 1000, reserve_tokens=1000, summarizer=ExtractiveSummarizer(counter=counter), counter=counter
    )
    strategy = ManagedStrategy("budget", manager)
    lacking = stable = 0
    previous: list[str] = []
    start = 0
    points = call_points(messages)
    for point in points:
        view = await strategy.step(messages[start:point])
        start = point
        history = messages[:point]
        opened = max(i for i, m in enumerate(history) if m.role == "user")
        shown = {(m.message_id, m.text()) for m in view.messages}
        lacking += any((m.message_id, m.text()) not in shown for m in history[opened:] if m.role == "tool")
        keys = [m.fingerprint() for m in view.messages]
        stable += bool(previous) and keys[: len(previous)] == previous
        previous = keys
        assert counter.count_messages(view.messages) <= budget + 100
    return len(points), lacking, stable


@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_no_call_lacks_a_result_of_its_own_turn_at_six_results_of_budget(seed: int) -> None:
    messages = tool_heavy_run(seed)
    sizes = sorted(default_counter().count_message(m) for m in messages if m.role == "tool")
    budget = 6 * sizes[len(sizes) // 2]
    calls, lacking, stable = await drive(messages, budget)
    assert lacking == 0
    assert stable >= 0.6 * (calls - 1)


async def test_a_turn_alone_over_the_budget_clears_its_older_results(caplog: pytest.LogCaptureFixture) -> None:
    messages = tool_heavy_run(7, turns=3, max_calls=4)
    with caplog.at_level(logging.INFO, logger="windowkeeper.context._compaction"):
        _calls, lacking, _ = await drive(messages, 2_500)
    assert lacking > 0  # the documented fallback: the newest results stay, the older ones become pointers
    assert any("turn in progress alone is over the budget" in r.getMessage() for r in caplog.records)


def with_notes_after_results(messages: list[Message]) -> list[Message]:
    """``messages`` with a short user note right after each task's last round of tool results, before the model
    answers: what an Anthropic client's ``[tool_result, text]`` turn reads as (a reminder or a hint sent with the
    results)."""
    out: list[Message] = []
    for i, message in enumerate(messages):
        out.append(message)
        following = messages[i + 1] if i + 1 < len(messages) else None
        if message.role == "tool" and (
            following is None or (following.role == "assistant" and not following.tool_call_ids())
        ):
            out.append(Message.text_message("Note: keep it short.", message_id=f"note-{message.message_id}"))
    return out


@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_a_user_note_sent_with_tool_results_does_not_end_the_turn_in_progress(seed: int) -> None:
    messages = with_notes_after_results(tool_heavy_run(seed))
    counter = default_counter()
    sizes = sorted(counter.count_message(m) for m in messages if m.role == "tool")
    budget = 6 * sizes[len(sizes) // 2]
    manager: TokenBudgetContextManager = TokenBudgetContextManager(
        max_tokens=budget + 1000, reserve_tokens=1000, summarizer=ExtractiveSummarizer(counter=counter), counter=counter
    )
    strategy = ManagedStrategy("budget", manager)
    start = lacking = calls = 0
    for point in call_points(messages):
        view = await strategy.step(messages[start:point])
        start = point
        history = messages[:point]
        calls += 1
        # the task the model is working on: the newest user message that is not a note sent with results
        opened = max(i for i, m in enumerate(history) if m.role == "user" and not str(m.message_id).startswith("note"))
        shown = {(m.message_id, m.text()) for m in view.messages}
        lacking += any((m.message_id, m.text()) not in shown for m in history[opened:] if m.role == "tool")
        assert counter.count_messages(view.messages) <= budget + 100
    assert calls > 40 and lacking == 0
