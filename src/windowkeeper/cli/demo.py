"""``windowkeeper demo``: a generated long coding-agent session replayed through every strategy, offline."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ..evaluation.lineup import standard_lineup
from ..evaluation.replay import replay
from ..evaluation.sessiongen import generate_session
from .report import report_table, write_chart


def run_demo(console: Console, *, steps: int, budget: int, seed: int, chart: Path) -> None:
    started = time.perf_counter()
    session = generate_session(steps, seed=seed)
    console.print(
        f"Generated a coding-agent session: [bold]{len(session.messages)}[/] messages, "
        f"{sum(1 for m in session.messages if m.role == 'assistant')} model calls, "
        f"{len(session.facts)} ground-truth facts (seed {seed})."
    )
    strategies = standard_lineup(budget)
    with Progress(
        TextColumn("replaying"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=console, transient=True
    ) as progress:
        task = progress.add_task("calls", total=None)

        def on_call(done: int, total: int) -> None:
            progress.update(task, completed=done, total=total)

        report = asyncio.run(
            replay(session.messages, strategies, facts=[f.text for f in session.facts], on_call=on_call)
        )
    title = f"{report.calls} model calls of a generated coding-agent session, budget {budget:,} tokens"
    console.print(report_table(report, title=title))
    path = write_chart(report, chart, title=title)
    invalid = sum(r.invalid_calls for r in report.strategies)
    status = "[green]every sequence valid for OpenAI and Anthropic[/]" if not invalid else f"[red]{invalid} invalid[/]"
    console.print(f"{status}; chart written to [bold]{path}[/] in {time.perf_counter() - started:.1f}s")
    for r in report.strategies:
        for problem in r.problems:
            console.print(f"  [red]{r.name}[/]: {problem}")


__all__ = ["run_demo"]
