"""What the gateway cost benchmarks share: a timed `Gateway.plan`, and new conversations sent to two gateways in
alternation (so that the machine's drift falls on both alike)."""

from __future__ import annotations

import statistics
import time
from typing import Any

import orjson

from windowkeeper.serve.gateway import Gateway
from windowkeeper.serve.protocols import PROTOCOLS

PROTOCOL = PROTOCOLS["/v1/messages"]


async def timed_plan(gateway: Gateway, messages: list[dict[str, Any]]) -> float:
    """Seconds `Gateway.plan` takes for an Anthropic Messages request holding ``messages``."""
    body: dict[str, Any] = {"model": "c", "max_tokens": 5, "system": "You are terse.", "messages": messages}
    raw = orjson.dumps(body)
    start = time.perf_counter()
    await gateway.plan(PROTOCOL, {"x-api-key": "sk-bench"}, body, messages, raw)
    return time.perf_counter() - start


async def alternate_conversations(
    gateways: dict[str, Gateway], conversations: int
) -> dict[str, dict[str, list[float]]]:
    """Each gateway's seconds per request, ``{"new": [...], "next": [...]}``: ``conversations`` new conversations
    (a first call, then its next turn), every one a new thread, the gateways taking turns to go first. One untimed
    call each comes first: it loads the tokenizer and makes the recall index."""
    first, second = gateways
    for gateway in gateways.values():
        await timed_plan(gateway, [{"role": "user", "content": "warm up"}])
    times: dict[str, dict[str, list[float]]] = {k: {"new": [], "next": []} for k in gateways}
    for n in range(conversations):
        opening = [{"role": "user", "content": f"conversation {n}: what is in config.env?"}]
        follow = [
            *opening,
            {"role": "assistant", "content": "It holds the deploy settings."},
            {"role": "user", "content": "and?"},
        ]
        order = (first, second) if n % 2 == 0 else (second, first)
        for kind in order:
            times[kind]["new"].append(await timed_plan(gateways[kind], opening))
        for kind in order:
            times[kind]["next"].append(await timed_plan(gateways[kind], follow))
    return times


def plan_stats(times: dict[str, list[float]]) -> dict[str, float]:
    """Median and mean milliseconds of the new conversations' calls and of their next turns."""
    return {
        "new_median_ms": statistics.median(times["new"]) * 1000,
        "new_mean_ms": statistics.fmean(times["new"]) * 1000,
        "next_median_ms": statistics.median(times["next"]) * 1000,
        "next_mean_ms": statistics.fmean(times["next"]) * 1000,
    }
