"""What running every command as a new user found: hints that could not be pasted, numbers that did not match
the file, messages that did not name the bad value."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from windowkeeper.cli.app import app

runner = CliRunner()


def test_the_jq_hint_names_the_file_the_user_passed(tmp_path: Path) -> None:
    """The hint for a LongMemEval question said ``FILE`` where the path goes, so it could not be pasted."""
    folder = tmp_path / "my data"
    folder.mkdir()
    question = folder / "q 1.json"
    chat = [{"role": "user", "content": "I moved to Lisbon."}, {"role": "assistant", "content": "Welcome!"}]
    question.write_text(json.dumps({"question_id": "q1", "question": "Where?", "haystack_sessions": [chat]}))
    for command in ("inspect", "compact"):
        result = runner.invoke(app, [command, str(question)])
        assert result.exit_code == 2
        assert f"jq '.haystack_sessions[0]' '{question}' > session.json" in result.stderr
        assert "FILE" not in result.stderr


@pytest.mark.parametrize("form", ["path", "url"])
def test_store_check_of_a_missing_sqlite_file_is_an_error_and_creates_nothing(
    tmp_path: Path, form: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A mistyped path made a new empty database and reported "0 unreadable row(s)", exit 0: the user was told
    their store was sound and found an extra file beside it. ``sqlite:///`` and an absolute path is the usual
    slip (three slashes make the path relative): the error spells the URL of the absolute path."""
    monkeypatch.chdir(tmp_path)
    missing = tmp_path / "typo.db"
    url = str(missing) if form == "path" else f"sqlite://{missing}"
    result = runner.invoke(app, ["store", "check", url, "--json"])
    assert result.exit_code == 2, result.output
    assert not list(tmp_path.iterdir())
    doc = json.loads(result.stdout)
    assert doc["ok"] is False and "no such database file" in doc["error"]
    if form == "url":
        assert f"sqlite:///{missing}" in result.stderr  # the four-slash spelling
        assert "relative" in result.stderr


def test_store_check_of_an_existing_file_still_runs(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "empty.db"
    sqlite3.connect(path).close()
    result = runner.invoke(app, ["store", "check", str(path)])
    assert result.exit_code == 0, result.output
    assert "0 unreadable row(s)" in result.stderr


@pytest.mark.parametrize(
    ("case", "forced", "detected"),
    [
        ("anthropic-system", "gemini", "anthropic"),
        ("langchain", "openai", "langchain"),
        ("openai-list", "claude-code", "openai"),
        ("gemini", "responses", "gemini"),
        ("responses", "langchain", "responses"),
    ],
)
def test_a_wrongly_forced_format_names_the_format_the_file_has(
    tmp_path: Path, case: str, forced: str, detected: str
) -> None:
    """``--format`` given wrongly failed with what the wrong reader missed ("'contents' is null", a hundred
    "missing required 'role'", "found None x153") and no word that the file is fine in its own format."""
    from windowkeeper.testing.conversation_files import write_sample

    source, _fmt = write_sample(tmp_path, case)
    for command in ("inspect", "compact"):
        result = runner.invoke(app, [command, str(source), "--format", forced])
        assert result.exit_code == 2, result.output
        first = result.stderr.splitlines()[0]
        assert f"read as {forced}" in first and f"--format {detected}" in first, first
        assert "is null" not in result.stderr and "found None" not in result.stderr


def test_simulate_counts_one_trajectory_in_the_singular(tmp_path: Path) -> None:
    """ "Loaded 1 trajectories" and a table titled "1 trajectories, ..." for a single recorded conversation."""
    from windowkeeper.testing.conversation_files import write_sample

    source, _fmt = write_sample(tmp_path, "openai-list")
    result = runner.invoke(app, ["simulate", str(source), "--no-chart"])
    assert result.exit_code == 0, result.output
    assert f"Loaded 1 trajectory from {source}." in result.stderr
    assert "1 trajectory, " in result.stdout and "1 trajectories" not in result.output


@pytest.mark.parametrize(
    ("command", "name"), [("inspect", "FILE"), ("compact", "FILE"), ("simulate", "PATH"), ("store check", "URL")]
)
def test_usage_names_the_argument_as_the_docs_do(command: str, name: str) -> None:
    """The usage line read ``windowkeeper inspect [OPTIONS] {file}`` where docs/cli.md says FILE."""
    result = runner.invoke(app, [*command.split(), "-h"])
    assert result.exit_code == 0
    assert f"windowkeeper {command} [OPTIONS] {{{name}}}" in result.stdout or f"[OPTIONS] {name}" in result.stdout
    missing = runner.invoke(app, command.split())
    assert missing.exit_code == 2 and f"Missing argument '{name}'" in missing.stderr


def test_a_chart_name_that_is_not_png_is_refused_for_that_first(tmp_path: Path) -> None:
    """``--chart results.json`` naming an existing file said "pass --force to overwrite it", and with --force the
    chart was refused for not being a PNG: the first error pointed at a fix that could not work."""
    existing = tmp_path / "results.json"
    existing.write_text("{}")
    result = runner.invoke(app, ["demo", "--steps", "10", "--chart", str(existing)])
    assert result.exit_code == 2
    assert ".png" in result.stderr and "--force" not in result.stderr
    assert existing.read_text() == "{}"


@pytest.mark.parametrize("command", ["demo", "simulate"])
def test_force_says_what_it_overwrites_where_the_only_output_is_the_chart(command: str) -> None:
    """demo and simulate write nothing but the chart, yet --force read "Overwrite an existing output file."."""
    result = runner.invoke(app, [command, "-h"], terminal_width=200)
    assert result.exit_code == 0
    line = next(line for line in result.stdout.splitlines() if line.strip().startswith("--force"))
    assert "chart" in line and "output file" not in line


def test_compact_help_says_what_each_strategy_does() -> None:
    """--strategy's help was "What to apply.": nothing said that message keeps budget // 1000 user turns (so it
    may end over the budget) or which strategy summarizes."""
    result = runner.invoke(app, ["compact", "-h"])
    assert result.exit_code == 0
    text = " ".join(result.stdout.split())
    line = text.split("--strategy <budget|summary|message|window>", 1)[1].split("--budget <int>", 1)[0]
    for name in ("budget:", "summary:", "message:", "window:", "budget // 1000"):
        assert name in line, (name, line)


@pytest.mark.parametrize("unreadable", [1, 5])
def test_a_folder_with_an_unreadable_file_says_what_to_do(tmp_path: Path, unreadable: int) -> None:
    """ "two: two/empty.json: empty file" stopped the whole folder and named no way on."""
    from windowkeeper.testing.conversation_files import write_sample

    write_sample(tmp_path, "openai-list")
    for i in range(unreadable):
        (tmp_path / f"empty{i}.json").write_text("")
    result = runner.invoke(app, ["inspect", str(tmp_path)])
    assert result.exit_code == 2
    first = result.stderr.splitlines()[0]
    assert "empty0.json" in first and "move it out" in first, first
