"""The command line, driven as a user would: exit codes, files written, numbers printed, errors that point."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from windowkeeper.cli.app import app
from windowkeeper.evaluation.datasets import data_dir
from windowkeeper.evaluation.sessiongen import generate_session
from windowkeeper.llm.formats import to_openai_chat

runner = CliRunner()
TAU = data_dir() / "tau_bench" / "gpt-4o-airline.json"


@pytest.fixture
def conversation(tmp_path: Path) -> Path:
    path = tmp_path / "session.json"
    path.write_text(json.dumps(to_openai_chat(generate_session(40, seed=3).messages)))
    return path


def test_demo_writes_chart_and_reports_every_strategy(tmp_path: Path) -> None:
    chart = tmp_path / "chart.png"
    result = runner.invoke(app, ["demo", "--steps", "40", "--budget", "6000", "--chart", str(chart)])
    assert result.exit_code == 0, result.output
    assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    for name in (
        "no management",
        "sliding window",
        "MessageContextManager",
        "SummaryContextManager",
        "TokenBudgetContextManager",
        "three-tier memory",
    ):
        assert name in result.output
    assert "every sequence valid" in result.output


def test_inspect_shows_zones_and_roles(conversation: Path) -> None:
    result = runner.invoke(app, ["inspect", str(conversation)])
    assert result.exit_code == 0, result.output
    for word in ("system", "summary", "recent", "scratchpad", "reserve", "assistant", "tool"):
        assert word in result.output


def test_compact_writes_a_smaller_valid_conversation(conversation: Path, tmp_path: Path) -> None:
    from windowkeeper.evaluation.loaders import load_state
    from windowkeeper.tokens import default_counter
    from windowkeeper.units import validate

    out = tmp_path / "out.json"
    result = runner.invoke(
        app, ["compact", str(conversation), "--strategy", "budget", "--budget", "4000", "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    state = load_state(out)
    assert validate(state.context, "anthropic") == []
    assert default_counter().count_messages(state.context) < 4000
    for strategy in ("summary", "message", "window"):
        target = tmp_path / f"{strategy}.json"
        args = [
            "compact",
            str(conversation),
            "--strategy",
            strategy,
            "--budget",
            "4000",
            "-o",
            str(target),
            "--out-format",
            "openai",
        ]
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.output
        assert isinstance(json.loads(target.read_text()), list)


@pytest.mark.skipif(not TAU.exists(), reason=f"tau-bench data not found at {TAU}")
def test_simulate_on_tau_bench() -> None:
    result = runner.invoke(app, ["simulate", str(TAU), "--limit", "3", "--budget", "3000"])
    assert result.exit_code == 0, result.output
    assert "3 trajectories" in result.output


def test_bad_files_name_file_index_and_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"role": "user", "content": "hi"}, {"role": "robot", "content": "x"}]))
    result = runner.invoke(app, ["inspect", str(bad)])
    assert result.exit_code == 2
    assert "bad.json" in result.output and "message 1" in result.output and "role" in result.output

    broken = tmp_path / "broken.json"
    broken.write_text("[{")
    result = runner.invoke(app, ["inspect", str(broken)])
    assert result.exit_code == 2 and "not valid JSON" in result.output

    ours = tmp_path / "ours.json"
    ours.write_text(json.dumps({"context": [{"message_id": "m1", "role": "user", "content": [{"type": "nope"}]}]}))
    result = runner.invoke(app, ["inspect", str(ours)])
    assert result.exit_code == 2 and "message 0" in result.output and "content.0" in result.output


def test_unknown_strategy_is_rejected(conversation: Path) -> None:
    result = runner.invoke(app, ["compact", str(conversation), "--strategy", "magic"])
    assert result.exit_code == 2 and "magic" in result.output
