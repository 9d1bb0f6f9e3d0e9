"""Checkpoint cost per step of a long thread without a context manager: bytes written and puts per second.

A thread of ``--prefill`` messages (default 1,000) grows by one model call per step (the messages of that call);
each store persists the step the way its framework does:

* windowkeeper `SQLiteCheckpointer.aput(thread, state, new_messages)`: the new messages go to the log, the
  snapshot refers to logged messages by position (delta checkpoints);
* LangGraph `SqliteSaver.put` (and `InMemorySaver.put`) with the messages channel holding the whole list, which is
  what a LangGraph graph with ``add_messages`` checkpoints after each step;
* the OpenAI Agents SDK `SQLiteSession.add_items` with the step's new items (a session log, no state snapshot).

Bytes are what each store wrote per step into its tables' payload columns: message bodies appended, plus the
snapshot row (windowkeeper rewrites one row per thread; LangGraph inserts a checkpoint row and its writes);
"new message bytes" is the JSON size of the step's new messages, the least any store must write. Rates are puts
per CPU second of this process, all measured in the same run.

    python bench/checkpoint_cost.py [--prefill 1000] [--steps 200]
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from _common import call_chunks, print_table

from windowkeeper.graph import SQLiteCheckpointer
from windowkeeper.llm.formats import to_langchain, to_responses_input
from windowkeeper.messages import Message
from windowkeeper.state import AgentState
from windowkeeper.testing.sessiongen import generate_session

TARGET_BYTES_RATIO = 2.0


def payload_bytes(path: Path, columns: dict[str, Sequence[str]]) -> int:
    conn = sqlite3.connect(path)
    try:
        total = 0
        for table, cols in columns.items():
            expr = " + ".join(f"COALESCE(length({c}), 0)" for c in cols)
            total += int(conn.execute(f"SELECT COALESCE(SUM({expr}), 0) FROM {table}").fetchone()[0])
        return total
    finally:
        conn.close()


def steps_of(prefill: int, steps: int) -> tuple[list[Message], list[list[Message]]]:
    session = generate_session((prefill + 4 * steps) // 2 + 50, seed=5).messages
    chunks = call_chunks(session, 10**9)
    head: list[Message] = []
    while chunks and len(head) < prefill:
        head.extend(chunks.pop(0))
    return head, chunks[:steps]


async def ours(path: Path, head: list[Message], chunks: list[list[Message]]) -> tuple[float, int]:
    saver = SQLiteCheckpointer(path)
    state = AgentState(context=list(head))
    await saver.aput("t", state, head)
    before = payload_bytes(path, {"wk_messages": ["body"]})
    cpu = 0.0
    snapshots = 0
    for chunk in chunks:
        state.context = [*state.context, *chunk]
        started = time.process_time()
        await saver.aput("t", state, chunk)
        cpu += time.process_time() - started
        snapshots += payload_bytes(path, {"wk_states": ["body"]})  # each step rewrites the snapshot row
    after = payload_bytes(path, {"wk_messages": ["body"]})
    await saver.aclose()
    return cpu, after - before + snapshots


def langgraph(path: Path | None, head: list[Message], chunks: list[list[Message]]) -> tuple[float, int | None]:
    from langgraph.checkpoint.base import empty_checkpoint
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.checkpoint.sqlite import SqliteSaver

    conn = sqlite3.connect(path, check_same_thread=False) if path is not None else None
    saver: Any = SqliteSaver(conn) if conn is not None else InMemorySaver()
    if conn is not None:
        saver.setup()
    history = to_langchain(head, passthrough=False)
    config: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}

    def put(step: int) -> Any:
        checkpoint = empty_checkpoint()
        checkpoint["channel_values"] = {"messages": list(history)}
        checkpoint["channel_versions"] = {"messages": step}
        return saver.put(config, checkpoint, {"step": step, "source": "loop"}, {"messages": step})

    config = put(1)
    columns = {"checkpoints": ["checkpoint", "metadata"], "writes": ["value"]}
    before = payload_bytes(path, columns) if path is not None else 0
    cpu = 0.0
    for step, chunk in enumerate(chunks, start=2):
        history.extend(to_langchain(chunk, passthrough=False))
        started = time.process_time()
        config = put(step)
        cpu += time.process_time() - started
    written = payload_bytes(path, columns) - before if path is not None else None
    if conn is not None:
        conn.close()
    return cpu, written


async def agents_session(path: Path, head: list[Message], chunks: list[list[Message]]) -> tuple[float, int]:
    from agents.memory import SQLiteSession

    session = SQLiteSession("t", str(path))
    await session.add_items(to_responses_input(head, passthrough=False))
    before = payload_bytes(path, {"agent_messages": ["message_data"]})
    cpu = 0.0
    for chunk in chunks:
        items = to_responses_input(chunk, passthrough=False)
        started = time.process_time()
        await session.add_items(items)
        cpu += time.process_time() - started
    written = payload_bytes(path, {"agent_messages": ["message_data"]}) - before
    session.close()
    return cpu, written


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--prefill", type=int, default=1000)
    parser.add_argument("--steps", type=int, default=200)
    args = parser.parse_args(argv)
    head, chunks = steps_of(args.prefill, args.steps)
    n = len(chunks)
    new_bytes = sum(len(m.model_dump_json()) for chunk in chunks for m in chunk) / n
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        ours_cpu, ours_bytes = asyncio.run(ours(work / "wk.db", head, chunks))
        lg_cpu, lg_bytes = langgraph(work / "lg.db", head, chunks)
        mem_cpu, _ = langgraph(None, head, chunks)
        ag_cpu, ag_bytes = asyncio.run(agents_session(work / "agents.db", head, chunks))
    rows = [
        ("windowkeeper SQLiteCheckpointer", n / ours_cpu, ours_bytes / n, ours_bytes / n / new_bytes),
        ("LangGraph SqliteSaver", n / lg_cpu, (lg_bytes or 0) / n, (lg_bytes or 0) / n / new_bytes),
        ("LangGraph InMemorySaver", n / mem_cpu, "-", "-"),
        ("OpenAI Agents SQLiteSession", n / ag_cpu, ag_bytes / n, ag_bytes / n / new_bytes),
    ]
    print_table(
        ("store", "puts / CPU s", "bytes / step", "x new message bytes"),
        rows,
        title=f"{n} steps after {len(head):,} messages, no context manager; new messages: {new_bytes:,.0f} bytes/step",
    )
    ratio = ours_bytes / n / new_bytes
    rate_vs = (n / ours_cpu) / (n / lg_cpu)
    print(
        f"bytes per step / new message bytes: {ratio:.2f}x (target <= {TARGET_BYTES_RATIO}x: "
        f"{'met' if ratio <= TARGET_BYTES_RATIO else 'MISSED'}); put rate vs SqliteSaver: {rate_vs:.1f}x "
        f"(target >= 1x: {'met' if rate_vs >= 1 else 'MISSED'})"
    )
    return {"bytes_ratio": ratio, "rate_vs_sqlitesaver": rate_vs, "ours_bytes_per_step": ours_bytes / n}


if __name__ == "__main__":
    main()
