"""What the command line did silently or cut short.

* An Anthropic request read with ``--format openai`` lost its top-level ``system``: OpenAI Chat keeps the system
  prompt among the messages, so the reader never looked at it, and ``inspect`` counted 0 system tokens while
  ``compact`` wrote the prompt back as a key no OpenAI body has. The prompt is now the leading system message, and
  what the conversion cannot carry (a block's ``cache_control``, Anthropic-only request settings) is named in a
  warning on stderr and in ``--json``.
* ``--chart X --no-chart`` wrote no chart and said nothing about X; the two are now refused together (exit 2).
* ``windowkeeper -h`` cut every command's description mid-sentence ("...") to fit the terminal.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from windowkeeper.cli.app import app

runner = CliRunner()
PROMPT = "You are a very careful pirate assistant who always answers in rhymes."


def _request(tmp_path: Path, system: Any, **extra: Any) -> Path:
    body = {
        "model": "claude-x",
        "max_tokens": 100,
        **extra,
        "system": system,
        "messages": [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "ahoy"}],
    }
    path = tmp_path / "anthropic.json"
    path.write_text(json.dumps(body))
    return path


def _system_tokens(path: Path, *args: str) -> tuple[int, dict[str, Any], str]:
    result = runner.invoke(app, ["inspect", str(path), "--json", *args])
    assert result.exit_code == 0, result.output
    (report,) = json.loads(result.stdout)["conversations"]
    return report["tokens"]["zones"]["system"], report, result.stderr


def test_inspect_forced_to_openai_counts_an_anthropic_system_prompt(tmp_path: Path) -> None:
    path = _request(tmp_path, PROMPT)
    native, _, _ = _system_tokens(path)
    forced, report, stderr = _system_tokens(path, "--format", "openai")
    assert native > 0 and forced == native
    assert report["roles"]["system"]["messages"] == 1
    assert any("'system'" in w for w in report["warnings"])
    assert "'system'" in stderr and "--format anthropic" in stderr


def test_what_the_conversion_cannot_carry_is_named(tmp_path: Path) -> None:
    blocks = [{"type": "text", "text": PROMPT, "cache_control": {"type": "ephemeral"}}]
    path = _request(tmp_path, blocks, top_k=5, thinking={"type": "enabled", "budget_tokens": 2000})
    forced, report, stderr = _system_tokens(path, "--format", "openai")
    assert forced == _system_tokens(path)[0]
    for field in ("system[0].cache_control", "top_k", "thinking"):
        assert any(field in w for w in report["warnings"]), (field, report["warnings"])
        assert field in stderr
    assert "max_tokens" not in stderr  # an OpenAI Chat field too: nothing is lost


def test_an_openai_request_has_no_warnings(tmp_path: Path) -> None:
    path = tmp_path / "chat.json"
    path.write_text(json.dumps({"model": "gpt-4o", "messages": [{"role": "system", "content": PROMPT}]}))
    _, report, stderr = _system_tokens(path)
    assert report["warnings"] == [] and "warning" not in stderr


def test_compact_forced_to_openai_writes_the_prompt_as_a_system_message(tmp_path: Path) -> None:
    path = _request(tmp_path, PROMPT, top_k=5)
    result = runner.invoke(app, ["compact", str(path), "--format", "openai", "-o", "-"])
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    assert "system" not in body
    assert body["messages"][0] == {"role": "system", "content": PROMPT}
    assert "top_k" in result.stderr


def test_an_unreadable_system_prompt_is_an_input_error(tmp_path: Path) -> None:
    path = _request(tmp_path, 5)
    result = runner.invoke(app, ["inspect", str(path), "--format", "openai"])
    assert result.exit_code == 2
    assert "'system'" in result.stderr


@pytest.mark.parametrize("command", ["demo", "simulate"])
def test_chart_and_no_chart_are_refused_together(tmp_path: Path, command: str) -> None:
    chart = tmp_path / "chart.png"
    args = [command, *(["--steps", "10"] if command == "demo" else [str(tmp_path)])]
    result = runner.invoke(app, [*args, "--chart", str(chart), "--no-chart"])
    assert result.exit_code == 2, result.output
    assert "--chart" in result.stderr and "--no-chart" in result.stderr and str(chart) in result.stderr
    assert "drop" in result.stderr  # says what to do
    assert not chart.exists()
    as_json = runner.invoke(app, [*args, "--no-chart", "--chart", str(chart), "--json"])
    assert as_json.exit_code == 2
    doc = json.loads(as_json.stdout)
    assert doc["schema"] == f"windowkeeper.{command}" and doc["ok"] is False and "--no-chart" in doc["error"]


@pytest.mark.parametrize("args", [["-h"], ["store", "-h"]])
def test_command_lists_show_whole_descriptions(args: list[str]) -> None:
    """The command list cut every description at the terminal's width, mid-sentence with "..."."""
    result = runner.invoke(app, args, terminal_width=80)
    assert result.exit_code == 0, result.output
    commands = result.stdout.split("Commands:", 1)[1]
    assert commands.strip() and "..." not in commands, commands
