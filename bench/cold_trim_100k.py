"""One cold trim of a 100,000-message history: TokenBudgetContextManager vs LangChain's ``trim_messages``.

"Cold" means nothing was seen before: our manager gets a fresh exact counter (empty per-message memo) and a new
thread, so it must count every message once; ``trim_messages`` gets the same history as LangChain messages and
an exact ``o200k_base`` counter with identical pricing. Both trim to the same prompt budget. This is the cost of
loading a long saved session and trimming it once (e.g. resuming a thread), where no running total exists yet.

The history is a generated coding-agent session (tool calls, file reads, logs), cut to ``--messages``.

    python bench/cold_trim_100k.py [--messages 100000] [--budget 32000]
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Sequence
from typing import Any

from _common import CpuClock, build_history, fresh_counter, lc_exact_counter, print_table

from windowkeeper.context.budget import TokenBudgetContextManager
from windowkeeper.llm.formats import to_langchain
from windowkeeper.messages import Message
from windowkeeper.state import AgentState

RESERVE = 2000


async def trim_ours(history: list[Message], budget: int) -> tuple[float, list[Message]]:
    manager: TokenBudgetContextManager[AgentState] = TokenBudgetContextManager(
        max_tokens=budget + RESERVE, reserve_tokens=RESERVE, counter=fresh_counter()
    )
    state = AgentState(context=list(history))
    clock = CpuClock()
    with clock.timing():
        state = await manager.atrim_context(state)
    return clock.seconds, state.context


def trim_peer(history: Sequence[Any], budget: int) -> tuple[float, list[Any]]:
    from langchain_core.messages import trim_messages

    count = lc_exact_counter(fresh_counter().encoding)
    clock = CpuClock()
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
    return clock.seconds, view


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=100_000, help="history length (default 100000)")
    parser.add_argument("--budget", type=int, default=32_000, help="prompt budget in tokens (default 32000)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.messages < 2:
        parser.error("--messages must be at least 2")

    history = build_history(args.messages, args.seed)
    lc_history = to_langchain(history, passthrough=False)
    tokens = fresh_counter().count_messages(history)
    print(
        f"history: {len(history):,} messages ({len(lc_history):,} LangChain messages), {tokens:,} tokens; "
        f"prompt budget {args.budget:,}"
    )

    ours_s, ours_view = asyncio.run(trim_ours(history, args.budget))
    peer_s, peer_view = trim_peer(lc_history, args.budget)
    view_counter = fresh_counter()
    ratio = peer_s / ours_s if ours_s > 0 else float("inf")
    print_table(
        ["trimmer", "CPU s", "view msgs", "view tokens"],
        [
            [
                "TokenBudgetContextManager (cold counter)",
                ours_s,
                len(ours_view),
                view_counter.count_messages(ours_view),
            ],
            ["trim_messages", peer_s, len(peer_view), lc_exact_counter(view_counter.encoding)(peer_view)],
        ],
    )
    print(f"ratio trim_messages / ours: {ratio:,.1f}x")
    return {"ours_s": ours_s, "peer_s": peer_s, "ratio": ratio, "messages": len(history)}


if __name__ == "__main__":
    main()
