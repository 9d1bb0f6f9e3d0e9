"""``windowkeeper simulate``: the demo's comparison on real recorded trajectories."""

from __future__ import annotations

import asyncio
from pathlib import Path

from rich.console import Console
from rich.progress import track

from ..evaluation.lineup import standard_lineup
from ..evaluation.loaders import load_trajectories
from ..evaluation.replay import ReplayReport, StrategyReport, replay
from .report import report_table


def _merge(into: list[StrategyReport] | None, report: ReplayReport) -> list[StrategyReport]:
    if into is None:
        into = [StrategyReport(r.name) for r in report.strategies]
    for total, part in zip(into, report.strategies, strict=True):
        total.calls.extend(part.calls)
        total.seconds += part.seconds
        total.problems.extend(part.problems[: max(0, 5 - len(total.problems))])
    return into


def run_simulate(console: Console, path: Path, *, budget: int, limit: int | None) -> None:
    trajectories = load_trajectories(path, limit=limit)
    console.print(f"Loaded [bold]{len(trajectories)}[/] trajectories from {path}.")
    totals: list[StrategyReport] | None = None
    calls = 0
    prices = None
    for _name, messages in track(trajectories, description="replaying", console=console, transient=True):
        report = asyncio.run(replay(messages, standard_lineup(budget)))
        totals = _merge(totals, report)
        calls += report.calls
        prices = report.prices
    if totals is None or prices is None:
        console.print("No trajectories found.")
        return
    merged = ReplayReport(totals, calls, prices)
    console.print(
        report_table(merged, title=f"{len(trajectories)} trajectories, {calls} model calls, budget {budget:,}")
    )


__all__ = ["run_simulate"]
