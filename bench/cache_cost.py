"""Input cost with prompt caching, and prefix stability, on real agent traces extended to hundreds of calls.

tau-bench airline trajectories and SWE-agent trajectories are each chained into one long session
(`chain_trajectories`) and replayed call by call through the standard line-up of strategies at a few prompt
budgets (`windowkeeper.evaluation.replay`). For every call the replay compares the prompt with the same strategy's
previous prompt: the shared leading messages are what a provider's prompt cache serves. "cost cached" uses the
replay's simple prices (cache reads at a tenth of fresh input, every shared prefix served). The provider columns
apply each provider's real rules (`windowkeeper.evaluation.pricing.PROVIDER_CACHE_RULES`: minimum cacheable
prefix, increments, Anthropic's cache-write premium, expiry after ``--seconds-between-calls`` of inactivity) to
every strategy, and the summary line compares the budget manager with every other strategy under each.

Targets (issue 6): on a 400-call session the budget manager keeps the prefix byte-identical on >= 90% of calls,
and its input cost with caching is >= 50% below the per-turn sliding window's at the same budget.

    python bench/cache_cost.py [--calls 400] [--budgets 8000 16000 32000] [--sources tau swe] [--no-memory]
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Sequence
from typing import Any

from _common import chained, fresh_counter, print_table

from windowkeeper.evaluation.lineup import standard_lineup
from windowkeeper.evaluation.pricing import PROVIDER_CACHE_RULES, Prices, bill_calls
from windowkeeper.evaluation.replay import ReplayReport, replay

BUDGET_MANAGER = "TokenBudgetContextManager"
SLIDING = "sliding window"
TARGET_STABLE = 0.90
TARGET_SAVING = 0.50


def provider_costs(report: ReplayReport, interval: float) -> dict[str, dict[str, float]]:
    """Cost of each strategy under each provider's cache rules: ``{strategy: {provider: dollars}}``."""
    return {
        s.name: {
            name: bill_calls(((c.tokens, c.cached_tokens) for c in s.calls), rules, seconds_between_calls=interval).cost
            for name, rules in PROVIDER_CACHE_RULES.items()
        }
        for s in report.strategies
    }


def summarize(report: ReplayReport, interval: float) -> list[list[object]]:
    rows: list[list[object]] = []
    by_provider = provider_costs(report, interval)
    for s in report.strategies:
        rows.append(
            [
                s.name,
                s.tokens_sent,
                f"{100 * report.saved_share(s):.1f}%",
                f"${s.cost(report.prices, caching=False):.3f}",
                f"${s.cost(report.prices, caching=True):.3f}",
                *(f"${by_provider[s.name][p]:.3f}" for p in PROVIDER_CACHE_RULES),
                f"{100 * s.prefix_stable_share:.1f}%",
                s.invalid_calls,
                f"{s.seconds:.2f}",
            ]
        )
    return rows


def versus_all(report: ReplayReport, interval: float) -> str:
    """How much the budget manager saves against every other strategy, under each provider's rules."""
    costs = provider_costs(report, interval)
    ours = costs[BUDGET_MANAGER]
    parts = []
    for provider in PROVIDER_CACHE_RULES:
        deltas = ", ".join(
            f"{name} {100 * (1 - ours[provider] / other[provider]):+.0f}%"
            for name, other in costs.items()
            if name != BUDGET_MANAGER and other[provider] > 0
        )
        parts.append(f"  {provider}: budget manager saves vs {deltas}")
    return "\n".join(parts)


def targets(report: ReplayReport) -> dict[str, float]:
    by_name = {s.name: s for s in report.strategies}
    ours, sliding = by_name[BUDGET_MANAGER], by_name[SLIDING]
    ours_cost = ours.cost(report.prices, caching=True)
    sliding_cost = sliding.cost(report.prices, caching=True)
    return {
        "stable": ours.prefix_stable_share,
        "saving_vs_sliding": 1.0 - ours_cost / sliding_cost if sliding_cost else 0.0,
        "invalid": float(sum(s.invalid_calls for s in report.strategies)),
    }


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=400, help="model calls per session (default 400)")
    parser.add_argument("--budgets", type=int, nargs="+", default=[8000, 16000, 32000])
    parser.add_argument("--sources", nargs="+", choices=("tau", "swe"), default=["tau", "swe"])
    parser.add_argument(
        "--providers",
        nargs="+",
        choices=("openai", "anthropic"),
        default=["openai", "anthropic"],
        help="validity rules each prompt is checked against (problems the recorded history already has, such as "
        "tau-bench's reused call ids under Anthropic's rules, are not charged to a strategy)",
    )
    parser.add_argument("--no-memory", action="store_true", help="leave the three-tier memory out of the line-up")
    parser.add_argument(
        "--seconds-between-calls", type=float, default=20.0, help="time between model calls, for cache expiry"
    )
    args = parser.parse_args(argv)
    if args.calls < 2:
        parser.error("--calls must be at least 2")

    prices = Prices()
    counter = fresh_counter()
    results: dict[str, Any] = {}
    for source in args.sources:
        session = chained(source, args.calls)
        total = counter.count_messages(session)
        for budget in args.budgets:
            lineup = standard_lineup(budget, counter=counter, memory=not args.no_memory)
            report = asyncio.run(
                replay(session, lineup, counter=counter, prices=prices, providers=args.providers, max_calls=args.calls)
            )
            print_table(
                [
                    "strategy",
                    "tokens sent",
                    "saved",
                    "cost",
                    "cost cached",
                    *PROVIDER_CACHE_RULES,
                    "prefix-stable",
                    "invalid",
                    "CPU s",
                ],
                summarize(report, args.seconds_between_calls),
                title=f"\n{source}: {report.calls} calls, {len(session):,} messages, {total:,} tokens; "
                f"budget {budget:,}; {prices.label}; validity: {', '.join(args.providers)}",
            )
            t = targets(report)
            ok_stable = t["stable"] >= TARGET_STABLE
            ok_saving = t["saving_vs_sliding"] >= TARGET_SAVING
            print(
                f"budget manager: prefix-stable {100 * t['stable']:.1f}% "
                f"({'meets' if ok_stable else 'BELOW'} {100 * TARGET_STABLE:.0f}%), cached cost "
                f"{100 * t['saving_vs_sliding']:.1f}% below the sliding window "
                f"({'meets' if ok_saving else 'BELOW'} {100 * TARGET_SAVING:.0f}%); invalid calls, all strategies: "
                f"{int(t['invalid'])}"
            )
            print(versus_all(report, args.seconds_between_calls))
            for s in report.strategies:
                for problem in s.problems[:2]:
                    print(f"  invalid in {s.name}: {problem}")
            results[f"{source}@{budget}"] = t
    return results


if __name__ == "__main__":
    main()
