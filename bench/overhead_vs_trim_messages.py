"""Per-turn trimming overhead over a long session: TokenBudgetContextManager vs LangChain's ``trim_messages``.

An agent trims its history before every model call. ``trim_messages`` is handed the whole growing history each
time and re-tokenizes it with the user's counter (here an exact ``o200k_base`` one, as LangChain users write it);
windowkeeper's budget manager keeps the trimmed view in the state, remembers its running token total and counts
only what was appended. Both trim to the same prompt budget with identically priced messages. Only the trimming
calls are timed (CPU seconds); converting messages to LangChain objects and appending to the histories is not.

The session is the tau-bench airline trajectories chained into one support agent's day (``--source tau``) or a
generated coding-agent session (``--source generated``, heavier: ~750 tokens a call). A turn is one model call.

``--peer-stride K`` times ``trim_messages`` on every K-th turn only (still on the full history of that turn) and
multiplies by K; the output then says so. The default (1) runs the peer on every turn.

    python bench/overhead_vs_trim_messages.py [--turns 3000] [--budget 8000] [--source tau|generated]
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Sequence
from typing import Any

from _common import CpuClock, call_chunks, chained, fresh_counter, lc_exact_counter, print_table

from windowkeeper.context.budget import TokenBudgetContextManager
from windowkeeper.evaluation.sessiongen import generate_session
from windowkeeper.llm.formats import to_langchain
from windowkeeper.messages import Message
from windowkeeper.state import AgentState, add_messages
from windowkeeper.summarize import ExtractiveSummarizer

RESERVE = 2000
TARGET_RATIO = 100.0


def session_chunks(source: str, turns: int, seed: int) -> list[list[Message]]:
    if source == "generated":
        session = generate_session(turns + 1, seed=seed)
        return call_chunks(session.messages, turns)
    return call_chunks(chained(source, turns), turns)


async def run_ours(chunks: Sequence[Sequence[Message]], budget: int, summarizer: str) -> dict[str, Any]:
    counter = fresh_counter()
    manager: TokenBudgetContextManager[AgentState] = TokenBudgetContextManager(
        max_tokens=budget + RESERVE,
        reserve_tokens=RESERVE,
        counter=counter,
        summarizer=ExtractiveSummarizer(counter=counter) if summarizer == "extractive" else None,
    )
    state = AgentState()
    clock = CpuClock()
    worst = 0
    for chunk in chunks:
        state.context = add_messages(state.context, list(chunk))
        with clock.timing():
            state = await manager.atrim_context(state)
        worst = max(worst, manager.last_metrics.tokens_after if manager.last_metrics else 0)
    return {"seconds": clock.seconds, "calls": clock.calls, "final_messages": len(state.context), "max_view": worst}


def run_peer(chunks: Sequence[Sequence[Message]], budget: int, stride: int) -> dict[str, Any]:
    from langchain_core.messages import trim_messages

    count = lc_exact_counter(fresh_counter().encoding)
    history: list[Any] = []
    clock = CpuClock()
    view: list[Any] = []
    worst = 0
    for turn, chunk in enumerate(chunks):
        history.extend(to_langchain(chunk))
        if (turn + 1) % stride and turn != len(chunks) - 1:
            continue
        with clock.timing():
            view = trim_messages(
                history,
                max_tokens=budget,
                token_counter=count,
                strategy="last",
                include_system=True,
                start_on="human",
                allow_partial=False,
            )
        worst = max(worst, count(view))
    return {"seconds": clock.seconds, "calls": clock.calls, "final_messages": len(view), "max_view": worst}


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=3000, help="model calls in the session (default 3000)")
    parser.add_argument("--budget", type=int, default=8000, help="prompt budget in tokens for both (default 8000)")
    parser.add_argument("--source", choices=("tau", "generated"), default="tau")
    parser.add_argument("--seed", type=int, default=0, help="seed of the generated session")
    parser.add_argument("--peer-stride", type=int, default=1, help="time trim_messages on every K-th turn only")
    parser.add_argument(
        "--summarizer", choices=("none", "extractive"), default="none", help="ours: drop only, or summarize dropped"
    )
    args = parser.parse_args(argv)
    if args.turns < 1 or args.peer_stride < 1:
        parser.error("--turns and --peer-stride must be positive")

    chunks = session_chunks(args.source, args.turns, args.seed)
    history_tokens = fresh_counter().count_messages([m for c in chunks for m in c])
    print(
        f"session: {args.source}, {len(chunks):,} turns, {sum(len(c) for c in chunks):,} messages, "
        f"{history_tokens:,} tokens; prompt budget {args.budget:,}"
    )
    ours = asyncio.run(run_ours(chunks, args.budget, args.summarizer))
    peer = run_peer(chunks, args.budget, args.peer_stride)
    scale = len(chunks) / peer["calls"]
    peer_total = peer["seconds"] * scale
    if args.peer_stride > 1:
        print(
            f"NOTE: trim_messages was timed on {peer['calls']:,} of {len(chunks):,} turns (every "
            f"{args.peer_stride}th, each on its full history); its total below is that time x {scale:.2f} "
            "(extrapolated)"
        )
    ratio = peer_total / ours["seconds"] if ours["seconds"] > 0 else float("inf")
    label = "trim_messages (extrapolated)" if args.peer_stride > 1 else "trim_messages"
    print_table(
        ["trimmer", "CPU s total", "ms / turn", "max view tokens", "final view msgs"],
        [
            [
                f"TokenBudgetContextManager ({args.summarizer})",
                ours["seconds"],
                1000 * ours["seconds"] / len(chunks),
                ours["max_view"],
                ours["final_messages"],
            ],
            [label, peer_total, 1000 * peer_total / len(chunks), peer["max_view"], peer["final_messages"]],
        ],
    )
    verdict = "meets" if ratio >= TARGET_RATIO else "BELOW"
    print(f"ratio trim_messages / ours: {ratio:,.0f}x ({verdict} the {TARGET_RATIO:.0f}x target)")
    return {
        "ours_s": ours["seconds"],
        "peer_s": peer_total,
        "ratio": ratio,
        "turns": len(chunks),
        "extrapolated": args.peer_stride > 1,
        "ours_max_view": ours["max_view"],
        "peer_max_view": peer["max_view"],
    }


if __name__ == "__main__":
    main()
