"""Every benchmark script still runs end to end (tiny sizes), so the published numbers stay reproducible.

Only structure and correctness are asserted (views within budget, no invalid prompts, the extrapolation notice):
timings and ratios depend on the machine and are the scripts' output, not a test condition.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from windowkeeper.evaluation.datasets import data_dir

BENCH_DIR = Path(__file__).resolve().parents[2] / "bench"
DATA = data_dir()
needs_data = pytest.mark.skipif(
    not (DATA / "tau_bench").exists() or not (DATA / "longmemeval").exists(),
    reason=f"benchmark data not found at {DATA} (../shared/data or $WINDOWKEEPER_DATA_DIR); these benches read it",
)


@pytest.fixture(scope="module", autouse=True)
def bench_path() -> Iterator[None]:
    sys.path.insert(0, str(BENCH_DIR))
    try:
        yield
    finally:
        sys.path.remove(str(BENCH_DIR))


def bench(name: str) -> ModuleType:
    return importlib.import_module(name)


def test_overhead_generated_session(capsys: pytest.CaptureFixture[str]) -> None:
    result = bench("overhead_vs_trim_messages").main(["--turns", "40", "--source", "generated", "--budget", "4000"])
    out = capsys.readouterr().out
    assert result["turns"] == 40
    assert result["extrapolated"] is False
    assert 0 < result["ours_max_view"] <= 4000
    assert 0 < result["peer_max_view"] <= 4000
    assert "memoized trim_messages / ours" in out and "ours / floor" in out
    assert result["floor_s"] > 0 and result["memo_s"] > 0
    assert "NOTE" not in out


def test_overhead_peer_subset_is_announced(capsys: pytest.CaptureFixture[str]) -> None:
    result = bench("overhead_vs_trim_messages").main(
        ["--turns", "20", "--source", "generated", "--budget", "4000", "--peer-stride", "7"]
    )
    out = capsys.readouterr().out
    assert result["extrapolated"] is True
    assert "NOTE: uncached trim_messages was timed on 3 of 20 turns" in out
    assert "trim_messages, uncached counter (extrapolated)" in out


def test_reload_cost(capsys: pytest.CaptureFixture[str]) -> None:
    result = bench("reload_cost").main(["--turns", "15", "--budgets", "4000", "--repeats", "2"])
    out = capsys.readouterr().out
    assert set(result["4000"]) == {"live", "reload", "new process", "caller json"}
    assert result["worst_json_ratio"] > 0 and "caller json / live" in out
    assert result["worst_ratio"] > 0 and "reload / live" in out


def test_sync_vs_async(capsys: pytest.CaptureFixture[str]) -> None:
    result = bench("sync_vs_async").main(["--tokens", "1000", "--calls", "2", "--rounds", "1"])
    out = capsys.readouterr().out
    assert result["worst"] > 0 and "Window.fit" in out and "CompiledGraph.get_state" in out


def test_import_time(capsys: pytest.CaptureFixture[str]) -> None:
    result = bench("import_time").main(["--repeats", "1"])
    out = capsys.readouterr().out
    # one run of each: the child's CPU beyond a bare interpreter can be below zero by noise
    assert isinstance(result["ratio"], float) and "import windowkeeper" in out and "first trim" in out


def test_checkpoint_restart(capsys: pytest.CaptureFixture[str]) -> None:
    result = bench("checkpoint_restart").main(
        ["--sizes", "60", "--put-sizes", "60", "120", "--steps", "3", "--repeats", "1"]
    )
    out = capsys.readouterr().out
    assert result["read_ratio"] > 0 and result["put_growth"] > 0 and "SqliteSaver" in out


def test_under_budget(capsys: pytest.CaptureFixture[str]) -> None:
    result = bench("under_budget").main(["--source", "generated", "--sessions", "2", "--repeats", "1"])
    out = capsys.readouterr().out
    assert result["recall on"] > 0 and "x floor" in out


def test_checkpoint_cost(capsys: pytest.CaptureFixture[str]) -> None:
    result = bench("checkpoint_cost").main(["--prefill", "60", "--steps", "5"])
    out = capsys.readouterr().out
    assert 0 < result["bytes_ratio"] <= 2.0  # references, not the history, per step
    assert "LangGraph SqliteSaver" in out and "OpenAI Agents SQLiteSession" in out


def test_scaling(capsys: pytest.CaptureFixture[str]) -> None:
    result = bench("scaling").main(["--sizes", "200"])
    numbers = next(iter(result.values()))
    assert numbers["manager_ms_per_call"] > 0 and numbers["put_bytes_per_step"] > 0
    assert "first call s" in capsys.readouterr().out


def test_cold_trim(capsys: pytest.CaptureFixture[str]) -> None:
    result = bench("cold_trim_100k").main(["--messages", "300", "--budget", "4000"])
    out = capsys.readouterr().out
    assert 290 <= result["messages"] <= 300
    assert result["ours_s"] > 0 and result["peer_s"] > 0
    assert "TokenBudgetContextManager (cold counter)" in out


@needs_data
def test_overhead_tau(capsys: pytest.CaptureFixture[str]) -> None:
    result = bench("overhead_vs_trim_messages").main(["--turns", "30", "--budget", "4000"])
    assert result["turns"] == 30
    assert result["peer_max_view"] <= 4000
    assert "session: tau, 30 turns" in capsys.readouterr().out


@needs_data
def test_cache_cost(capsys: pytest.CaptureFixture[str]) -> None:
    result = bench("cache_cost").main(["--calls", "12", "--budgets", "8000", "--no-memory"])
    out = capsys.readouterr().out
    assert set(result) == {"tau@8000", "swe@8000"}
    for numbers in result.values():
        assert numbers["invalid"] == 0
        assert 0.0 <= numbers["stable"] <= 1.0
    assert "tau: 12 calls" in out and "swe: 12 calls" in out
    assert "TokenBudgetContextManager" in out and "sliding window" in out
    assert "anthropic: budget manager saves vs" in out


@needs_data
def test_longmemeval_retention(capsys: pytest.CaptureFixture[str]) -> None:
    module = bench("longmemeval_retention")
    result = module.main(["--questions", "1", "--budgets", "4000", "--no-memory", "--compare-recall"])
    out = capsys.readouterr().out
    for view in ("final", "asked"):
        tallies = result["4000"][view]
        # with no management the whole history is in view: every evidence turn is kept
        assert tallies["no management"]["evidence"] == 1.0
        assert {"sliding window", "TokenBudgetContextManager", "SummaryContextManager"} <= set(tallies)
        assert "TokenBudgetContextManager (no recall)" in tallies
        # recall in the other managers only adds to what they keep
        for name in ("MessageContextManager(5)", "SummaryContextManager"):
            assert tallies[f"{name} (recall)"]["answer_all"] >= tallies[name]["answer_all"]
            assert tallies[f"{name} (recall)"]["evidence"] >= tallies[name]["evidence"]
    assert "budget 4,000, final view" in out and "budget 4,000, question asked" in out


@needs_data
def test_recall_cost(capsys: pytest.CaptureFixture[str]) -> None:
    module = bench("recall_cost")
    result = module.main(["--demo-steps", "30", "--demo-budget", "4000", "--turns", "60", "--chat-budget", "4000"])
    out = capsys.readouterr().out
    for session in ("demo", "chat"):
        numbers = result["cache"][session]
        assert numbers[module.WITH]["invalid"] == 0 and numbers[module.WITHOUT]["invalid"] == 0
    assert result["speed"]["ratio"] > 0
    assert "recall adds" in out


def test_chat_steps_cut_before_each_user_turn() -> None:
    from windowkeeper.messages import Message

    module = bench("longmemeval_retention")
    msgs = [
        Message.text_message("sys", role="system", message_id="s"),
        Message.text_message("u1", role="user", message_id="u1"),
        Message.text_message("a1", role="assistant", message_id="a1"),
        Message.text_message("u2", role="user", message_id="u2"),
        Message.text_message("a2", role="assistant", message_id="a2"),
    ]
    steps = module.chat_steps(msgs)
    assert [[m.message_id for m in step] for step in steps] == [["s", "u1", "a1"], ["u2", "a2"]]
    assert module.answer_shown("2", "i have 2 cats") and not module.answer_shown("2", "in 2023")


def test_retention_three_kinds_tiny(capsys: pytest.CaptureFixture[str]) -> None:
    names = ["sliding window", "TokenBudgetContextManager", "SummaryContextManager", "BM25-fill"]
    result = bench("retention").main(
        ["--kinds", "dialogue", "agent", "--cases", "1", "--tokens", "4000", "--budgets", "1500", "--only", *names]
    )
    out = capsys.readouterr().out
    assert "dialogue, budget 1,500" in out and "agent, budget 1,500" in out
    for kind in ("dialogue", "agent"):
        rows = result[kind]["1500"]
        assert set(rows) == set(names)
        assert rows["BM25-fill"]["cases"] == 1 and rows["BM25-fill"]["calls"] > 10
        assert rows["TokenBudgetContextManager"]["over"] == 0  # the peer keeps a newest unit larger than the budget


def test_window_cost(capsys: pytest.CaptureFixture[str]) -> None:
    results = bench("window_cost").main(["--sizes", "200", "400", "--calls", "3", "--manager", "lean"])
    out = capsys.readouterr().out
    assert set(results) == {200, 400} and all(r["ours_ms"] > r["manager_ms"] > 0 for r in results.values())
    assert "ours / floor" in out and "growth" in out


def test_window_cost_with_a_store(capsys: pytest.CaptureFixture[str]) -> None:
    results = bench("window_cost").main(["--sizes", "200", "--calls", "3", "--manager", "lean", "--store", "sqlite"])
    assert results[200]["ours_ms"] > results[200]["manager_ms"] > 0
    assert "store sqlite" in capsys.readouterr().out


def test_adapter_overhead(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("agents")
    pytest.importorskip("langchain_openai")
    result = bench("adapter_overhead").main(
        ["--sizes", "200", "--turns", "2", "--agent-turns", "2", "--managers", "lean"]
    )
    out = capsys.readouterr().out
    assert result["sessions"]["lean"][200]["theirs_ms"] > 0 and result["middleware"]["lean"]["theirs_ms"] > 0
    assert "SQLiteSession" in out and "SummarizationMiddleware" in out


@pytest.mark.parametrize(
    ("script", "args"),
    [
        ("view_digest", ["--source", "generated", "--calls", "40", "--json-calls", "20"]),
        ("window_output_check", ["--calls", "6"]),
    ],
)
def test_output_checks_are_the_same_for_the_same_code(script: str, args: list[str], tmp_path: Path) -> None:
    # the two files cost-only changes are compared with: equal for the same code, or a diff would mean nothing
    first, second = tmp_path / "first", tmp_path / "second"
    for out in (first, second):
        bench(script).main(["--out", str(out), *args])
    assert first.read_bytes() == second.read_bytes() and first.read_text().count("\n") > 20
