"""Every manager keeps the prompt it returns within its token budget, as sent (messages, the summary under its
header), with recall on and off, on short two-person turns (where a four-characters-a-token estimate misses) and
on agent sessions; the one documented exception is a newest user turn that alone is larger."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from itertools import pairwise
from typing import Any

import pytest

from windowkeeper.blocks import ToolCallBlock, ToolResultBlock
from windowkeeper.context import MessageContextManager, SummaryContextManager, TokenBudgetContextManager
from windowkeeper.context.base import BaseContextManager
from windowkeeper.context.recall import is_recall
from windowkeeper.evaluation.lineup import memory_thresholds
from windowkeeper.evaluation.replay import assembled, call_points, unit_floor
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


def with_instructions(messages: Sequence[Message], tokens: int) -> list[Message]:
    """``messages`` after a system message of about ``tokens`` tokens (an agent's long instructions)."""
    rules = " ".join(f"Rule {i}: confirm the booking code before changing seat {i}." for i in range(tokens // 12))
    return [Message.text_message(rules, role="system", message_id="instructions"), *messages]


@pytest.mark.parametrize("name", ["summary", "summary+recall", "memory", "memory+recall", "budget+recall"])
async def test_only_a_newest_unit_larger_than_the_budget_sends_a_prompt_over_it(name: str) -> None:
    """Long instructions take most of the budget, and the tool results of the turn in progress grow past what the
    running summary leaves: the summary (or, in the memory, deeper summarizing) gives way, and only a prompt whose
    newest unit, with the instructions and the request that opened its turn, is itself over may stay over."""
    budget = 2_000
    session = generate_session_for_tokens(14_000, seed=3, output_scale=0.3)
    steps = call_steps(with_instructions(session.messages, 1_100))
    avoidable, unavoidable = await overs(MANAGERS[name](budget), steps, budget)
    assert avoidable == [], f"{name}: {len(avoidable)} of {len(steps) + 1} prompts over though their unit fits"
    assert unavoidable < len(steps) // 4  # the data is not all one long unit


async def overs(manager: BaseContextManager[Any], steps: list[list[Message]], budget: int) -> tuple[list[int], int]:
    """The sizes of the prompts over ``budget`` that a smaller prompt for the same turn would have fit (the
    question included), and how many more were over because their newest unit alone is (`unit_floor`)."""
    strategy = ManagedStrategy("m", manager)
    counter = default_counter()
    avoidable: list[int] = []
    unavoidable = 0
    for step in [*steps, [Message.text_message("What did we decide about the retry?", message_id="question")]]:
        view = await strategy.step(step)
        size = assembled(view, counter).input_tokens
        if size > budget:
            if unit_floor(view, counter) > budget:
                unavoidable += 1
            else:
                avoidable.append(size)
    return avoidable, unavoidable


@pytest.mark.parametrize("name", ["memory", "memory+recall"])
async def test_the_memory_cuts_its_summary_as_far_as_it_goes_beside_a_turn_nearly_the_budget(
    name: str, caplog: pytest.LogCaptureFixture
) -> None:
    """One request nearly as large as the budget: the memory's summary is cut down to its first line to make room,
    and the prompt is over only by what that line costs (the second case the threshold cannot hold: the memory
    never drops a summary, whose events have no other stand-in in the view); the log says so."""
    steps = user_steps(long_reply_chat(12))
    long_request = " ".join(f"Line {k}: the Lisbon invoice {k} is {k * 17} EUR." for k in range(100))
    steps.append([Message.text_message(long_request, message_id="long")])
    steps.append([Message.text_message("Noted.", role="assistant", message_id="noted")])
    counter = default_counter()
    floor = counter.count_messages([steps[-2][0], steps[-1][0]])
    assert BUDGET - 60 < floor <= BUDGET, floor  # the turn fits alone, not with any summary
    manager = MANAGERS[name](BUDGET)
    with caplog.at_level(logging.INFO, logger="windowkeeper.memory.base"):
        avoidable, _ = await overs(manager, steps, BUDGET)
    assert avoidable and max(avoidable) <= floor + 120, avoidable  # the turn, the summary header and first line
    assert any("shortened 1 summaries" in r.getMessage() for r in caplog.records)
    assert any("over pre_rot_threshold" in r.getMessage() for r in caplog.records)


async def test_the_summary_gives_way_to_the_turn_in_progress(caplog: pytest.LogCaptureFixture) -> None:
    """A turn whose results fit the budget beside the instructions, but not beside the running summary as well:
    the summary is shortened to the room the turn leaves (logged), not sent over the budget."""
    budget = 1_200
    manager = SummaryContextManager(model="extractive", max_messages=None, token_budget=budget, keep_recent=2)
    facts = [f"Invoice {i} for the Lisbon office was paid on day {i} by card {1000 + i}." for i in range(60)]
    steps: list[list[Message]] = []
    for i, fact in enumerate(facts):
        steps.append([Message.text_message(fact, message_id=f"u{i}")])
        steps.append([Message.text_message(f"Noted invoice {i}.", role="assistant", message_id=f"a{i}")])
    report = " ".join(f"row {k}: invoice {k} settled, amount {k * 13} EUR." for k in range(70))
    steps.append([Message.text_message("Please read the payment report.", message_id="u-last")])
    steps.append(
        [
            Message(role="assistant", content=[ToolCallBlock(id="c1", name="read_report", args={})], message_id="a1"),
            Message.tool_message([ToolResultBlock(call_id="c1", output=report)], message_id="t1"),
        ]
    )
    strategy = ManagedStrategy("m", manager)
    counter = default_counter()
    with caplog.at_level(logging.INFO, logger="windowkeeper.context.summary"):
        views = [await strategy.step(step) for step in steps]
    before, last = views[-2], views[-1]
    assert before.summary and last.summary
    assert assembled(before, counter).input_tokens + counter.count_text(report) > budget  # it would not fit whole
    assert assembled(last, counter).input_tokens <= budget
    assert counter.count_text(last.summary) < counter.count_text(before.summary)
    assert any("running summary" in r.getMessage() for r in caplog.records)
