"""What a CLI review found: numbers printed as counts that were estimates, errors suggesting what cannot work, a
folder of unreadable files printing a line per file, and error text carrying the parser's internals."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from windowkeeper.cli.app import app

runner = CliRunner()


def _json(stdout: str) -> dict[str, Any]:
    doc = json.loads(stdout)
    assert isinstance(doc, dict)
    return doc


def _long_session(path: Path, turns: int) -> Path:
    """A history long enough (over 512 messages) that the budget manager reads it from its newest end only."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You help with records."}]
    for i in range(turns):
        messages.append({"role": "user", "content": f"question {i}: " + "which record and why " * (3 + i % 7)})
        messages.append({"role": "assistant", "content": f"answer {i}: " + "the record 4471 " * (5 + i % 11)})
    path.write_text("\n".join(json.dumps(m) for m in messages) + "\n")
    return path


@pytest.mark.parametrize("turns", [100, 400])
def test_compact_budget_reports_the_exact_tokens_before_as_inspect_counts_them(tmp_path: Path, turns: int) -> None:
    """From 512 messages the budget strategy estimated the count before (a long file read 10% under what
    `inspect` counts) and printed it as a count; under 512 it was exact but flagged ``tokens_before_exact: false``."""
    path = _long_session(tmp_path / "long.jsonl", turns)
    inspected = runner.invoke(app, ["inspect", str(path), "--json"])
    assert inspected.exit_code == 0, inspected.output
    counted = _json(inspected.stdout)["conversations"][0]["tokens"]["input"]
    out = tmp_path / "out.jsonl"
    result = runner.invoke(app, ["compact", str(path), "--budget", "2000", "-o", str(out), "--json"])
    assert result.exit_code == 0, result.output
    doc = _json(result.stdout)
    assert doc["messages_before"] == 2 * turns + 1
    assert doc["tokens_before"] == counted
    assert doc["tokens_before_exact"] is True
    text = runner.invoke(app, ["compact", str(path), "--budget", "2000", "-o", str(out), "--force"])
    assert f"{counted:,} -> " in text.stderr + text.stdout
