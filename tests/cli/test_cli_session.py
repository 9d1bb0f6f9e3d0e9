"""What a new user met trying every command on real files and odd ones: each case was wrong once."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from typer.testing import CliRunner

from windowkeeper.cli.app import app
from windowkeeper.testing.conversation_files import write_sample

runner = CliRunner()


def test_simulate_gives_up_on_a_silent_pipe_after_its_timeout(tmp_path: Path) -> None:
    """The error says "pass --timeout to wait longer", so simulate takes --timeout as inspect and compact do."""
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    started = time.monotonic()
    result = runner.invoke(app, ["simulate", str(fifo), "--timeout", "0.5", "--no-chart", "--json"])
    assert result.exit_code == 2, result.output
    doc = json.loads(result.stdout)
    assert doc["schema"] == "windowkeeper.simulate" and "nothing to read after 0.5 s" in doc["error"]
    assert time.monotonic() - started < 20


def test_simulate_takes_the_format_its_errors_suggest(tmp_path: Path) -> None:
    """A file detection cannot place says "(or pass --format)"; simulate accepts --format like inspect."""
    path, _ = write_sample(tmp_path, "openai-request")
    result = runner.invoke(app, ["simulate", str(path), "--format", "openai", "--no-chart", "--json"])
    assert result.exit_code in (0, 1), result.output
    assert json.loads(result.stdout)["trajectories"] == 1
    wrong = runner.invoke(app, ["simulate", str(path), "--format", "gemini", "--no-chart"])
    assert wrong.exit_code == 2 and "Traceback" not in wrong.stderr, wrong.output
