"""What the budget manager makes of a long session, call by call, as one line per call: for comparing two versions
of the code (a change made for cost must not change a single view, summary or metric).

Each line names the case and the call and holds a digest of the view (every message's JSON), the running summary,
and the call's metrics without its duration; each case ends with the thread's totals. Run it under both versions
and compare the files:

    PYTHONPATH=/path/to/base/src python bench/view_digest.py --out /tmp/base.txt
    PYTHONPATH=src python bench/view_digest.py --out /tmp/mine.txt
    cmp /tmp/base.txt /tmp/mine.txt

The cases: the tau-bench chain (``--source tau``, needs ``../shared/data``) and a generated coding-agent session
(``--source generated``), at 8k and 32k, recall off and on, each handed the manager's own state back (``live``) and
the state read back from its JSON before every call (``json``: equal messages, new objects, no fingerprints, as a
caller's own store hands them back). Message timestamps are set to one a minute from a fixed start, so that the
dates recall quotes are the same in every run; timestamps are not part of a message's fingerprint.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
from collections.abc import Sequence
from typing import Any, TextIO

from _common import call_chunks, chained, fresh_counter

from windowkeeper.context.budget import TokenBudgetContextManager
from windowkeeper.context.metrics import TrimMetrics
from windowkeeper.messages import Message
from windowkeeper.state import AgentState, ExecMeta, add_messages
from windowkeeper.testing.sessiongen import generate_session

RESERVE = 2000
START = 1_700_000_000.0
"""Timestamp of a case's first message; each later one a minute after the one before."""


def chunks_of(source: str, calls: int) -> list[list[Message]]:
    """The session as what arrives before each model call, with fixed timestamps."""
    messages = generate_session(calls + 1, seed=0).messages if source == "generated" else chained(source, calls)
    chunks = call_chunks(messages, calls)
    minute = 0
    for chunk in chunks:
        for message in chunk:
            message.__dict__["timestamp"] = START + 60.0 * minute  # not fingerprinted: no validation to go through
            minute += 1
    return chunks


def digest(state: AgentState, metrics: TrimMetrics | None) -> str:
    """The view and summary as a short hash, then the metrics but their duration in full."""
    view = [m.model_dump(mode="json") for m in state.context]
    body = json.dumps([view, state.context_summary], sort_keys=True)
    fields: dict[str, Any] | None = metrics.model_dump(mode="json") if metrics is not None else None
    if fields is not None:
        fields.pop("duration_s")
    return f"{hashlib.blake2b(body.encode(), digest_size=12).hexdigest()} {json.dumps(fields, sort_keys=True)}"


async def case(out: TextIO, source: str, calls: int, budget: int, recall: bool, mode: str) -> None:
    name = f"{source} {budget} recall={'on' if recall else 'off'} {mode}"
    manager: TokenBudgetContextManager[AgentState] = TokenBudgetContextManager(
        budget + RESERVE, RESERVE, counter=fresh_counter(), recall=recall
    )
    state = AgentState(execution_meta=ExecMeta(thread_id="t"))
    for n, chunk in enumerate(chunks_of(source, calls)):
        if mode == "json":
            state = AgentState.model_validate_json(state.model_dump_json())
        state.context = add_messages(state.context, list(chunk))
        state = await manager.atrim_context(state)
        out.write(f"{name} {n} {digest(state, manager.last_metrics)}\n")
    totals = manager.metrics_total.model_dump(mode="json")
    totals.pop("duration_s")
    out.write(f"{name} totals {json.dumps(totals, sort_keys=True)}\n")
    manager.forget()  # the thread's recall index and offloaded originals go with it


async def run(out: TextIO, sources: Sequence[str], calls: int, json_calls: int) -> None:
    for source in sources:
        for budget in (8_000, 32_000):
            for recall in (False, True):
                await case(out, source, calls, budget, recall, "live")
                await case(out, source, json_calls, budget, recall, "json")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--source", choices=["tau", "generated"], nargs="+", default=["tau", "generated"])
    parser.add_argument("--calls", type=int, default=3000, help="model calls of each live case")
    parser.add_argument("--json-calls", type=int, default=400, help="model calls of each case read back from JSON")
    args = parser.parse_args(argv)
    with open(args.out, "w", encoding="utf-8") as out:
        asyncio.run(run(out, args.source, args.calls, args.json_calls))


if __name__ == "__main__":
    main()
