"""Per-turn trimming overhead over a long session: TokenBudgetContextManager vs LangChain's ``trim_messages``.

An agent trims its history before every model call. ``trim_messages`` is handed the whole growing history each
time and re-tokenizes it with the user's counter (here an exact ``o200k_base`` one, as LangChain users write it);
windowkeeper's budget manager keeps the trimmed view in the state, remembers its running token total and counts
only what was appended. Both trim to the same prompt budget with identically priced messages. Only the trimming
calls are timed (CPU seconds); converting messages to LangChain objects and appending to the histories is not.

The session is the tau-bench airline trajectories chained into one support agent's day (``--source tau``) or a
generated coding-agent session (``--source generated``, heavier: ~750 tokens a call). A turn is one model call.

Two peers are measured: ``trim_messages`` with the uncached counter (as most users write it) and with a memoized
one (each message object counted once, the strongest fair peer), plus the floor: tokenizing each new message once,
which any trimmer must do. ``--peer-stride K`` times the uncached peer on every K-th turn only (still on the full
history of that turn) and multiplies by K; the output then says so. The memoized peer always runs on every turn.

    python bench/overhead_vs_trim_messages.py [--turns 3000] [--budget 8000] [--source tau|generated] [--repeats N]
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Callable, Sequence
from typing import Any

from _common import CpuClock, call_chunks, chained, fresh_counter, lc_exact_counter, print_table

from windowkeeper.context.budget import TokenBudgetContextManager
from windowkeeper.context.pointers import is_offloaded
from windowkeeper.llm.formats import to_langchain
from windowkeeper.messages import Message
from windowkeeper.state import AgentState, add_messages
from windowkeeper.summarize import ExtractiveSummarizer
from windowkeeper.testing.sessiongen import generate_session
from windowkeeper.tokens import REPLY_PRIMING

RESERVE = 2000
FLOOR_TARGET = 2.0
RECALL_FLOOR_TARGET = 3.0
"""With recall on (the default), the manager may cost at most 3x the floor; with it off, 2x."""
MEMO_TARGET = 30.0


def session_chunks(source: str, turns: int, seed: int) -> list[list[Message]]:
    if source == "generated":
        session = generate_session(turns + 1, seed=seed)
        return call_chunks(session.messages, turns)
    return call_chunks(chained(source, turns), turns)


async def run_ours(
    chunks: Sequence[Sequence[Message]], budget: int, summarizer: str, recall: bool = False, clearing: bool = True
) -> dict[str, Any]:
    counter = fresh_counter()
    manager: TokenBudgetContextManager[AgentState] = TokenBudgetContextManager(
        max_tokens=budget + RESERVE,
        reserve_tokens=RESERVE,
        counter=counter,
        summarizer=ExtractiveSummarizer(counter=counter) if summarizer == "extractive" else None,
        recall=recall,
        # clearing off: drop whole turns only, the one thing trim_messages does (no pointers to old results)
        **({} if clearing else {"keep_tool_results": 10**9, "clear_reply_min_tokens": None}),
    )
    state = AgentState()
    clock = CpuClock()
    worst = 0
    pointers: dict[int, Message] = {}  # the replacement messages it made (cleared results and replies), untimed
    for chunk in chunks:
        state.context = add_messages(state.context, list(chunk))
        with clock.timing():
            state = await manager.atrim_context(state)
        worst = max(worst, manager.last_metrics.tokens_after if manager.last_metrics else 0)
        if manager.last_metrics and manager.last_metrics.tokens_saved:
            pointers.update((id(m), m) for m in state.context if is_offloaded(m))
    return {
        "seconds": clock.seconds,
        "calls": clock.calls,
        "final_messages": len(state.context),
        "max_view": worst,
        "pointers": list(pointers.values()),
    }


def memoized(count: Callable[[Sequence[Any]], int]) -> Callable[[Sequence[Any]], int]:
    """The peer counter with the memo a careful LangChain user adds: one count per message object, kept."""
    memo: dict[int, tuple[Any, int]] = {}

    def counted(messages: Sequence[Any]) -> int:
        total = REPLY_PRIMING
        for message in messages:
            hit = memo.get(id(message))
            if hit is None or hit[0] is not message:
                hit = memo[id(message)] = (message, count([message]) - REPLY_PRIMING)
            total += hit[1]
        return total

    return counted


def run_floor(chunks: Sequence[Sequence[Message]]) -> dict[str, Any]:
    """The least any trimmer must do per turn: tokenize each new message once (a fresh exact counter, no memo)."""
    counter = fresh_counter()
    clock = CpuClock()
    for chunk in chunks:
        with clock.timing():
            for message in chunk:
                counter.count_message_uncached(message)
    return {"seconds": clock.seconds, "calls": clock.calls}


def pointer_floor(pointers: Sequence[Message]) -> float:
    """CPU seconds to tokenize once the pointer messages a clearing trimmer sends: new messages it made itself,
    which the arrivals floor does not include (a trimmer that only drops, like the peer, makes none)."""
    counter = fresh_counter()
    clock = CpuClock()
    with clock.timing():
        for message in pointers:
            counter.count_message_uncached(message)
    return clock.seconds


def run_peer(chunks: Sequence[Sequence[Message]], budget: int, stride: int, *, memo: bool = False) -> dict[str, Any]:
    from langchain_core.messages import trim_messages

    count = lc_exact_counter(fresh_counter().encoding)
    if memo:
        count = memoized(count)
    history: list[Any] = []
    clock = CpuClock()
    view: list[Any] = []
    worst = 0
    for turn, chunk in enumerate(chunks):
        history.extend(to_langchain(chunk, passthrough=False))
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


def min_of_repeats(args: argparse.Namespace, chunks: list[list[Message]]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Ours and the floor, each the fastest of ``--repeats`` runs, every run on freshly built (unhashed) messages."""
    ours: dict[str, Any] | None = None
    floor: dict[str, Any] | None = None
    for repeat in range(args.repeats):
        run = chunks if repeat == 0 else session_chunks(args.source, args.turns, args.seed)
        mine = asyncio.run(run_ours(run, args.budget, args.summarizer, args.recall == "on", args.clearing == "on"))
        least = run_floor(run)
        if args.repeats > 1:
            print(
                f"  repeat {repeat + 1}: ours {mine['seconds']:.3f} s, floor {least['seconds']:.3f} s, "
                f"ratio {mine['seconds'] / least['seconds']:.2f}"
            )
        ours = mine if ours is None or mine["seconds"] < ours["seconds"] else ours
        floor = least if floor is None or least["seconds"] < floor["seconds"] else floor
    assert ours is not None and floor is not None
    return ours, floor


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
    parser.add_argument(
        "--recall",
        choices=("off", "on"),
        default="on",
        help="ours: query-aware recall of dropped messages (on: the library's default)",
    )
    parser.add_argument(
        "--clearing",
        choices=("on", "off"),
        default="on",
        help="ours: clear old tool results and long replies to pointers (the default), or only drop turns as the peer",
    )
    parser.add_argument(
        "--repeats", type=int, default=1, help="run ours and the floor N times (fresh messages each), keep each min"
    )
    args = parser.parse_args(argv)
    if args.turns < 1 or args.peer_stride < 1 or args.repeats < 1:
        parser.error("--turns, --peer-stride and --repeats must be positive")

    chunks = session_chunks(args.source, args.turns, args.seed)
    # counted without the memo: its key would fingerprint every message, and a fingerprint memoized here would
    # spare our manager work that a real session's new messages do not spare it
    counter = fresh_counter()
    history_tokens = sum(counter.count_message_uncached(m) for c in chunks for m in c) + counter.reply_priming
    print(
        f"session: {args.source}, {len(chunks):,} turns, {sum(len(c) for c in chunks):,} messages, "
        f"{history_tokens:,} tokens; prompt budget {args.budget:,}"
    )
    ours, floor = min_of_repeats(args, chunks)
    memo = run_peer(chunks, args.budget, 1, memo=True)
    peer = run_peer(chunks, args.budget, args.peer_stride)
    scale = len(chunks) / peer["calls"]
    peer_total = peer["seconds"] * scale
    if args.peer_stride > 1:
        print(
            f"NOTE: uncached trim_messages was timed on {peer['calls']:,} of {len(chunks):,} turns (every "
            f"{args.peer_stride}th, each on its full history); its total below is that time x {scale:.2f} "
            "(extrapolated). The memoized peer ran on every turn."
        )
    label = "trim_messages, uncached counter" + (" (extrapolated)" if args.peer_stride > 1 else "")
    turns = len(chunks)
    rows = [
        [
            f"TokenBudgetContextManager ({args.summarizer}, recall {args.recall}, clearing {args.clearing})",
            ours["seconds"],
            1000 * ours["seconds"] / turns,
            ours["max_view"],
            ours["final_messages"],
        ],
        ["floor: tokenize each new message once", floor["seconds"], 1000 * floor["seconds"] / turns, "-", "-"],
        [
            "trim_messages, memoized counter",
            memo["seconds"],
            1000 * memo["seconds"] / turns,
            memo["max_view"],
            memo["final_messages"],
        ],
        [label, peer_total, 1000 * peer_total / turns, peer["max_view"], peer["final_messages"]],
    ]
    print_table(["trimmer", "CPU s total", "ms / turn", "max view tokens", "final view msgs"], rows)
    over_floor = ours["seconds"] / floor["seconds"] if floor["seconds"] > 0 else float("inf")
    target = RECALL_FLOOR_TARGET if args.recall == "on" else FLOOR_TARGET
    vs_memo = memo["seconds"] / ours["seconds"] if ours["seconds"] > 0 else float("inf")
    ratio = peer_total / ours["seconds"] if ours["seconds"] > 0 else float("inf")
    print(
        f"ours / floor: {over_floor:.2f}x (target <= {target:.0f}x with recall {args.recall}: "
        f"{'met' if over_floor <= target else 'MISSED'})"
    )
    pointers = ours["pointers"]
    with_pointers = floor["seconds"] + pointer_floor(pointers)
    if pointers:
        print(
            f"  ours / (floor + tokenizing the {len(pointers):,} pointer messages ours made and sent, "
            f"{with_pointers:.3f} s): {ours['seconds'] / with_pointers:.2f}x (for reference; the target is "
            "against the floor above)"
        )
    print(
        f"memoized trim_messages / ours: {vs_memo:,.0f}x (target >= {MEMO_TARGET:.0f}x: "
        f"{'met' if vs_memo >= MEMO_TARGET else 'MISSED'})"
    )
    memo_over_floor = memo["seconds"] / floor["seconds"] if floor["seconds"] > 0 else float("inf")
    print(
        f"  {MEMO_TARGET:.0f}x below the memoized peer means at most {memo['seconds'] / MEMO_TARGET:.3f} s here: "
        f"{memo_over_floor / MEMO_TARGET:.2f}x the floor (the memoized peer is {memo_over_floor:.1f}x the floor)"
    )
    print(f"uncached trim_messages / ours: {ratio:,.0f}x")
    return {
        "ours_s": ours["seconds"],
        "floor_s": floor["seconds"],
        "memo_s": memo["seconds"],
        "peer_s": peer_total,
        "ratio": ratio,
        "ratio_memo": vs_memo,
        "over_floor": over_floor,
        "memo_over_floor": memo_over_floor,
        "pointers": len(pointers),
        "turns": turns,
        "extrapolated": args.peer_stride > 1,
        "ours_max_view": ours["max_view"],
        "peer_max_view": peer["max_view"],
    }


if __name__ == "__main__":
    main()
