"""What bounding the gateway's stored thread data costs a call, and what it saves in the store.

Two `Gateway` objects in one process, each on its own SQLite store, take the same requests in alternation: new
conversations (three turns each, then one more turn), every one a new thread, at ``max_index_entries`` small
enough that records are evicted from the start. ``bounded`` is the gateway as it is (a link record per new thread
and head; a thread's data deleted with the last index record that leads to it); ``unbounded`` has both switched
off (no links written, nothing deleted): the gateway before thread data was bounded. Reported: the median and
mean time of `Gateway.plan` per request of each kind (after one untimed call each, which loads the tokenizer),
and the store's size and thread count at the end.

    PYTHONPATH=src python bench/gateway_prune_cost.py [--conversations 400] [--bound 60] [--repeat 3]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path
from typing import Any

from _gateway import alternate_conversations, plan_stats

from windowkeeper.serve import ServeConfig
from windowkeeper.serve.gateway import Gateway
from windowkeeper.storage import open_store


def _unbounded(gateway: Gateway) -> None:
    async def no_link(*_: Any, **__: Any) -> None:
        return None

    gateway.recognizer.orphaned = None
    gateway.recognizer._link = no_link  # type: ignore[method-assign]


async def _threads_in(url: str) -> tuple[int, int]:
    store = open_store(url)
    try:
        found: set[str] = set()
        for row in await store.raw_rows():
            scope = row.scope[0] if row.kind in ("message", "state") else row.scope[1] if row.kind == "record" else ""
            if scope.startswith("wk-"):
                found.add(scope)
        return len(found), 0
    finally:
        await store.close()


async def run(conversations: int, bound: int, folder: Path) -> dict[str, Any]:
    gateways: dict[str, Gateway] = {}
    urls: dict[str, str] = {}
    for kind in ("bounded", "unbounded"):
        urls[kind] = f"sqlite:///{folder / f'{kind}.sqlite3'}"
        config = ServeConfig(budget=4000, max_index_entries=bound, max_threads=max(1, bound // 4))
        gateways[kind] = Gateway(config, open_store(urls[kind]))
    _unbounded(gateways["unbounded"])
    times = await alternate_conversations(gateways, conversations)
    out: dict[str, Any] = {}
    for kind, gateway in gateways.items():
        deleted = gateway.threads.deleted
        await gateway.close()
        path = folder / f"{kind}.sqlite3"
        threads, _ = await _threads_in(urls[kind])
        out[kind] = {
            **plan_stats(times[kind]),
            "threads_stored": threads,
            "deleted": deleted,
            "store_kib": path.stat().st_size / 1024,
        }
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conversations", type=int, default=400)
    parser.add_argument("--bound", type=int, default=60)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    for attempt in range(args.repeat):
        with tempfile.TemporaryDirectory() as folder:
            result = asyncio.run(run(args.conversations, args.bound, Path(folder)))
        for kind, row in result.items():
            print(
                f"run {attempt + 1} {kind:9s}: new conversation {row['new_median_ms']:.2f} ms median "
                f"({row['new_mean_ms']:.2f} mean), its next turn {row['next_median_ms']:.2f} ms "
                f"({row['next_mean_ms']:.2f}); threads stored {row['threads_stored']}, deleted {row['deleted']}, "
                f"store {row['store_kib']:.0f} KiB"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
