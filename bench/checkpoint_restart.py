"""A checkpointer after a restart, and puts as a thread grows: windowkeeper `SQLiteCheckpointer` vs LangGraph's
`SqliteSaver` (CPU time, side by side in one process).

Read after restart: a thread of N messages is stored (no context manager, so the view is the whole log, which is
what a LangGraph ``add_messages`` graph checkpoints); then a *new* checkpointer object on the same file reads it
back (``aget_state`` for ours, ``get_tuple`` for the peer), as the first turn of a restarted process does. Each
read is repeated with a fresh object and the fastest kept. Each starts after a full collection, so neither side's
time includes collecting what the other side, or its own previous repeat, left in the collector's generations (a
restarted process holds neither).

Put cost by history length: ``aput`` of one model call's messages on a thread of 1k and of 100k messages, ours
only (the peer writes the whole list each step, see checkpoint_cost.py).

    python bench/checkpoint_restart.py [--sizes 1000 10000] [--put-sizes 1000 100000] [--repeats 5]

Targets: read after restart at most SqliteSaver's at 1k and 10k messages; a put at 100k within 1.5x of one at 1k.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import sqlite3
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


async def ours_read(path: Path, history: list[Message], repeats: int) -> float:
    saver = SQLiteCheckpointer(path)
    await saver.aput("t", AgentState(context=list(history)), history)
    await saver.aclose()
    best = float("inf")
    for _ in range(repeats):
        fresh = SQLiteCheckpointer(path)
        gc.collect()
        started = time.process_time()
        state = await fresh.aget_state("t")
        best = min(best, time.process_time() - started)
        assert state is not None and len(state.context) == len(history)
        await fresh.aclose()
    return best


def peer_read(path: Path, history: list[Message], repeats: int) -> float:
    from langgraph.checkpoint.base import empty_checkpoint
    from langgraph.checkpoint.sqlite import SqliteSaver

    config: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    conn = sqlite3.connect(path, check_same_thread=False)
    saver = SqliteSaver(conn)
    saver.setup()
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"messages": to_langchain(history)}
    checkpoint["channel_versions"] = {"messages": 1}
    saver.put(config, checkpoint, {"step": 1, "source": "loop"}, {"messages": 1})
    conn.close()
    best = float("inf")
    for _ in range(repeats):
        conn = sqlite3.connect(path, check_same_thread=False)
        fresh = SqliteSaver(conn)
        gc.collect()
        started = time.process_time()
        found = fresh.get_tuple({"configurable": {"thread_id": "t", "checkpoint_ns": ""}})
        best = min(best, time.process_time() - started)
        assert found is not None and len(found.checkpoint["channel_values"]["messages"]) == len(history)
        conn.close()
    return best


async def put_cost(path: Path, history: list[Message], steps: list[list[Message]]) -> float:
    saver = SQLiteCheckpointer(path)
    state = AgentState(context=list(history))
    await saver.aput("t", state, history)
    gc.collect()  # the 100k-message history just built is not the puts' to collect
    spent = 0.0
    for chunk in steps:
        state.context = [*state.context, *chunk]
        started = time.process_time()
        await saver.aput("t", state, chunk)
        spent += time.process_time() - started
    await saver.aclose()
    return spent / len(steps)


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
            history = build_history(size, seed=7)
            ours = asyncio.run(ours_read(work / f"wk-{size}.db", history, args.repeats))
            peer = peer_read(work / f"lg-{size}.db", history, args.repeats)
            worst_read = max(worst_read, ours / peer)
            rows.append((f"{len(history):,} messages", ours * 1e3, peer * 1e3, f"{ours / peer:.2f}x"))
        print_table(
            ["read after restart", "SQLiteCheckpointer ms", "SqliteSaver ms", "ours / peer"],
            rows,
        )
        puts: dict[int, float] = {}
        for size in args.put_sizes:
            whole = build_history(size + 4 * args.steps, seed=9)
            steps = call_chunks(whole[size:], args.steps)
            puts[size] = asyncio.run(put_cost(work / f"put-{size}.db", whole[:size], steps))
        print_table(
            ["put of one call", "ms / put"],
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
