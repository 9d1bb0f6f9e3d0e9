"""Compare every context strategy on one generated agent session, offline: tokens, cache reuse, cost, facts kept.

`replay` treats each assistant message of the session as a model call whose prompt is everything before it, feeds
each strategy what is new since its previous call, and measures the prompt it would send. `standard_lineup` is the
set the CLI's ``demo`` and ``simulate`` compare, all given the same token budget.

Run: python examples/compare_strategies.py [--steps 80] [--budget 6000]
"""

from __future__ import annotations

import argparse
import asyncio

from windowkeeper.evaluation.lineup import standard_lineup
from windowkeeper.evaluation.pricing import Prices
from windowkeeper.evaluation.replay import replay
from windowkeeper.testing.sessiongen import generate_session


async def main(steps: int, budget: int) -> None:
    session = generate_session(steps, seed=7)
    facts = [f.text for f in session.facts]
    prices = Prices(input_per_mtok=3.00, cached_per_mtok=0.30, label="$3/M input, $0.30/M cached")
    report = await replay(session.messages, standard_lineup(budget), facts=facts, prices=prices)
    print(f"{report.calls} model calls, {len(facts)} facts, budget {budget} tokens, prices {prices.label}")
    header = f"{'strategy':<26}{'tokens sent':>12}{'saved':>8}{'stable':>8}{'no cache':>10}{'cached':>9}"
    print(header + f"{'invalid':>9}{'facts':>8}{'peak':>7}")
    for r in report.strategies:
        print(
            f"{r.name:<26}{r.tokens_sent:>12,}{report.saved_share(r):>8.0%}{r.prefix_stable_share:>8.0%}"
            f"{r.cost(prices, caching=False):>10.4f}{r.cost(prices, caching=True):>9.4f}"
            f"{r.invalid_calls:>9}{r.facts_retained_share:>8.0%}{max(c.tokens for c in r.calls):>7,}"
        )
    by_name = {r.name: r for r in report.strategies}
    budgeted = by_name["TokenBudgetContextManager"]
    window = by_name["sliding window"]
    print(
        f"cost with caching, budget manager vs sliding window: "
        f"{budgeted.cost(prices, caching=True) / window.cost(prices, caching=True):.2f}x"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=80, help="model calls in the generated session")
    parser.add_argument("--budget", type=int, default=6000, help="prompt token budget of the budgeted strategies")
    args = parser.parse_args()
    asyncio.run(main(args.steps, args.budget))
