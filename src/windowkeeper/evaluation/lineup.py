"""The set of strategies the demo, ``simulate`` and the benchmarks compare, configured for one token budget."""

from __future__ import annotations

from ..context.budget import TokenBudgetContextManager
from ..context.message import MessageContextManager
from ..context.summary import SummaryContextManager
from ..memory import InMemoryMemory, MemoryContextManager
from ..summarize import ExtractiveSummarizer
from ..tokens import TokenCounter, default_counter
from .strategies import FullHistory, ManagedStrategy, MemoryStrategy, SlidingWindow, Strategy

RESERVE_TOKENS = 2000


def memory_thresholds(budget: int) -> dict[str, int | float]:
    """The three-tier memory's thresholds for a prompt budget of ``budget`` tokens."""
    return {
        "pre_rot_threshold": budget,
        "compaction_trigger": 0.8,
        "summarization_trigger": 0.95,
        "keep_recent_count": 10,
    }


def standard_lineup(
    budget: int, *, counter: TokenCounter | None = None, memory: bool = True, compare_recall: bool = False
) -> list[Strategy]:
    """Every strategy, each given ``budget`` tokens for the prompt where it takes a budget.

    ``compare_recall`` adds the budget manager with recall off ("TokenBudgetContextManager (no recall)") and the
    managers whose recall is off by default with it on ("MessageContextManager(5) (recall)", "SummaryContextManager
    (recall)", "three-tier memory (recall)"), to measure what recall costs and buys in the same run.

    ``budget`` is the prompt budget; the budget manager is given the same by a window of ``budget`` plus its
    response reserve. The summary manager's triggers use its documented 4-characters-a-token estimate.
    """
    tc = counter or default_counter()
    lineup: list[Strategy] = [
        FullHistory(),
        SlidingWindow(budget, counter=tc),
        ManagedStrategy("MessageContextManager(5)", MessageContextManager(max_messages=5)),
        ManagedStrategy(
            "SummaryContextManager",
            SummaryContextManager(model="extractive", max_messages=None, token_budget=budget, keep_recent=8),
        ),
        ManagedStrategy(
            "TokenBudgetContextManager",
            TokenBudgetContextManager(
                max_tokens=budget + RESERVE_TOKENS,
                reserve_tokens=RESERVE_TOKENS,
                counter=tc,
                summarizer=ExtractiveSummarizer(counter=tc),
            ),
        ),
    ]
    if compare_recall:
        lineup.append(
            ManagedStrategy(
                "TokenBudgetContextManager (no recall)",
                TokenBudgetContextManager(
                    max_tokens=budget + RESERVE_TOKENS,
                    reserve_tokens=RESERVE_TOKENS,
                    counter=tc,
                    summarizer=ExtractiveSummarizer(counter=tc),
                    recall=False,
                ),
            )
        )
        lineup.append(
            ManagedStrategy(
                "MessageContextManager(5) (recall)",
                MessageContextManager(max_messages=5, recall=True, recall_budget=budget, counter=tc),
            )
        )
        lineup.append(
            ManagedStrategy(
                "SummaryContextManager (recall)",
                SummaryContextManager(
                    model="extractive", max_messages=None, token_budget=budget, keep_recent=8, recall=True, counter=tc
                ),
            )
        )
    if memory:
        lineup.append(
            MemoryStrategy(
                "three-tier memory",
                InMemoryMemory(thresholds=memory_thresholds(budget), counter=tc),
            )
        )
        if compare_recall:
            lineup.append(
                ManagedStrategy(
                    "three-tier memory (recall)",
                    MemoryContextManager(InMemoryMemory(thresholds=memory_thresholds(budget), counter=tc), recall=True),
                )
            )
    return lineup
