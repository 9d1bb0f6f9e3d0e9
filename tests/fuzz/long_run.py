"""The long fuzz run: at least ``views`` manager/memory views and ``payloads`` mutated payloads and CLI inputs.

Shared by ``WINDOWKEEPER_FUZZ_LONG=1 pytest tests/fuzz`` and ``python bench/fuzz_long.py``; prints progress to
stderr every 30 s so a long run can be watched and, if it must stop early, reported as far as it got.
"""

from __future__ import annotations

import asyncio
import logging
import random
import sys
import time
from pathlib import Path

from tests.fuzz.engine import (
    CODECS,
    Tally,
    check_cli,
    check_managers,
    check_memory,
    check_reader,
    managers,
    mutate,
    provider_payload,
)


def run(
    *, views: int, payloads: int, workdir: Path, seed: int = 0, cli_share: float = 0.02, deadline_s: float | None = None
) -> Tally:
    """Fuzz until both targets are met (or ``deadline_s`` passed); the tally says what was done and found."""
    logger = logging.getLogger("windowkeeper")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    rnd = random.Random(seed)
    tally = Tally()
    mgrs = managers()
    started = last_report = time.monotonic()
    loop = asyncio.new_event_loop()
    try:
        while tally.views < views or tally.payloads < payloads:
            if deadline_s is not None and time.monotonic() - started > deadline_s:
                print(f"deadline reached: {tally.summary()}", file=sys.stderr)
                break
            if tally.payloads < payloads:
                for codec in CODECS:
                    payload = provider_payload(rnd, codec)
                    for _ in range(4):
                        check_reader(codec, mutate(rnd, payload), tally)
                if rnd.random() < cli_share * 5:
                    check_cli(rnd, tally, workdir)
            if tally.views < views:
                check_managers(rnd, tally, mgrs, rounds=rnd.choice((3, 6, 10)))
                if rnd.random() < 0.15:
                    loop.run_until_complete(check_memory(rnd, tally))
                if len(mgrs) and rnd.random() < 0.01:
                    mgrs = managers()  # fresh managers now and then: per-thread tracks stay bounded anyway
            now = time.monotonic()
            if now - last_report > 30:
                last_report = now
                print(f"[{now - started:,.0f} s] {tally.summary()}", file=sys.stderr, flush=True)
    finally:
        loop.close()
        logger.setLevel(level)
    return tally


__all__ = ["run"]
