"""What writing the recognition index's ledger while the process runs (its journal) costs a call, and a fold.

Part 1, a call: two `Gateway` objects in one process, each on its own SQLite store, take the same requests in
alternation: new conversations (a first call, then its next turn), every one a new thread, at ``max_index_entries``
small enough that records are evicted from the start (as ``gateway_prune_cost.py``). ``journal`` is the gateway as
it is; ``no journal`` has the journal switched off (nothing noted, nothing written while it runs: the gateway before,
whose ledger was written only at shutdown). The journal's batches are written by a task of their own, on the same
event loop, so the time they take while a call waits on the store is in that call's time. Reported: the median and
mean time of `Gateway.plan` per request of each kind, and the batches and folds written.

Part 2, a fold (once per `JOURNAL_FOLD` batches, and at shutdown): a ledger of ``--entries`` records and a full
journal, folded on a SQLite store; reported: the whole fold, and the longest stretch it holds the event loop (a
call in flight waits that long), measured as the longest delay of a 1 ms ticker running beside it.

    PYTHONPATH=src python bench/gateway_ledger_cost.py [--conversations 400] [--bound 60] [--entries 100000]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson
from _gateway import alternate_conversations, plan_stats

from windowkeeper.serve import ServeConfig, identity
from windowkeeper.serve.gateway import Gateway
from windowkeeper.serve.identity import INDEX_NAMESPACE, JOURNAL_FOLD, LEDGER_KEY, LEDGER_SESSION, Recognizer
from windowkeeper.storage import open_store


async def calls(conversations: int, bound: int, folder: Path) -> dict[str, Any]:
    gateways: dict[str, Gateway] = {}
    for kind in ("journal", "no journal"):
        config = ServeConfig(budget=4000, max_index_entries=bound, max_threads=max(1, bound // 4))
        gateways[kind] = Gateway(config, open_store(f"sqlite:///{folder / f'{kind[:2]}.sqlite3'}"))
    gateways["no journal"].recognizer._touch = lambda *_: None  # type: ignore[method-assign]
    batches = {kind: 0 for kind in gateways}
    folds = {kind: 0 for kind in gateways}
    spent = {kind: 0.0 for kind in gateways}  # seconds in journal writes and folds while the calls ran
    for kind, gateway in gateways.items():
        flush, fold = gateway.recognizer._flush, gateway.recognizer._fold

        async def counted_flush(kind: str = kind, flush: Any = flush) -> None:
            batches[kind] += 1
            start = time.perf_counter()
            await flush()
            spent[kind] += time.perf_counter() - start

        async def counted_fold(kind: str = kind, fold: Any = fold) -> bool:
            folds[kind] += 1
            start = time.perf_counter()
            done = bool(await fold())
            spent[kind] += time.perf_counter() - start
            return done

        gateway.recognizer._flush = counted_flush  # type: ignore[method-assign]
        gateway.recognizer._fold = counted_fold  # type: ignore[method-assign]
    times = await alternate_conversations(gateways, conversations)
    out: dict[str, Any] = {}
    for kind, gateway in gateways.items():
        journal_ms = spent[kind] * 1000 / (2 * conversations)
        await gateway.close()
        out[kind] = {
            **plan_stats(times[kind]),
            "batches": batches[kind],
            "folds": folds[kind],
            "journal_ms": journal_ms,
        }
    return out


async def fold(entries: int, folder: Path) -> dict[str, float]:
    """A ledger of ``entries`` records and `JOURNAL_FOLD` journal batches of 64, folded once."""
    store = open_store(f"sqlite:///{folder / 'fold.sqlite3'}")
    try:
        keys = [[f"{n % 97:016x}.-", f"{n:016x}", 1 + n % 5] for n in range(entries)]
        await store.add_record(
            INDEX_NAMESPACE,
            LEDGER_SESSION,
            LEDGER_KEY,
            {"packed": [orjson.dumps(keys[i : i + 8192]).decode() for i in range(0, entries, 8192)]},
        )
        for b in range(JOURNAL_FOLD):
            batch = [[f"{n % 97:016x}.-", f"{n:016x}", 2 + n % 5] for n in range(b * 64, b * 64 + 64)]
            await store.add_record(
                INDEX_NAMESPACE, LEDGER_SESSION, f"{identity.JOURNAL_PREFIX}x.{b:09d}", {"keys": batch}
            )
        recognizer = Recognizer(store, entries)
        recognizer._loaded = True
        longest = 0.0
        done = False

        async def ticker() -> None:
            nonlocal longest
            while not done:
                before = time.perf_counter()
                await asyncio.sleep(0.001)
                longest = max(longest, time.perf_counter() - before - 0.001)

        tick = asyncio.ensure_future(ticker())
        await asyncio.sleep(0.01)
        start = time.perf_counter()
        assert await recognizer._fold()
        took = time.perf_counter() - start
        done = True
        await tick
        record = await store.get_record(INDEX_NAMESPACE, LEDGER_SESSION, LEDGER_KEY)
        assert record is not None and len(identity._keys_of(record.doc)) == entries
        return {"fold_ms": took * 1000, "held_ms": longest * 1000, "bytes": (folder / "fold.sqlite3").stat().st_size}
    finally:
        await store.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conversations", type=int, default=400)
    parser.add_argument("--bound", type=int, default=60)
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    for attempt in range(args.repeat):
        with tempfile.TemporaryDirectory() as folder:
            result = asyncio.run(calls(args.conversations, args.bound, Path(folder)))
        for kind, row in result.items():
            print(
                f"run {attempt + 1} {kind:10s}: new conversation {row['new_median_ms']:.2f} ms median "
                f"({row['new_mean_ms']:.2f} mean), its next turn {row['next_median_ms']:.2f} ms "
                f"({row['next_mean_ms']:.2f}); journal batches {row['batches']}, folds {row['folds']} (shutdown's "
                f"included), {row['journal_ms'] * 1000:.0f} us of journal writing per request"
            )
    for attempt in range(args.repeat):
        with tempfile.TemporaryDirectory() as folder:
            row = asyncio.run(fold(args.entries, Path(folder)))
        print(
            f"run {attempt + 1} fold of {args.entries:,} records and {JOURNAL_FOLD} batches: {row['fold_ms']:.0f} ms, "
            f"event loop held at most {row['held_ms']:.0f} ms"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
