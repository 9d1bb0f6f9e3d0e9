"""What the gateway adds to a call: latency over calling the upstream directly, its CPU per request, and the time
to the first streamed byte, at 1k, 10k and 100k-token conversations that continue one thread each.

The upstream is the fake OpenAI server; the gateway is a real ``windowkeeper serve`` process (budget 128k, so
these conversations pass through unchanged, which is the common case). Each measured request appends a reply and a
new user message to the conversation; direct and gateway requests alternate, so both see the same machine load and
the same upstream work, and the added latency is the per-pair difference. The three conversations advance in
rounds (one request of each per round), so the 10k and 100k figures come from the same stretch of the process's
life and their ratio does not depend on which size ran first. The gateway's CPU time per request is
read from the scheduler (``/proc/<pid>/task/*/schedstat``, nanoseconds) around each pair of gateway requests (one
plain, one streamed) and divided by two.

    PYTHONPATH=src python bench/gateway_latency.py [--requests 60]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
from tests.serve.harness import served  # noqa: E402

from windowkeeper.testing.fake_servers import FakeOpenAIServer  # noqa: E402

SIZES = (1_000, 10_000, 100_000)
WORDS = [
    "alpha",
    "bravo",
    "charlie",
    "delta",
    "echo",
    "foxtrot",
    "golf",
    "hotel",
    "india",
    "juliet",
    "kilo",
    "lima",
    "mike",
    "november",
    "oscar",
    "papa",
]


MESSAGE_TOKENS = 282
"""What `message` measures with the gateway's counter (cl100k-style: 120 words with a number each)."""


def message(n: int, role: str) -> dict[str, Any]:
    """A `MESSAGE_TOKENS`-token message, different for every ``n``."""
    words = [WORDS[(n * 7 + i * 3) % len(WORDS)] + str((n + i) % 97) for i in range(120)]
    return {"role": role, "content": " ".join(words)}


def conversation(tokens: int) -> list[dict[str, Any]]:
    """About ``tokens`` tokens of alternating messages, ending with a user message."""
    items = [{"role": "system", "content": "You are a careful assistant."}]
    count = max(1, round(tokens / MESSAGE_TOKENS))
    for n in range(count - (count % 2 == 0)):  # an odd count: the last message is the user's
        items.append(message(n, "user" if n % 2 == 0 else "assistant"))
    return items


def cpu_seconds(pid: int) -> float:
    """The gateway's CPU time so far, every thread's: nanoseconds from the scheduler (``schedstat``) where the
    kernel keeps them, else clock ticks (10 ms each: a 2 ms request reads as 0 or 10, so short runs are noisy)."""
    try:
        return (
            sum(int((task / "schedstat").read_text().split()[0]) for task in Path(f"/proc/{pid}/task").iterdir()) / 1e9
        )
    except (OSError, ValueError, IndexError):
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def first_byte(http: httpx.Client, url: str, content: bytes, headers: dict[str, str]) -> float:
    """Seconds to the first byte of a streamed answer (the rest is read, so the connection can be reused)."""
    started = time.perf_counter()
    with http.stream("POST", url, content=content, headers=headers) as response:
        chunks = response.iter_raw()
        next(chunks)
        first = time.perf_counter() - started
        for _ in chunks:
            pass
    return first


