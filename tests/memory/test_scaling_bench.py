"""`bench/memory_scaling.py` runs at a tiny size on both backends and reports what it claims to."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

BENCH_DIR = Path(__file__).resolve().parents[2] / "bench"


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
async def test_memory_scaling_bench_measures_adds_and_reopen(backend: str, tmp_path: Path) -> None:
    sys.path.insert(0, str(BENCH_DIR))
    try:
        bench = importlib.import_module("memory_scaling")
    finally:
        sys.path.remove(str(BENCH_DIR))
    row = await bench.measure(150, backend, 30, tmp_path)
    assert row["messages"] == 150 and row["live"] == 150 == row["records"] - 1  # + the head record
    assert row["per_add_ms"] > 0 and row["max_add_ms"] >= row["per_add_ms"]
    assert row["reopen_ms"] >= 0 and row["view_tokens"] > 0
    assert row["first_call_ms"] >= row["reopen_ms"]  # the first messages() comes on top of the reload
    if backend == "sqlite":  # a kept file is reused: only the reopen is measured again
        again = await bench.measure(150, backend, 30, tmp_path, 2)
        assert again["per_add_ms"] is None and again["view_tokens"] == row["view_tokens"]
        assert again["live"] == row["live"] and again["records"] == row["records"]
