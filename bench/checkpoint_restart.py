"""A checkpointer after a restart, and puts as a thread grows: windowkeeper `SQLiteCheckpointer` vs LangGraph's
`SqliteSaver` (CPU time, side by side in one process).

Read after restart: a thread of N messages is stored (no context manager, so the view is the whole log, which is
what a LangGraph ``add_messages`` graph checkpoints); then a *new* checkpointer object on the same file reads it
back (``aget_state`` for ours, ``get_tuple`` for the peer), as the first turn of a restarted process does. The two
sides take turns, one read each per round, each with a fresh object, and each side's fastest read is kept: on a
shared machine a burst of load then falls on both sides' rounds alike, where reading all of one side's repeats
first let a burst land on one side only. Each read starts after a full collection, so neither side's time
includes collecting what the other side, or its own previous repeat, left in the collector's generations (a
restarted process holds neither). The peer's connection is opened outside its timed read, as LangGraph's
``SqliteSaver(conn)`` takes one ready-made; ours opens its file inside (~0.05 ms of the ~0.5 ms a first
statement on a WAL file costs, the rest paid by both).

Put cost by history length: ``aput`` of one model call's messages on a thread of 1k and of 100k messages, ours
only (the peer writes the whole list each step, see checkpoint_cost.py). The puts on the two threads alternate,
one of each per step, and the result is the median put of each: a mean of consecutive puts on one thread moved
by 0.9-1.6x between runs of the same code on a loaded machine (bench/README.md, session 15).

    python bench/checkpoint_restart.py [--sizes 1000 10000] [--put-sizes 1000 100000] [--repeats 5] [--steps 50]

Targets: read after restart at most SqliteSaver's at 1k and 10k messages; a put at 100k within 1.5x of one at 1k.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from _common import build_history, call_chunks, print_table

from windowkeeper.graph import SQLiteCheckpointer
from windowkeeper.llm.formats import to_langchain
from windowkeeper.messages import Message
from windowkeeper.state import AgentState

READ_TARGET = 1.0
PUT_TARGET = 1.5


async def ours_setup(path: Path, history: list[Message]) -> None:
    saver = SQLiteCheckpointer(path)
    await saver.aput("t", AgentState(context=list(history)), history)
    await saver.aclose()


async def ours_read(path: Path, size: int) -> float:
    fresh = SQLiteCheckpointer(path)
    gc.collect()
    started = time.process_time()
    state = await fresh.aget_state("t")
    spent = time.process_time() - started
    assert state is not None and len(state.context) == size
    await fresh.aclose()
    return spent


def peer_setup(path: Path, history: list[Message]) -> None:
    from langgraph.checkpoint.base import empty_checkpoint
    from langgraph.checkpoint.sqlite import SqliteSaver

    config: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    conn = sqlite3.connect(path, check_same_thread=False)
    saver = SqliteSaver(conn)
    saver.setup()
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"messages": to_langchain(history, passthrough=False)}
    checkpoint["channel_versions"] = {"messages": 1}
    saver.put(config, checkpoint, {"step": 1, "source": "loop"}, {"messages": 1})
    conn.close()


def peer_read(path: Path, size: int) -> float:
    from langgraph.checkpoint.sqlite import SqliteSaver

    conn = sqlite3.connect(path, check_same_thread=False)
    fresh = SqliteSaver(conn)
    gc.collect()
    started = time.process_time()
    found = fresh.get_tuple({"configurable": {"thread_id": "t", "checkpoint_ns": ""}})
    spent = time.process_time() - started
    assert found is not None and len(found.checkpoint["channel_values"]["messages"]) == size
    conn.close()
    return spent


async def reads(work: Path, size: int, repeats: int) -> tuple[int, float, float]:
    """The fastest read of each side over ``repeats`` rounds, the sides taking turns within a round."""
    history = build_history(size, seed=7)
    ours_path, peer_path = work / f"wk-{size}.db", work / f"lg-{size}.db"
    await ours_setup(ours_path, history)
    peer_setup(peer_path, history)
    ours = peer = float("inf")
    for _ in range(repeats):
        ours = min(ours, await ours_read(ours_path, len(history)))
        peer = min(peer, peer_read(peer_path, len(history)))
    return len(history), ours, peer


async def put_costs(work: Path, sizes: Sequence[int], steps: int) -> dict[int, float]:
    """The median ms of a put of one call's messages on a thread of each of ``sizes`` messages, the threads'
    puts taking turns (one put on each per step)."""
    threads: list[tuple[int, SQLiteCheckpointer, AgentState, list[list[Message]]]] = []
    for size in sizes:
        whole = build_history(size + 4 * steps, seed=9)
        saver = SQLiteCheckpointer(work / f"put-{size}.db")
        state = AgentState(context=list(whole[:size]))
        await saver.aput("t", state, whole[:size])
        threads.append((size, saver, state, call_chunks(whole[size:], steps)))
    gc.collect()  # the 100k-message history just built is not the puts' to collect
    spent: dict[int, list[float]] = {size: [] for size in sizes}
    for step in range(min(len(chunks) for *_, chunks in threads)):
        for size, saver, state, chunks in threads:
            chunk = chunks[step]
            state.context = [*state.context, *chunk]
            started = time.process_time()
            await saver.aput("t", state, chunk)
            spent[size].append(time.process_time() - started)
    for _, saver, _, _ in threads:
        await saver.aclose()
    return {size: statistics.median(times) for size, times in spent.items()}


def main(argv: Sequence[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000])
    parser.add_argument("--put-sizes", type=int, nargs="+", default=[1_000, 100_000])
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    worst_read = 0.0
    rows: list[tuple[object, ...]] = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for size in args.sizes:
            count, ours, peer = asyncio.run(reads(work, size, args.repeats))
            worst_read = max(worst_read, ours / peer)
            rows.append((f"{count:,} messages", ours * 1e3, peer * 1e3, f"{ours / peer:.2f}x"))
        print_table(
            ["read after restart", "SQLiteCheckpointer ms", "SqliteSaver ms", "ours / peer"],
            rows,
        )
        puts = asyncio.run(put_costs(work, args.put_sizes, args.steps))
        print_table(
            ["put of one call (median)", "ms / put"],
            [(f"after {size:,} messages", ms * 1e3) for size, ms in puts.items()],
            title="",
        )
    low, high = min(puts), max(puts)
    growth = puts[high] / puts[low]
    print(
        f"\nread after restart, worst ours / SqliteSaver: {worst_read:.2f}x (target <= {READ_TARGET}x: "
        f"{'met' if worst_read <= READ_TARGET else 'missed'}); put at {high:,} / put at {low:,}: {growth:.2f}x "
        f"(target <= {PUT_TARGET}x: {'met' if growth <= PUT_TARGET else 'missed'})"
    )
    return {"read_ratio": worst_read, "put_growth": growth}


if __name__ == "__main__":
    main()
