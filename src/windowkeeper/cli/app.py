"""The ``windowkeeper`` command line: demo, inspect, compact, simulate.

Commands import their machinery lazily so ``windowkeeper --help`` stays instant.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from ..errors import WindowkeeperError

app = typer.Typer(
    name="windowkeeper",
    help="Keep an LLM agent's conversation inside its context window: measure, trim, compact, summarize.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
console = Console(width=None if Console().is_terminal else 150)
err_console = Console(stderr=True)

STRATEGIES = ("budget", "summary", "message", "window")


def _fail(exc: Exception) -> typer.Exit:
    err_console.print(f"[bold red]error:[/] {exc}", soft_wrap=True)
    return typer.Exit(code=2)


@app.callback()
def _root(
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log what the managers do.")] = False,
) -> None:
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s"
    )


@app.command()
def demo(
    steps: Annotated[int, typer.Option(min=10, help="Model calls in the generated agent session.")] = 400,
    budget: Annotated[int, typer.Option(min=1000, help="Token budget for the budgeted strategies.")] = 32_000,
    seed: Annotated[int, typer.Option(help="Seed of the session generator.")] = 0,
    chart: Annotated[Path, typer.Option(help="Where to write the PNG chart of tokens per call.")] = Path(
        "windowkeeper-demo.png"
    ),
) -> None:
    """Replay a generated coding-agent session through every strategy and compare them (offline)."""
    from .demo import run_demo

    try:
        run_demo(console, steps=steps, budget=budget, seed=seed, chart=chart)
    except WindowkeeperError as exc:
        raise _fail(exc) from exc


@app.command()
def inspect(
    file: Annotated[Path, typer.Argument(help="A conversation: OpenAI chat list, Anthropic request, or our JSON.")],
    fmt: Annotated[str, typer.Option("--format", help="auto, openai, anthropic or windowkeeper.")] = "auto",
    reserve: Annotated[int, typer.Option(help="Response reserve shown as its own zone.")] = 2000,
) -> None:
    """Token breakdown of a conversation by zone and by role (exact o200k counts)."""
    from .inspect_cmd import run_inspect

    try:
        run_inspect(console, file, fmt=fmt, reserve=reserve)
    except WindowkeeperError as exc:
        raise _fail(exc) from exc


@app.command()
def compact(
    file: Annotated[Path, typer.Argument(help="The conversation to compact.")],
    strategy: Annotated[str, typer.Option(help=f"One of: {', '.join(STRATEGIES)}.")] = "budget",
    budget: Annotated[int, typer.Option(min=500, help="Target token budget of the result.")] = 8000,
    out: Annotated[Path, typer.Option("-o", "--out", help="Where to write the compacted conversation.")] = Path(
        "compacted.json"
    ),
    fmt: Annotated[
        str, typer.Option("--format", help="Input format: auto, openai, anthropic or windowkeeper.")
    ] = "auto",
    out_format: Annotated[str, typer.Option(help="Output format: windowkeeper, openai or anthropic.")] = "windowkeeper",
) -> None:
    """Apply one strategy to a conversation file and write the view that would be sent."""
    from .compact_cmd import run_compact

    if strategy not in STRATEGIES:
        raise _fail(ValueError(f"--strategy {strategy!r} is unknown; use one of {', '.join(STRATEGIES)}"))
    try:
        run_compact(console, file, strategy=strategy, budget=budget, out=out, fmt=fmt, out_format=out_format)
    except WindowkeeperError as exc:
        raise _fail(exc) from exc


@app.command()
def simulate(
    path: Annotated[Path, typer.Argument(help="Trajectories: a tau-bench JSON, SWE-agent .traj files, or a folder.")],
    budget: Annotated[int, typer.Option(min=500, help="Token budget for the budgeted strategies.")] = 4000,
    limit: Annotated[int | None, typer.Option(help="Replay at most this many trajectories.")] = None,
) -> None:
    """Like demo, on real recorded trajectories, aggregated over all of them."""
    from .simulate_cmd import run_simulate

    try:
        run_simulate(console, path, budget=budget, limit=limit)
    except WindowkeeperError as exc:
        raise _fail(exc) from exc


def main() -> None:
    app()


__all__ = ["app", "main"]
