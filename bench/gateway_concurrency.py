"""50 agent sessions at once through one ``windowkeeper serve`` process for 60 s: errors, cross-wired threads, memory.

Each session holds one conversation at a time (a distinct system prompt and task, and a marker in every message it
sends), on one of the three protocols in turn, driven by the official async SDK. It sends its whole list on every
call and appends the reply and a new ~200-token user message; at a 4,000-token budget every thread is soon cut.
After ``--turns`` calls the session ends its conversation and starts a new one, as agents finish tasks, so the
work is stationary: the calls in flight carry lists of the same sizes, and the gateway's memory should stop
growing once its bounds are reached (threads kept by bytes and idleness, the process-wide memos by
``cache_bytes``). ``--turns 0`` keeps every conversation going for the whole run: then every in-flight request,
and every in-flight thread's state, grows with each call, and so does any process that reads them.

Checked: every call answered 200; each conversation keeps one thread and no two conversations share one; every
request the upstream received carries the marker of exactly one session (no message of one conversation ever
reaches another's request); the gateway's resident memory sampled every 5 s, and its threads in memory and
evictions (``GET /metrics``) at the end.

    PYTHONPATH=src python bench/gateway_concurrency.py [--sessions 50] [--seconds 60] [--turns 40]
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import anthropic  # noqa: E402
import httpx  # noqa: E402
import openai  # noqa: E402
from tests.serve.harness import served  # noqa: E402

from windowkeeper.testing.fake_servers import FakeAnthropicServer, FakeOpenAIServer  # noqa: E402

MARK = re.compile(r"\bS(\d{3})S\b")
TURNS = 40
"""Calls per conversation before a session starts the next (``--turns``): about a minute of one busy agent here."""
MAX_THREAD_BYTES = 512 * 1024
"""The gateway's bound here (``max_thread_bytes``): the 50 sessions' lists reach about 1.3 MB together within the
60 s, so the bound is reached and the plateau shows; the default (64 MiB) is reached by a busy gateway in hours."""
CACHE_BYTES = 4 * 1024 * 1024
"""The gateway's bound on its process-wide memos here (``cache_bytes``), for the same reason: the default (64 MiB)
is filled by token counts, summary lines and recalled originals of many conversations over hours, not in 60 s."""
PROTOCOLS = ("chat_completions", "responses", "messages")


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def user_text(session: int, conversation: int, n: int) -> str:
    filler = " ".join(f"note{(session * 31 + n * 7 + i) % 101}" for i in range(150))
    return f"S{session:03d}S task {conversation} turn {n}: {filler}"


async def session(index: int, urls: dict[str, str], until: float, turns: int, stats: dict[str, Any]) -> None:
    protocol = PROTOCOLS[index % 3]
    key = f"sk-session-{index % 5}"  # five credentials shared by the sessions: scoping plus recognition
    conversation = 0
    system = f"S{index:03d}S You are assistant number {index}, on task {conversation}."
    items: list[dict[str, Any]] = [{"role": "user", "content": user_text(index, conversation, 0)}]
    threads: set[str] = stats["threads"].setdefault((index, conversation), set())
    if protocol == "messages":
        an = anthropic.AsyncAnthropic(base_url=urls["anthropic"], api_key=key, max_retries=0, timeout=60)
    else:
        oa = openai.AsyncOpenAI(base_url=urls["openai"] + "/v1", api_key=key, max_retries=0, timeout=60)
    n = 0
    while time.monotonic() < until:
        n += 1
        if turns and n > turns:
            conversation, n = conversation + 1, 1
            system = f"S{index:03d}S You are assistant number {index}, on task {conversation}."
            items = [{"role": "user", "content": user_text(index, conversation, 0)}]
            threads = stats["threads"].setdefault((index, conversation), set())
        try:
            if protocol == "chat_completions":
                raw = await oa.chat.completions.with_raw_response.create(
                    model="m", messages=[{"role": "system", "content": system}, *items]
                )
                reply = raw.parse().choices[0].message.content or ""
            elif protocol == "responses":
                raw = await oa.responses.with_raw_response.create(model="m", instructions=system, input=items)
                reply = raw.parse().output_text
            else:
                raw = await an.messages.with_raw_response.create(
                    model="c", max_tokens=64, system=system, messages=items
                )
                parsed = raw.parse()
                message = await parsed if inspect.isawaitable(parsed) else parsed
                reply = "".join(b.text for b in message.content if b.type == "text")
            threads.add(raw.headers.get("x-windowkeeper-thread", ""))
            stats["calls"] += 1
        except Exception as exc:
            stats["errors"].append(f"session {index} call {n}: {type(exc).__name__}: {exc}")
            await asyncio.sleep(0.1)
            continue
        items = [
            *items,
            {"role": "assistant", "content": f"S{index:03d}S {reply}"},
            {"role": "user", "content": user_text(index, conversation, n)},
        ]
    await (an if protocol == "messages" else oa).close()


async def drive(sessions: int, seconds: float, turns: int, urls: dict[str, str], pid: int) -> dict[str, Any]:
    stats: dict[str, Any] = {"calls": 0, "errors": [], "threads": {}, "rss": []}
    until = time.monotonic() + seconds

    async def sample() -> None:
        started = time.monotonic()
        while time.monotonic() < until:
            stats["rss"].append((round(time.monotonic() - started), rss_mb(pid)))
            await asyncio.sleep(5)

    await asyncio.gather(sample(), *(session(i, urls, until, turns, stats) for i in range(sessions)))
    return stats


def cross_wired(requests: list[Any]) -> int:
    """Upstream requests carrying the markers of more than one session."""
    bad = 0
    for request in requests:
        marks = set(MARK.findall(request.raw.decode("utf-8", "replace")))
        bad += len(marks) != 1
    return bad


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--budget", type=int, default=4000)
    parser.add_argument("--turns", type=int, default=TURNS, help="calls per conversation (0: one per session)")
    parser.add_argument(
        "--max-thread-bytes",
        type=int,
        default=MAX_THREAD_BYTES,
        help="the gateway's bound on the request bytes of the threads it keeps in memory",
    )
    parser.add_argument(
        "--cache-bytes",
        type=int,
        default=CACHE_BYTES,
        help="the gateway's bound on its process-wide memos (token counts, summary lines, recall)",
    )
    args = parser.parse_args(argv)
    with FakeOpenAIServer() as oa, FakeAnthropicServer() as an, tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "serve.toml"
        config.write_text(f"max_thread_bytes = {args.max_thread_bytes}\ncache_bytes = {args.cache_bytes}\n")
        flags = ["--budget", str(args.budget), "--store", f"sqlite:///{tmp}/g.sqlite3", "--config", str(config)]
        flags += ["--openai-base-url", oa.base_url, "--anthropic-base-url", an.url]
        with served(*flags) as (url, pid):
            stats = asyncio.run(drive(args.sessions, args.seconds, args.turns, {"openai": url, "anthropic": url}, pid))
            gauges = dict(
                line.split(" ", 1)
                for line in httpx.get(url + "/metrics").text.splitlines()
                if line.startswith("windowkeeper_thread")
            )
        requests = [*oa.requests, *an.requests]
    per_conversation = stats["threads"]
    split = sum(len(t) > 1 for t in per_conversation.values())  # one whose calls all came late has none
    names = [next(iter(t)) for t in per_conversation.values() if len(t) == 1]
    shared = len(names) - len(set(names))
    wired = cross_wired(requests)
    rss = stats["rss"]
    warm = [mb for t, mb in rss if t >= args.seconds / 4]
    print(
        f"sessions {args.sessions}, {args.seconds:.0f} s, budget {args.budget:,}, turns per conversation "
        f"{args.turns or 'unbounded'}: {stats['calls']} calls in {len(per_conversation)} conversations, "
        f"{len(stats['errors'])} errors"
    )
    print(
        f"threads: {split} conversations on more than one thread, {shared} threads shared by two conversations; "
        f"{wired} upstream requests cross-wired of {len(requests)}"
    )
    print(
        f"gateway at the end: {gauges.get('windowkeeper_threads_in_memory', '?')} threads in memory, "
        f"{int(gauges.get('windowkeeper_thread_bytes', 0)):,} bytes of their requests, "
        f"{gauges.get('windowkeeper_thread_evictions_total', '?')} evictions"
    )
    print(
        f"gateway max_thread_bytes {args.max_thread_bytes:,}, cache_bytes {args.cache_bytes:,}; RSS (s, MB): "
        + ", ".join(f"{t}:{mb:.0f}" for t, mb in rss)
    )
    if warm:
        print(f"after warm-up: {min(warm):.0f} -> {warm[-1]:.0f} MB (max {max(warm):.0f})")
    for error in stats["errors"][:5]:
        print("  " + error)
    return 0 if not stats["errors"] and not split and not shared and not wired else 1


if __name__ == "__main__":
    raise SystemExit(main())
