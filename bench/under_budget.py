"""The budget manager when nothing needs trimming: each call against the floor of counting its new messages.

Sessions that fit the budget (each tau-bench airline trajectory, or generated coding-agent sessions of a few
dozen calls, at a 64k budget) are replayed call by call: before each model call the manager receives its view
plus the new messages, as in an agent loop. The floor tokenizes each new message once with a fresh exact counter
and does nothing else, which any manager must do. CPU time, both in the same process, fastest of ``--repeats``.

    python bench/under_budget.py [--budget 64000] [--source tau|generated] [--sessions 50] [--repeats 3]

Target: the manager at most 1.5x the floor, with its defaults (recall on) and with recall off.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Sequence

from _common import TAU_FILE, CpuClock, call_chunks, fresh_counter, print_table, require_data

from windowkeeper.context.budget import TokenBudgetContextManager
from windowkeeper.evaluation.loaders import load_trajectories
from windowkeeper.messages import Message
from windowkeeper.state import AgentState, ExecMeta, add_messages
from windowkeeper.testing.sessiongen import generate_session

TARGET = 1.5
RESERVE = 2000


def sessions(source: str, count: int) -> list[list[list[Message]]]:
    if source == "tau":
        found = [msgs for _, msgs in load_trajectories(require_data(TAU_FILE))][:count]
    else:
        found = [generate_session(30, seed=seed).messages for seed in range(count)]
    return [call_chunks(messages, 10**9) for messages in found]


async def ours(chunked: Sequence[Sequence[Sequence[Message]]], budget: int, recall: bool) -> tuple[float, int]:
    counter = fresh_counter()
    manager: TokenBudgetContextManager[AgentState] = TokenBudgetContextManager(
        budget + RESERVE, RESERVE, counter=counter, recall=recall
    )
    clock = CpuClock()
    trimmed = 0
    for n, chunks in enumerate(chunked):
        state = AgentState(execution_meta=ExecMeta(thread_id=f"s{n}"))
        for chunk in chunks:
            state.context = add_messages(state.context, list(chunk))
            with clock.timing():
                state = await manager.atrim_context(state)
            metrics = manager.last_metrics
            trimmed += bool(metrics and metrics.tokens_saved)
    return clock.seconds, trimmed


def floor(chunked: Sequence[Sequence[Sequence[Message]]]) -> float:
    counter = fresh_counter()
    clock = CpuClock()
    for chunks in chunked:
        for chunk in chunks:
            with clock.timing():
                for message in chunk:
                    counter.count_message_uncached(message)
    return clock.seconds


def main(argv: Sequence[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--budget", type=int, default=64_000)
    parser.add_argument("--source", choices=("tau", "generated"), default="tau")
    parser.add_argument("--sessions", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    best = {"recall on": float("inf"), "recall off": float("inf"), "floor": float("inf")}
    calls = trimmed = 0
    for _ in range(args.repeats):
        chunked = sessions(args.source, args.sessions)  # fresh objects each repeat: nothing memoized
        calls = sum(len(c) for c in chunked)
        on, trimmed = asyncio.run(ours(chunked, args.budget, True))
        chunked = sessions(args.source, args.sessions)
        off, _ = asyncio.run(ours(chunked, args.budget, False))
        least = floor(sessions(args.source, args.sessions))
        best = {k: min(v, n) for (k, v), n in zip(best.items(), (on, off, least), strict=True)}
    rows = [(name, seconds, 1000 * seconds / calls, seconds / best["floor"]) for name, seconds in best.items()]
    print_table(
        ["", "CPU s", "ms / call", "x floor"],
        rows,
        title=f"{args.sessions} {args.source} sessions, {calls:,} calls at a {args.budget:,}-token budget "
        f"({trimmed} calls trimmed anything)",
    )
    worst = max(best["recall on"], best["recall off"]) / best["floor"]
    print(f"\nworst manager / floor: {worst:.2f}x (target <= {TARGET}x: {'met' if worst <= TARGET else 'missed'})")
    return {name: seconds / best["floor"] for name, seconds in best.items()}


if __name__ == "__main__":
    main()
