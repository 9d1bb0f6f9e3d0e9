"""bench/agent_retention.py (the second conversation set) runs end to end at a tiny size, with sound probes."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from windowkeeper.testing.sessiongen import generate_session_for_tokens

BENCH_DIR = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture(scope="module")
def module() -> Iterator[ModuleType]:
    sys.path.insert(0, str(BENCH_DIR))
    try:
        yield importlib.import_module("agent_retention")
    finally:
        sys.path.remove(str(BENCH_DIR))


def test_probe_names_its_task_but_not_its_answer(module: ModuleType) -> None:
    session = generate_session_for_tokens(30_000, seed=2)
    probe = module.pick_probe(session, 2)
    assert probe.fact.kind in ("decision", "number")
    assert probe.fact.text not in probe.question
    index = [str(m.message_id) for m in session.messages].index(probe.fact.message_id)
    assert index < len(session.messages) // 2
    steps = module.steps_of(session.messages)
    assert [m for step in steps for m in step] == session.messages


def test_runs_end_to_end(module: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    result = module.main(["--sessions", "1", "--tokens", "12000", "--budgets", "2000"])
    out = capsys.readouterr().out
    for view in ("final", "asked"):
        tallies = result["2000"][view]
        assert tallies["no management"]["facts"] == 1.0  # the whole history is in view
        assert {"sliding window", "TokenBudgetContextManager"} <= set(tallies)
    assert "budget 2,000, question asked" in out
