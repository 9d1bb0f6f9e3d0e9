"""docs/cli.md: "`-h` shows help for any command: its options, one example, the fields of its `--json` document
and the exit codes, so an installed copy needs no other page". Every leaf command is held to that."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from windowkeeper.cli.app import app

runner = CliRunner()


def _leaf_commands() -> list[list[str]]:
    found: list[list[str]] = []

    def walk(group: Any, path: list[str]) -> None:
        for name, command in group.commands.items():
            if hasattr(command, "commands"):
                walk(command, [*path, name])
            else:
                found.append([*path, name])

    walk(typer.main.get_command(app), [])
    return found


def test_every_command_is_walked() -> None:
    names = {" ".join(path) for path in _leaf_commands()}
    assert {"demo", "inspect", "compact", "simulate", "serve", "store check", "store prune"} <= names


@pytest.mark.parametrize("path", _leaf_commands(), ids=" ".join)
def test_help_shows_an_example_the_exit_codes_and_the_json_fields(path: list[str]) -> None:
    result = runner.invoke(app, [*path, "-h"], terminal_width=120)
    assert result.exit_code == 0, result.output
    text = result.output
    assert "Example:" in text and f"windowkeeper {' '.join(path)}" in text.split("Example:")[1]
    assert "Exit" in text and " 2" in text.split("Exit")[-1]
    if "--json" in text:
        assert f'"schema": "windowkeeper.{".".join(path)}"' in text


@pytest.mark.timeout(60)
def test_serve_refuses_a_store_path_it_cannot_open_before_it_listens(tmp_path: Path) -> None:
    """``serve --store FOLDER`` printed "Uvicorn running", failed every request on the store and left a traceback
    at shutdown; it now says what is wrong and exits 2 before listening."""
    pytest.importorskip("uvicorn")
    blocker = tmp_path / "notes.txt"
    blocker.write_text("x")
    for store in (str(tmp_path), f"sqlite:///{blocker}/gw.db"):
        result = runner.invoke(app, ["serve", "--port", "0", "--store", store])
        assert result.exit_code == 2, result.output
        assert "is a folder" in result.stderr or "is a file, not a folder" in result.stderr
        assert "Traceback" not in result.output
