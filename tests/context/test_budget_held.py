"""Every manager keeps the prompt it returns within its token budget, as sent (messages, the summary under its
header), with recall on and off, on short two-person turns (where a four-characters-a-token estimate misses) and
on agent sessions; the one documented exception is a newest user turn that alone is larger."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from itertools import pairwise
from typing import Any

import pytest

from windowkeeper.context import MessageContextManager, SummaryContextManager, TokenBudgetContextManager
from windowkeeper.context.base import BaseContextManager
from windowkeeper.context.recall import is_recall
from windowkeeper.evaluation.lineup import memory_thresholds
from windowkeeper.evaluation.replay import assembled, call_points
from windowkeeper.evaluation.strategies import ManagedStrategy, View
from windowkeeper.memory import InMemoryMemory, MemoryContextManager
from windowkeeper.messages import Message
from windowkeeper.summarize import ExtractiveSummarizer
from windowkeeper.testing.dialoguegen import generate_dialogue
from windowkeeper.testing.sessiongen import generate_session_for_tokens
from windowkeeper.tokens import default_counter

BUDGET = 1_500
Factory = Callable[[int], BaseContextManager[Any]]

MANAGERS: dict[str, Factory] = {
    "summary": lambda b: SummaryContextManager(model="extractive", max_messages=None, token_budget=b, keep_recent=8),
    "summary+recall": lambda b: SummaryContextManager(
        model="extractive", max_messages=None, token_budget=b, keep_recent=8, recall=True
    ),
    "message+recall": lambda b: MessageContextManager(max_messages=5, recall=True, recall_budget=b),
    "memory": lambda b: MemoryContextManager(InMemoryMemory(thresholds=memory_thresholds(b))),
    "memory+recall": lambda b: MemoryContextManager(InMemoryMemory(thresholds=memory_thresholds(b)), recall=True),
    "budget": lambda b: TokenBudgetContextManager(
        max_tokens=b + 500, reserve_tokens=500, summarizer=ExtractiveSummarizer(), recall=False
    ),
    "budget+recall": lambda b: TokenBudgetContextManager(
        max_tokens=b + 500, reserve_tokens=500, summarizer=ExtractiveSummarizer()
    ),
}


def user_steps(messages: Sequence[Message]) -> list[list[Message]]:
    steps: list[list[Message]] = []
    for msg in messages:
        if msg.role == "user" or not steps:
            steps.append([])
        steps[-1].append(msg)
    return steps


def call_steps(messages: Sequence[Message]) -> list[list[Message]]:
    points = [0, *call_points(messages), len(messages)]
    return [list(messages[a:b]) for a, b in pairwise(points) if b > a]


async def sizes(manager: BaseContextManager[Any], steps: list[list[Message]], question: str) -> list[tuple[int, int]]:
    """Each prompt's exact size and how many user messages it holds."""
    strategy = ManagedStrategy("m", manager)
    counter = default_counter()
    out: list[tuple[int, int]] = []
    for step in [*steps, [Message.text_message(question, role="user", message_id="question")]]:
        view: View = await strategy.step(step)
        users = sum(m.role == "user" and not is_recall(m) for m in view.messages)
        out.append((assembled(view, counter).input_tokens, users))
    return out


@pytest.mark.parametrize("name", sorted(MANAGERS))
async def test_no_prompt_over_budget_on_a_two_person_chat(name: str) -> None:
    dialogue = generate_dialogue(9_000, seed=5)
    question = dialogue.facts[0].question
    got = [size for size, _ in await sizes(MANAGERS[name](BUDGET), user_steps(dialogue.messages), question)]
    assert max(got) <= BUDGET, f"{name}: {sum(s > BUDGET for s in got)} of {len(got)} prompts over, max {max(got)}"


@pytest.mark.parametrize("name", ["summary", "summary+recall", "memory+recall", "budget+recall"])
async def test_no_prompt_over_budget_on_an_agent_session(name: str) -> None:
    session = generate_session_for_tokens(14_000, seed=2, output_scale=0.3)
    budget = 3_000
    got = await sizes(MANAGERS[name](budget), call_steps(session.messages), "What did we decide about the retry?")
    over = [(size, users) for size, users in got if size > budget]
    if name.startswith("summary"):
        # the documented exception: the turn in progress (one request and its tool steps) alone is larger; the
        # summary manager never cuts inside it
        assert all(users == 1 for _, users in over), [o for o in over if o[1] != 1]
    else:
        assert over == [], f"{name}: {len(over)} of {len(got)} prompts over: {over[:3]}"


async def test_the_summary_manager_logs_the_one_prompt_it_cannot_fit(caplog: pytest.LogCaptureFixture) -> None:
    manager = MANAGERS["summary"](300)
    long_request = "Please check these numbers: " + " ".join(f"shard {i} answered in {i * 7} ms" for i in range(80))
    steps = [
        [Message.text_message("hello there", role="user", message_id="u0")],
        [Message.text_message("hi, what do you need?", role="assistant", message_id="a0")],
        [Message.text_message(long_request, role="user", message_id="u1")],
    ]
    with caplog.at_level(logging.INFO, logger="windowkeeper.context.summary"):
        got = await sizes(manager, steps, "and?")
    assert got[-2][0] > 300 and got[-2][1] == 1  # the newest request alone is over: kept whole, never summarized
    assert any("newest user turn" in r.getMessage() for r in caplog.records)


def long_reply_chat(turns: int) -> list[Message]:
    """Short questions and long advice replies (the shape of LongMemEval chat): ten events are over the budget."""
    out: list[Message] = []
    for t in range(turns):
        out.append(Message.text_message(f"Question {t}: how should I plan week {t} of training?", message_id=f"u{t}"))
        advice = " ".join(f"Step {k}: run {k + t} km at an easy pace and stretch for {k} minutes." for k in range(30))
        out.append(Message.text_message(advice, role="assistant", message_id=f"a{t}"))
    return out


@pytest.mark.parametrize("name", ["memory", "memory+recall", "summary", "budget"])
async def test_no_prompt_over_budget_when_the_recent_events_alone_are_larger(name: str) -> None:
    got = await sizes(MANAGERS[name](BUDGET), user_steps(long_reply_chat(30)), "What did I plan for week 3?")
    over = [size for size, _ in got if size > BUDGET]
    assert over == [], f"{name}: {len(over)} of {len(got)} prompts over, max {max(over)}"
