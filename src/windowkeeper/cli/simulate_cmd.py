"""``windowkeeper simulate``: the demo's comparison on recorded trajectories, aggregated over all of them."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from ..evaluation.lineup import standard_lineup
from ..evaluation.replay import ReplayReport, StrategyReport, replay
from ..io import Conversation


def _merge(into: list[StrategyReport] | None, report: ReplayReport) -> list[StrategyReport]:
    if into is None:
        into = [StrategyReport(r.name) for r in report.strategies]
    for total, part in zip(into, report.strategies, strict=True):
        total.calls.extend(part.calls)
        total.seconds += part.seconds
        total.problems.extend(part.problems[: max(0, 5 - len(total.problems))])
    return into


def run_simulate(
    conversations: list[Conversation], *, budget: int, on_done: Callable[[int, int], None] | None = None
) -> ReplayReport | None:
    """Replay every conversation through the standard lineup; None when there was nothing to replay."""
    totals: list[StrategyReport] | None = None
    calls = 0
    prices = None
    for done, conversation in enumerate(conversations, start=1):
        report = asyncio.run(replay(conversation.messages, standard_lineup(budget)))
        if report.calls:
            totals = _merge(totals, report)
            calls += report.calls
            prices = report.prices
        if on_done is not None:
            on_done(done, len(conversations))
    if totals is None or prices is None:
        return None
    return ReplayReport(totals, calls, prices)
