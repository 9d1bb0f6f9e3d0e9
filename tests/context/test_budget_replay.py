"""A generated 400-call agent session replayed call by call: prefix stability and cost with prompt caching.

Cost model: every prompt token is billed, except that the part of a prompt identical to the start of the previous
prompt (whole messages, compared by fingerprint) is a cache read billed at 10% of the price.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pytest

from windowkeeper.context.baselines import sliding_window
from windowkeeper.context.budget import TokenBudgetContextManager
from windowkeeper.context.zones import summary_message
from windowkeeper.messages import Message
from windowkeeper.state import AgentState, add_messages
from windowkeeper.summarize import ExtractiveSummarizer
from windowkeeper.testing.sessiongen import generate_session
from windowkeeper.tokens import default_counter
from windowkeeper.units import validate

CALLS = 400
MAX_TOKENS = 32_000
RESERVE = 2_000
CACHED_PRICE = 0.1
COUNTER = default_counter()


@dataclass
class Replay:
    tokens: int = 0
    cached: int = 0
    stable: int = 0
    compared: int = 0
    invalid: int = 0

    @property
    def cost(self) -> float:
        return (self.tokens - self.cached) + CACHED_PRICE * self.cached

    @property
    def stable_share(self) -> float:
        return self.stable / self.compared


def prompt(messages: Sequence[Message], summary: str | None) -> list[Message]:
    """What the model receives: leading system messages, the summary in the system zone, then the rest."""
    if not summary:
        return list(messages)
    split = 0
    while split < len(messages) and messages[split].role == "system":
        split += 1
    return [*messages[:split], summary_message(summary), *messages[split:]]


def measure(prompts: Sequence[list[Message]]) -> Replay:
    out = Replay()
    previous: list[tuple[str, int]] | None = None
    for messages in prompts:
        items = [(m.fingerprint(), COUNTER.count_message(m)) for m in messages]
        out.tokens += sum(n for _, n in items) + COUNTER.count_messages([])
        if validate(messages, "openai") or validate(messages, "anthropic"):
            out.invalid += 1
        if previous is not None:
            shared = 0
            same = 0
            for (fp_prev, _), (fp_now, n) in zip(previous, items, strict=False):
                if fp_prev != fp_now:
                    break
                shared += n
                same += 1
            out.cached += shared
            out.compared += 1
            out.stable += same == len(previous)
        previous = items
    return out


@pytest.fixture(scope="module")
def session() -> list[Message]:
    messages = generate_session(CALLS + 20, seed=7).messages
    COUNTER.count_messages(messages)  # price once up front; the replays below then hit the memo
    return messages


def call_points(messages: Sequence[Message]) -> list[int]:
    return [i for i, m in enumerate(messages) if m.role == "assistant" and i > 0][:CALLS]


def replay_budget(messages: list[Message], manager: TokenBudgetContextManager[AgentState]) -> list[list[Message]]:
    state = AgentState()
    start = 0
    prompts = []
    for point in call_points(messages):
        state.context = add_messages(state.context, messages[start:point])
        start = point
        state = manager.trim_context(state)
        prompts.append(prompt(state.context, state.context_summary))
    return prompts


def replay_sliding(messages: list[Message]) -> list[list[Message]]:
    return [sliding_window(messages[:point], MAX_TOKENS - RESERVE, counter=COUNTER) for point in call_points(messages)]


def test_budget_manager_beats_the_sliding_window_with_prompt_caching(session: list[Message]) -> None:
    assert len(call_points(session)) == CALLS
    manager: TokenBudgetContextManager[AgentState] = TokenBudgetContextManager(MAX_TOKENS, RESERVE, counter=COUNTER)
    budget = measure(replay_budget(session, manager))
    sliding = measure(replay_sliding(session))
    summarizing: TokenBudgetContextManager[AgentState] = TokenBudgetContextManager(
        MAX_TOKENS, RESERVE, counter=COUNTER, summarizer=ExtractiveSummarizer()
    )
    with_summary = measure(replay_budget(session, summarizing))
    saving = 1 - budget.cost / sliding.cost
    print(
        f"\n{CALLS} calls, budget {MAX_TOKENS - RESERVE} tokens, cached tokens at {CACHED_PRICE:.0%} of the price\n"
        f"  sliding window : tokens {sliding.tokens:>10,}  cached {sliding.cached:>10,}  "
        f"stable {sliding.stable_share:6.1%}  cost {sliding.cost:>12,.0f}\n"
        f"  token budget   : tokens {budget.tokens:>10,}  cached {budget.cached:>10,}  "
        f"stable {budget.stable_share:6.1%}  cost {budget.cost:>12,.0f}  ({saving:.1%} below sliding)\n"
        f"  budget+summary : tokens {with_summary.tokens:>10,}  cached {with_summary.cached:>10,}  "
        f"stable {with_summary.stable_share:6.1%}  cost {with_summary.cost:>12,.0f}  "
        f"({1 - with_summary.cost / sliding.cost:.1%} below sliding, "
        f"{summarizing.metrics_total.summaries_made} summaries)\n"
        f"  manager overhead: {manager.metrics_total.duration_s * 1000:.0f} ms for {CALLS} calls"
    )
    assert budget.invalid == sliding.invalid == with_summary.invalid == 0
    assert budget.stable_share >= 0.90
    assert saving >= 0.50
    assert 1 - with_summary.cost / sliding.cost >= 0.50
    totals = manager.metrics_total
    assert totals.calls == CALLS and totals.prefix_stable_calls == budget.stable


def test_every_view_stays_under_the_budget(session: list[Message]) -> None:
    manager: TokenBudgetContextManager[AgentState] = TokenBudgetContextManager(12_000, RESERVE, counter=COUNTER)
    for messages in replay_budget(session, manager):
        assert COUNTER.count_messages(messages) <= manager.budget


def test_sliding_window_keeps_newest_units_within_budget(session: list[Message]) -> None:
    view = sliding_window(session[:300], 6000, counter=COUNTER)
    assert COUNTER.count_messages(view) <= 6000
    assert view[0] is session[0] and view[-1] is session[299]
    assert not validate(view, "anthropic")
    assert sliding_window(session[:3], 100_000, counter=COUNTER) == session[:3]