class Conversation:
    """One continuing thread of a given size and what was measured on it so far."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.items = conversation(size)
        self.key = {"authorization": f"Bearer sk-latency-{size}"}
        self.added: list[float] = []
        self.ttfb_added: list[float] = []
        self.cpu: list[float] = []
        self.tokens = 0
        self.calls = 0

    def step(self, direct_url: str, gateway_url: str, pid: int, http: httpx.Client) -> None:
        """One direct/gateway pair, plain and streamed; the first five of a thread are its warm-up (they read the
        whole list once) and are not recorded."""
        raw = json.dumps({"model": "m", "messages": self.items}).encode()
        t0 = time.perf_counter()
        http.post(direct_url + "/chat/completions", content=raw, headers=self.key).raise_for_status()
        direct = time.perf_counter() - t0
        c0 = cpu_seconds(pid)
        t0 = time.perf_counter()
        response = http.post(gateway_url + "/v1/chat/completions", content=raw, headers=self.key)
        via = time.perf_counter() - t0
        response.raise_for_status()
        stream = json.dumps({"model": "m", "messages": self.items, "stream": True}).encode()
        direct_first = first_byte(http, direct_url + "/chat/completions", stream, self.key)
        via_first = first_byte(http, gateway_url + "/v1/chat/completions", stream, self.key)
        # both gateway requests of the pair, and the bookkeeping the first left for after its answer (`behind`)
        c1 = cpu_seconds(pid)
        n = self.calls
        if n >= 5:
            self.added.append(via - direct)
            self.ttfb_added.append(via_first - direct_first)
            self.cpu.append((c1 - c0) / 2)
            self.tokens = int(response.headers["x-windowkeeper-tokens-after"])
        self.items = [
            *self.items,
            {"role": "assistant", "content": f"reply {n}"},
            {"role": "user", "content": f"and {n}?"},
        ]
        self.calls += 1

    def row(self) -> dict[str, Any]:
        return {
            "size": self.size,
            "tokens": self.tokens,
            "p50_ms": percentile(self.added, 0.5) * 1000,
            "p99_ms": percentile(self.added, 0.99) * 1000,
            "ttfb_p50_ms": percentile(self.ttfb_added, 0.5) * 1000,
            "cpu_ms": sum(self.cpu) / len(self.cpu) * 1000,
            "cpu_p50_ms": percentile(self.cpu, 0.5) * 1000,
        }


def measure(
    sizes: tuple[int, ...], requests: int, direct_url: str, gateway_url: str, pid: int, http: httpx.Client
) -> list[dict[str, Any]]:
    """Round after round, one step of every size's thread: the sizes share the process's state (its age, heap,
    caches and the machine's load at that moment), so their ratio compares like with like."""
    threads = [Conversation(size) for size in sizes]
    for _ in range(requests + 5):
        for thread in threads:
            thread.step(direct_url, gateway_url, pid, http)
    return [thread.row() for thread in threads]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=60)
    parser.add_argument("--store", help="the gateway's store URL (default: a SQLite file in a temporary folder)")
    args = parser.parse_args(argv)
    with FakeOpenAIServer() as upstream, tempfile.TemporaryDirectory() as tmp:
        flags = [
            "--budget",
            "128000",
            "--store",
            args.store or f"sqlite:///{tmp}/g.sqlite3",
            "--openai-base-url",
            upstream.base_url,
        ]
        with served(*flags) as (url, pid), httpx.Client(timeout=120) as http:
            measure((2_000,), 5, upstream.base_url, url, pid, http)  # the process's first calls load its tokenizer
            rows = measure(SIZES, args.requests, upstream.base_url, url, pid, http)
    print(
        "| conversation | tokens | added p50 | added p99 | first byte added (p50) | gateway CPU / request "
        "(mean) | (median) |"
    )
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        print(
            f"| {row['size']:,} | {row['tokens']:,} | {row['p50_ms']:.2f} ms | {row['p99_ms']:.2f} ms | "
            f"{row['ttfb_p50_ms']:.2f} ms | {row['cpu_ms']:.2f} ms | {row['cpu_p50_ms']:.2f} ms |"
        )
    if rows[1]["cpu_ms"] > 0 and rows[1]["cpu_p50_ms"] > 0:
        print(
            f"\nCPU per request at 100k / at 10k: {rows[2]['cpu_ms'] / rows[1]['cpu_ms']:.2f}x (means), "
            f"{rows[2]['cpu_p50_ms'] / rows[1]['cpu_p50_ms']:.2f}x (medians)"
        )
    else:  # the kernel counts a process's CPU in clock ticks where it keeps no nanoseconds: too few to tell
        print("\nCPU per request at 100k / at 10k: too few requests to measure (raise --requests)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
