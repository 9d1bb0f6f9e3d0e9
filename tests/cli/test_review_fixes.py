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


def _longmemeval(path: Path, sessions: int = 2) -> Path:
    """A LongMemEval question's shape: its chats under 'haystack_sessions', beside the question's fields."""
    chat = [{"role": "user", "content": "I moved to Lisbon."}, {"role": "assistant", "content": "Welcome!"}]
    path.write_text(
        json.dumps(
            {
                "question_id": path.stem,
                "question_type": "single-session-user",
                "question": "Where do I live?",
                "answer": "Lisbon",
                "question_date": "2023/05/28 (Sun) 19:47",
                "haystack_dates": ["2023/05/21 (Sun) 19:50"] * sessions,
                "haystack_session_ids": [f"s{i}" for i in range(sessions)],
                "haystack_sessions": [chat] * sessions,
                "answer_session_ids": ["s0"],
            }
        )
    )
    return path


def test_a_file_no_format_reads_is_not_told_to_pass_one(tmp_path: Path) -> None:
    """Every --format needs one of the keys detection looks for, so "(or pass --format)" sent the user through
    every format in turn; a LongMemEval question is named, with the way to read one of its chats."""
    question = _longmemeval(tmp_path / "q1.json")
    result = runner.invoke(app, ["inspect", str(question)])
    assert result.exit_code == 2
    assert "pass --format" not in result.stderr
    assert "LongMemEval" in result.stderr and "jq '.haystack_sessions[0]'" in result.stderr
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"foo": 1, "bar": [2]}))
    result = runner.invoke(app, ["inspect", str(other)])
    assert result.exit_code == 2
    assert "pass --format" not in result.stderr and "no --format reads" in result.stderr
    assert "'foo', 'bar'" in result.stderr


def test_a_folder_of_unreadable_files_ends_with_one_summary_line(tmp_path: Path) -> None:
    """A folder of 500 LongMemEval questions printed 501 lines, one error per file."""
    for i in range(40):
        _longmemeval(tmp_path / f"q{i:02d}.json")
    result = runner.invoke(app, ["inspect", str(tmp_path)])
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    line = lines[0]
    assert "40 of 40 files could not be read" in line
    assert "q00.json, q01.json, q02.json and 37 more" in line
    assert "LongMemEval" in line
    doc = _json(runner.invoke(app, ["inspect", str(tmp_path), "--json"]).stdout)
    assert doc["ok"] is False and len(doc["problems"]) == 1


def test_a_folder_with_a_few_unreadable_files_lists_each(tmp_path: Path) -> None:
    _longmemeval(tmp_path / "a.json")
    (tmp_path / "b.json").write_text(json.dumps({"foo": 1}))
    (tmp_path / "c.json").write_text(json.dumps([{"role": "user", "content": "hi"}]))
    result = runner.invoke(app, ["inspect", str(tmp_path)])
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert ": 2 problems; " in lines[0] and len(lines) == 3, result.stderr


def test_an_unknown_strategy_is_named_without_the_parsers_prefix(tmp_path: Path) -> None:
    path = tmp_path / "chat.json"
    path.write_text(json.dumps([{"role": "user", "content": "hi"}]))
    result = runner.invoke(app, ["compact", str(path), "--strategy", "foo", "-o", str(tmp_path / "out.json")])
    assert result.exit_code == 2
    assert "Value error" not in result.stderr
    assert "'foo' is not one of 'budget', 'summary', 'message', 'window'" in result.stderr


@pytest.mark.parametrize("command", ["inspect", "compact"])
def test_an_index_out_of_range_names_the_valid_range(tmp_path: Path, command: str) -> None:
    runs = [{"task_id": i, "trial": 0, "traj": [{"role": "user", "content": f"task {i}"}]} for i in range(3)]
    path = tmp_path / "runs.json"
    path.write_text(json.dumps(runs))
    extra = ["-o", str(tmp_path / "out.json")] if command == "compact" else []
    result = runner.invoke(app, [command, str(path), "--index", "7", *extra])
    assert result.exit_code == 2
    assert "--index 7 is out of range" in result.stderr and "use 0 to 2" in result.stderr, result.stderr


def test_piped_tables_keep_their_titles_on_one_line_without_trailing_spaces(tmp_path: Path) -> None:
    """Rich wrapped a title at its table's width and padded every line with spaces; piped output is read by
    scripts and diffed, so a title is a line of its own there."""
    path = tmp_path / "a-conversation-with-a-rather-long-name.json"
    path.write_text(json.dumps([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]))
    result = runner.invoke(app, ["inspect", str(path)])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert [line for line in lines if line != line.rstrip()] == []
    assert any(
        line.startswith("a-conversation-with-a-rather-long-name (openai): 2 messages, ")
        and line.endswith(" input tokens (o200k_base)")
        for line in lines
    ), result.stdout
    folder = runner.invoke(app, ["inspect", str(tmp_path)])
    assert folder.exit_code == 0, folder.output
    assert [line for line in folder.stdout.splitlines() if line != line.rstrip()] == []
