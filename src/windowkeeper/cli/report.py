"""Rendering replay reports: a rich table for the terminal and a PNG chart of tokens per call."""

from __future__ import annotations

from pathlib import Path

from rich.table import Table

from ..evaluation.replay import ReplayReport


def report_table(report: ReplayReport, *, title: str) -> Table:
    prices = report.prices
    table = Table(title=title, caption=f"cost = estimated input cost at {prices.label}", title_justify="left")
    table.add_column("strategy", style="bold", no_wrap=True)
    table.add_column("tokens sent", justify="right")
    table.add_column("% saved", justify="right")
    table.add_column("prefix-stable calls", justify="right")
    table.add_column("cost, no cache", justify="right")
    table.add_column("cost, with cache", justify="right")
    table.add_column("invalid sequences", justify="right")
    table.add_column("facts retained", justify="right")
    table.add_column("time in strategy", justify="right")
    for r in report.strategies:
        invalid = r.invalid_calls
        table.add_row(
            r.name,
            f"{r.tokens_sent:,}",
            f"{100 * report.saved_share(r):.1f}%",
            f"{100 * r.prefix_stable_share:.1f}%",
            f"${r.cost(prices, caching=False):,.2f}",
            f"${r.cost(prices, caching=True):,.2f}",
            f"[red]{invalid}[/]" if invalid else "0",
            f"{r.facts_retained}/{r.facts_total} ({100 * r.facts_retained_share:.0f}%)" if r.facts_total else "-",
            f"{r.seconds:.2f}s",
        )
    return table


def write_chart(report: ReplayReport, path: Path, *, title: str) -> Path:
    """Tokens sent per call, one line per strategy (log scale so the budgeted lines stay readable)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 5.5), dpi=110)
    for r in report.strategies:
        ax.plot(range(1, len(r.calls) + 1), [c.tokens for c in r.calls], label=r.name, linewidth=1.4)
    ax.set_yscale("log")
    ax.set_xlabel("model call")
    ax.set_ylabel("input tokens sent (log scale)")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


__all__ = ["report_table", "write_chart"]
