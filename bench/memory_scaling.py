"""Three-tier memory at default thresholds: per-add CPU and reopening cost at 1k / 10k / 100k messages.

A generated coding-agent session is added message by message to a memory at its default thresholds
(``pre_rot_threshold`` 150,000 tokens: compaction at 80 %, summarization at 95 %). For every size it reports, in CPU
seconds of this process (``time.process_time``, storage worker threads included):

* per add: the mean CPU of the last ``--tail`` adds (management passes included, so their cost is amortized as a
  real session pays it), and the slowest single add among them;
* reopen: a new memory object on the same store reading the session for the first time (`tokens`), the minimum
  over ``--reopen-repeats`` fresh objects (the generated history is released first, as a new process would not
  hold it); and the same plus the first `messages()`, which is what a restarted agent pays before its first model
  call (the reload leaves the live events' text undecoded until then);
* the live events and store records at that point, and the tier passes that ran.

A memory whose cost is proportional to what is new shows the same per-add numbers at every size, and a reopen
that reads only the live records costs the same however long the history is. Issue 13's targets: per-add CPU at
100k within 3x of 1k, reopen of 100k under 50 ms.

    python bench/memory_scaling.py [--sizes 1000 10000] [--backend sqlite|memory] [--tail 500]
                                   [--reopen-repeats 5] [--workdir DIR]

The default run (1k and 10k on SQLite) takes well under a minute; ``--sizes 1000 10000 100000`` a few minutes.
With ``--workdir`` the SQLite files are kept there, and a size whose file exists is not built again: only its
reopen is measured (the per-add columns show ``-``), so the reopen can be re-measured in seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from _common import build_history, print_table

from windowkeeper.memory import BaseMemory, InMemoryMemory, SQLiteMemory
from windowkeeper.storage import InMemoryStore

SESSION = "bench"


def open_memory(backend: str, location: Path, store: InMemoryStore | None) -> BaseMemory[Any]:
    if backend == "memory":
        assert store is not None
        return InMemoryMemory(store=store)
    return SQLiteMemory(location)


async def reopen_cost(backend: str, location: Path, store: InMemoryStore | None, repeats: int) -> dict[str, Any]:
    """Min CPU over ``repeats`` fresh memory objects of the first read (`tokens`) and of that plus `messages()`."""
    reopen = first_call = float("inf")
    tokens = 0
    for _ in range(max(1, repeats)):
        gc.collect()
        started = time.process_time()
        reopened = open_memory(backend, location, store)
        tokens = await reopened.tokens(SESSION)
        read = time.process_time() - started
        await reopened.messages(SESSION)
        both = time.process_time() - started
        if backend == "memory":
            reopened._owns_store = False
        await reopened.close()
        reopen, first_call = min(reopen, read), min(first_call, both)
    return {"reopen_ms": 1000 * reopen, "first_call_ms": 1000 * first_call, "reopened_tokens": tokens}


async def measure(n: int, backend: str, tail: int, workdir: Path, reopen_repeats: int = 1) -> dict[str, Any]:
    location = workdir / f"memory-{n}.db"
    if backend == "sqlite" and location.exists():  # built by an earlier run with --workdir: reopen only
        memory = open_memory(backend, location, None)
        live = len(await memory.list(SESSION, include_summaries=False))
        records = len(await memory.store.list_records(memory.namespace, SESSION))
        await memory.close()
        cost = await reopen_cost(backend, location, None, reopen_repeats)
        return {
            "messages": n,
            "per_add_ms": None,
            "max_add_ms": None,
            "live": live,
            "records": records,
            "view_tokens": cost["reopened_tokens"],
            "passes": "(reused)",
            **cost,
        }
    history = build_history(n, 11, whole_units=False)
    store = InMemoryStore() if backend == "memory" else None
    memory = open_memory(backend, location, store)
    tiers: Counter[str] = Counter()
    head, timed = history[: max(0, n - tail)], history[max(0, n - tail) :]
    for message in head:
        report = await memory.add(message, session_id=SESSION)
        if report is not None:
            tiers[report.tier] += 1
    costs: list[float] = []
    for message in timed:
        started = time.process_time()
        report = await memory.add(message, session_id=SESSION)
        costs.append(time.process_time() - started)
        if report is not None:
            tiers[report.tier] += 1
    live = len(await memory.list(SESSION, include_summaries=False))
    records = len(await memory.store.list_records(memory.namespace, SESSION))
    view_tokens = await memory.tokens(SESSION)
    if backend == "memory":
        memory._owns_store = False  # keep the in-process store open for the reopen below
    await memory.close()
    # a restarted agent does not hold the generated history: drop it so the garbage collector's passes over
    # those objects are not charged to the reopen
    del history, head, timed
    cost = await reopen_cost(backend, location, store, reopen_repeats)
    assert cost["reopened_tokens"] == view_tokens, (cost["reopened_tokens"], view_tokens)
    return {
        "messages": n,
        "per_add_ms": 1000 * sum(costs) / max(1, len(costs)),
        "max_add_ms": 1000 * max(costs, default=0.0),
        **cost,
        "live": live,
        "records": records,
        "view_tokens": view_tokens,
        "passes": f"{tiers['compaction']} compaction, {tiers['summarization']} summarization",
    }


async def main(sizes: list[int], backend: str, tail: int, repeats: int, workdir: Path | None) -> None:
    if workdir is not None:
        workdir.mkdir(parents=True, exist_ok=True)
        rows = [await measure(n, backend, tail, workdir, repeats) for n in sizes]
    else:
        with tempfile.TemporaryDirectory() as tmp:
            rows = [await measure(n, backend, tail, Path(tmp), repeats) for n in sizes]
    print_table(
        [
            "messages",
            "CPU ms / add",
            "slowest add ms",
            "reopen CPU ms",
            "+ messages() ms",
            "live events",
            "records",
            "view tokens",
            "passes",
        ],
        [
            [
                f"{r['messages']:,}",
                "-" if r["per_add_ms"] is None else f"{r['per_add_ms']:.3f}",
                "-" if r["max_add_ms"] is None else f"{r['max_add_ms']:.1f}",
                f"{r['reopen_ms']:.1f}",
                f"{r['first_call_ms']:.1f}",
                f"{r['live']:,}",
                f"{r['records']:,}",
                f"{r['view_tokens']:,}",
                r["passes"],
            ]
            for r in rows
        ],
    )
    first, last = rows[0], rows[-1]
    print()
    if first["per_add_ms"] and last["per_add_ms"] is not None:
        ratio = last["per_add_ms"] / first["per_add_ms"]
        print(f"per-add CPU at {last['messages']:,} vs {first['messages']:,} messages: {ratio:.2f}x (target <= 3x)")
    print(
        f"reopen at {last['messages']:,}: {last['reopen_ms']:.1f} ms CPU, min of {repeats} (target < 50 ms); "
        f"with the first messages(): {last['first_call_ms']:.1f} ms [{backend}]"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--backend", choices=["sqlite", "memory"], default="sqlite")
    parser.add_argument("--tail", type=int, default=500, help="adds timed at the end of each session")
    parser.add_argument("--reopen-repeats", type=int, default=5, help="fresh reopens per size; the minimum is shown")
    parser.add_argument("--workdir", type=Path, help="keep the SQLite files here and reuse the ones that exist")
    args = parser.parse_args()
    asyncio.run(main(args.sizes, args.backend, args.tail, args.reopen_repeats, args.workdir))
