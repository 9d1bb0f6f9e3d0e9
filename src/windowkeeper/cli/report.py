"""Rendering replay reports: a rich table, a stable JSON form, and a PNG chart of tokens per call with the budget."""

from __future__ import annotations

import io
from typing import TYPE_CHECKING, Any

from rich.table import Table

from ..evaluation.replay import ReplayReport, StrategyReport

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def report_table(report: ReplayReport, *, title: str, budget: int) -> Table:
    """The comparison as a terminal table, with the columns of the documented one: calls over ``budget`` among them
    (without it the unmanaged run, which sends everything, looked like the best on every column)."""
    prices = report.prices
    table = Table(title=title, caption=f"cost = estimated input cost at {prices.label}", title_justify="left")
    table.add_column("strategy", style="bold", no_wrap=True)
    table.add_column("tokens sent", justify="right")
    table.add_column("% saved", justify="right")
    table.add_column("prefix-stable calls", justify="right", min_width=13)
    table.add_column("cost, no cache", justify="right", max_width=10)
    table.add_column("cost, with cache", justify="right", max_width=10)
    table.add_column("invalid sequences", justify="right", max_width=9)
    table.add_column("facts retained", justify="right", no_wrap=True)
    table.add_column("calls over budget", justify="right", max_width=10)
    table.add_column("time in strategy", justify="right", max_width=8)
    for r in report.strategies:
        invalid = r.invalid_calls
        over = _over_budget(r, budget)
        table.add_row(
            r.name,
            f"{r.tokens_sent:,}",
            f"{100 * report.saved_share(r):.1f}%",
            f"{100 * r.prefix_stable_share:.1f}%",
            f"${r.cost(prices, caching=False):,.2f}",
            f"${r.cost(prices, caching=True):,.2f}",
            f"[red]{invalid}[/]" if invalid else "0",
            f"{r.facts_retained}/{r.facts_total} ({100 * r.facts_retained_share:.0f}%)" if r.facts_total else "-",
            f"[red]{over:,}[/]" if over else "0",
            f"{r.seconds:.2f}s",
        )
    return table


def _over_budget(r: StrategyReport, budget: int) -> int:
    return sum(1 for c in r.calls if c.tokens > budget)


def report_json(report: ReplayReport, *, budget: int) -> list[dict[str, Any]]:
    """One object per strategy (the ``strategies`` array of the demo and simulate JSON documents)."""
    prices = report.prices
    return [
        {
            "name": r.name,
            "calls": len(r.calls),
            "tokens_sent": r.tokens_sent,
            "saved_share": round(report.saved_share(r), 6),
            "prefix_stable_share": round(r.prefix_stable_share, 6),
            "cost_no_cache_usd": round(r.cost(prices, caching=False), 6),
            "cost_with_cache_usd": round(r.cost(prices, caching=True), 6),
            "invalid_calls": r.invalid_calls,
            "calls_over_budget": _over_budget(r, budget),
            "max_call_tokens": max((c.tokens for c in r.calls), default=0),
            "facts_retained": r.facts_retained,
            "facts_total": r.facts_total,
            "seconds": round(r.seconds, 4),
            "problems": list(r.problems),
        }
        for r in report.strategies
    ]


def chart_figure(report: ReplayReport, *, title: str, budget: int) -> Figure:
    """Tokens sent per call, one line per strategy, and the prompt budget as a dashed line (log scale, so the
    budgeted lines stay readable next to the unmanaged one). A strategy above the dashed line missed its budget.
    The caller closes the figure (``matplotlib.pyplot.close``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 5.5), dpi=110)
    for r in report.strategies:
        ax.plot(range(1, len(r.calls) + 1), [max(1, c.tokens) for c in r.calls], label=r.name, linewidth=1.4)
    ax.axhline(budget, color="black", linestyle="--", linewidth=1.2, label=f"budget ({budget:,} tokens)")
    ax.set_yscale("log")
    ax.set_xlabel("model call")
    ax.set_ylabel("input tokens sent (log scale)")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    return fig


def chart_png(report: ReplayReport, *, title: str, budget: int) -> bytes:
    """`chart_figure` rendered as PNG bytes."""
    import matplotlib.pyplot as plt

    fig = chart_figure(report, title=title, budget=budget)
    try:
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png")
    finally:
        plt.close(fig)
    return buffer.getvalue()
