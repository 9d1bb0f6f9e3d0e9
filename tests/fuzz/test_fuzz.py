"""Hostile-input fuzz suite (issue 12): readers, managers, memory and the CLI under careless and mutated input.

Each property draws a seed; `tests/fuzz/engine.py` turns it into conversations and payloads and checks the
guarantees: a typed error or a valid result, nothing stored lost, no call slower than `SLOW_CALL_S` (and the
whole test under its pytest-timeout). The default run is short (well under a minute for the file); the long run,
sized for 100,000+ views and 20,000+ mutated payloads, is opt-in: ``WINDOWKEEPER_FUZZ_LONG=1 pytest
tests/fuzz`` or ``python bench/fuzz_long.py``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
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

SEEDS = st.integers(min_value=0, max_value=2**32 - 1)


def quick(examples: int) -> settings:
    return settings(
        max_examples=examples,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )


def _assert_clean(tally: Tally, seed: int) -> None:
    assert tally.clean, f"seed {seed}: {tally.summary()}\n" + "\n".join(tally.findings)


@pytest.fixture(autouse=True)
def _quiet_logs() -> Iterator[None]:
    # failing summarizers log tracebacks on purpose; thousands of them would only slow the run down. The level is
    # put back afterwards: later tests assert on these very log records.
    logger = logging.getLogger("windowkeeper")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    yield
    logger.setLevel(level)


@pytest.mark.timeout(60)
@quick(150)
@given(seed=SEEDS)
def test_readers_give_a_format_error_or_messages(seed: int) -> None:
    rnd = random.Random(seed)
    tally = Tally()
    for codec in CODECS:
        payload = provider_payload(rnd, codec)
        assert check_reader(codec, payload, tally) is not None, tally.findings  # the writer's output reads back
        for _ in range(3):
            check_reader(codec, mutate(rnd, payload), tally)
    _assert_clean(tally, seed)


@pytest.mark.timeout(60)
@quick(30)
@given(seed=SEEDS)
def test_managers_return_valid_views(seed: int) -> None:
    tally = Tally()
    check_managers(random.Random(seed), tally, managers(), rounds=3)
    _assert_clean(tally, seed)
    assert tally.views > 0


@pytest.mark.timeout(60)
@quick(30)
@given(seed=SEEDS)
def test_memory_keeps_everything_and_a_valid_view(seed: int) -> None:
    tally = Tally()
    asyncio.run(check_memory(random.Random(seed), tally))
    _assert_clean(tally, seed)


@pytest.mark.timeout(60)
@quick(60)
@given(seed=SEEDS)
def test_cli_ends_in_an_exit_code_never_a_traceback(seed: int, tmp_path: Path) -> None:
    tally = Tally()
    check_cli(random.Random(seed), tally, tmp_path)
    _assert_clean(tally, seed)


@pytest.mark.slow
@pytest.mark.timeout(6 * 3600)
@pytest.mark.skipif(
    os.environ.get("WINDOWKEEPER_FUZZ_LONG") != "1", reason="long fuzz run: set WINDOWKEEPER_FUZZ_LONG=1"
)
def test_long_run(tmp_path: Path) -> None:
    from tests.fuzz.long_run import run

    seed = int(os.environ.get("WINDOWKEEPER_FUZZ_SEED", "0"))
    tally = run(views=100_000, payloads=20_000, workdir=tmp_path, seed=seed)
    print(tally.summary())
    assert tally.views >= 100_000 and tally.payloads >= 20_000
    assert tally.clean, tally.summary() + "\n" + "\n".join(tally.findings)
