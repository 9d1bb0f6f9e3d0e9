"""The gateway benchmarks run end to end at tiny sizes (their numbers are the scripts' output, not a test)."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

BENCH_DIR = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture(scope="module")
def load() -> Iterator[object]:
    sys.path.insert(0, str(BENCH_DIR))
    try:
        yield importlib.import_module
    finally:
        sys.path.remove(str(BENCH_DIR))


def test_latency_bench_runs(load: object, capsys: pytest.CaptureFixture[str]) -> None:
    module: ModuleType = load("gateway_latency")  # type: ignore[operator]
    assert module.main(["--requests", "3"]) == 0
    out = capsys.readouterr().out
    assert "| 100,000 |" in out and "CPU per request at 100k / at 10k" in out


def test_concurrency_bench_runs(load: object, capsys: pytest.CaptureFixture[str]) -> None:
    module: ModuleType = load("gateway_concurrency")  # type: ignore[operator]
    assert module.main(["--sessions", "4", "--seconds", "4"]) == 0
    out = capsys.readouterr().out
    assert "0 errors" in out and "0 upstream requests cross-wired" in out
