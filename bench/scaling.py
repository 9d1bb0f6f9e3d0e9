"""How each component's cost grows with the history: 1k, 10k and 100k messages of a generated coding-agent session.

For every size it measures, in CPU seconds of this process (``time.process_time``) and with ``tracemalloc``:

* budget manager, incremental: the session fed call by call to `TokenBudgetContextManager` (8k budget, no
  summarizer), without and with query-aware recall (its default); mean CPU per call, and the peak memory it
  allocated beyond the messages themselves (the messages are built before tracing starts; the recall index is a
  SQLite database, whose memory is not traced);
* budget manager, first call: one cold call on the whole history with the extractive summarizer (32k budget),
  without and with query-aware recall (the library default; it takes the unread history as one reference);
* token counter, after an append: re-counting the history after one new message (the memo at work);
* checkpointer, per step: `SQLiteCheckpointer.aput` after the history is stored, without a manager, for 20 steps
  of one call each: CPU per put and bytes written per step.

A component whose cost is proportional to what is new shows the same per-call numbers at every size.

    python bench/scaling.py [--sizes 1000 10000 100000]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import sqlite3
import tempfile
import time
import tracemalloc
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from _common import build_history, call_chunks, fresh_counter, print_table

from windowkeeper.context.budget import TokenBudgetContextManager
from windowkeeper.graph import SQLiteCheckpointer
from windowkeeper.messages import Message
from windowkeeper.state import AgentState
from windowkeeper.summarize import ExtractiveSummarizer

RESERVE = 2000
STEPS = 20


async def incremental(history: list[Message], recall: bool = False) -> tuple[float, float]:
    chunks = call_chunks(history, 10**9)
    manager: TokenBudgetContextManager[AgentState] = TokenBudgetContextManager(
        8000 + RESERVE, RESERVE, counter=fresh_counter(), recall=recall
    )
    state = AgentState()
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    cpu = 0.0
    for chunk in chunks:
        state.context = [*state.context, *chunk]
        started = time.process_time()
        state = await manager.atrim_context(state)
        cpu += time.process_time() - started
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    return 1000 * cpu / len(chunks), peak / 1e6


async def first_call(history: list[Message], recall: bool = False) -> float:
    counter = fresh_counter()
    manager: TokenBudgetContextManager[AgentState] = TokenBudgetContextManager(
        32000 + RESERVE, RESERVE, counter=counter, summarizer=ExtractiveSummarizer(counter=counter), recall=recall
    )
    state = AgentState(context=list(history))
    started = time.process_time()
    await manager.atrim_context(state)
    return time.process_time() - started


def recount(history: list[Message]) -> float:
    counter = fresh_counter()
    counter.count_messages(history)
    history = [*history, Message.text_message("one more message", message_id="scaling-append")]
    started = time.process_time()
    counter.count_messages(history)
    return 1000 * (time.process_time() - started)


async def checkpoints(history: list[Message], workdir: Path) -> tuple[float, float]:
    chunks = call_chunks(history, 10**9)
    head = [m for c in chunks[:-STEPS] for m in c]
    path = workdir / f"scaling-{len(history)}.db"
    saver = SQLiteCheckpointer(path)
    state = AgentState(context=list(head))
    await saver.aput("t", state, head)
    conn = sqlite3.connect(path)
    before = int(conn.execute("SELECT COALESCE(SUM(length(body)), 0) FROM wk_messages").fetchone()[0])
    cpu = 0.0
    snapshots = 0
    for chunk in chunks[-STEPS:]:
        state.context = [*state.context, *chunk]
        started = time.process_time()
        await saver.aput("t", state, chunk)
        cpu += time.process_time() - started
        snapshots += int(conn.execute("SELECT length(body) FROM wk_states").fetchone()[0])
    after = int(conn.execute("SELECT COALESCE(SUM(length(body)), 0) FROM wk_messages").fetchone()[0])
    conn.close()
    await saver.aclose()
    return 1000 * cpu / STEPS, (after - before + snapshots) / STEPS


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    args = parser.parse_args(argv)
    rows = []
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for size in args.sizes:
            history = build_history(size, 7)
            per_call, peak_mb = asyncio.run(incremental(history))
            recall_call, recall_peak = asyncio.run(incremental(history, recall=True))
            cold = asyncio.run(first_call(history))
            cold_recall = asyncio.run(first_call(history, recall=True))
            append_ms = recount(history)
            put_ms, put_bytes = asyncio.run(checkpoints(history, Path(tmp)))
            results[str(size)] = {
                "manager_ms_per_call": per_call,
                "manager_peak_mb": peak_mb,
                "manager_recall_ms_per_call": recall_call,
                "manager_recall_peak_mb": recall_peak,
                "first_call_s": cold,
                "first_call_recall_s": cold_recall,
                "recount_after_append_ms": append_ms,
                "put_ms": put_ms,
                "put_bytes_per_step": put_bytes,
            }
            rows.append(
                (
                    f"{len(history):,}",
                    per_call,
                    peak_mb,
                    recall_call,
                    recall_peak,
                    cold,
                    cold_recall,
                    append_ms,
                    put_ms,
                    put_bytes,
                )
            )
    print_table(
        (
            "messages",
            "manager ms/call",
            "manager peak MB",
            "+ recall ms/call",
            "+ recall peak MB",
            "first call s (extractive)",
            "first call s (+ recall)",
            "recount after append ms",
            "put ms/step",
            "put bytes/step",
        ),
        rows,
        title="CPU time per component (generated coding-agent session; manager: 8k budget, first call: 32k)",
    )
    return results


if __name__ == "__main__":
    main()
