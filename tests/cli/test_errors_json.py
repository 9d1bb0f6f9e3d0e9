"""Every documented error case, as a script sees it: the exit code, and under ``--json`` exactly one JSON document
on stdout naming the command, with ``ok`` false and the error; parser errors included."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from windowkeeper.cli import app as app_module
from windowkeeper.cli.app import app
from windowkeeper.testing.conversation_files import write_sample

runner = CliRunner()


def _error_doc(args: list[str], command: str, *needles: str) -> dict[str, Any]:
    result = runner.invoke(app, [*args, "--json"])
    assert result.exit_code == 2, (result.stdout, result.stderr)
    doc = json.loads(result.stdout)  # exactly one document: json.loads refuses trailing text
    assert doc["schema"] == f"windowkeeper.{command}" and doc["version"] == 1 and doc["ok"] is False
    assert isinstance(doc["error"], str) and doc["problems"]
    for needle in needles:
        assert needle in doc["error"] or any(needle in p for p in doc["problems"]), doc
    assert result.stderr.startswith("error: "), result.stderr
    return doc


@pytest.fixture
def chat(tmp_path: Path) -> Path:
    path, _ = write_sample(tmp_path, "openai-request")
    return path


@pytest.mark.parametrize(
    ("args", "command", "needle"),
    [
        (["compact", "x.json", "--budget", "10"], "compact", "10 is out of range"),
        (["compact", "x.json", "--strategy", "foo"], "compact", "'foo'"),
        (["inspect", "x.json", "--json", "true"], "inspect", "takes no value"),
        (["inspect", "x.json", "--format", "yaml"], "inspect", "'yaml'"),
        (["inspect", "x.json", "--provider", "cohere"], "inspect", "'cohere'"),
        (["inspect", "x.json", "--reserve", "-5"], "inspect", "-5 is out of range"),
        (["inspect", "x.json", "--timeout", "0"], "inspect", "out of range"),
        (["inspect", "x.json", "--bogus"], "inspect", "No such option: --bogus"),
        (["inspect"], "inspect", "Missing argument"),
        (["compact", "x.json", "--out-format", "xml"], "compact", "'xml'"),
        (["compact", "x.json", "--cut", "half"], "compact", "'half'"),
        (["simulate", "x.json", "--limit", "-1"], "simulate", "-1 is out of range"),
        (["demo", "--steps", "5"], "demo", "5 is out of range"),
        (["demo", "--budget", "abc"], "demo", "'abc'"),
        (["frobnicate"], "cli", "No such command"),
    ],
)
def test_parser_errors_honour_json(args: list[str], command: str, needle: str) -> None:
    _error_doc(args, command, needle)


def test_parser_errors_without_json_are_one_line_on_stderr() -> None:
    result = runner.invoke(app, ["compact", "x.json", "--budget", "10"])
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.splitlines() == [
        "error: Invalid value for '--budget': 10 is out of range; use a value >= 500 (see windowkeeper compact -h)"
    ]


def _write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


@pytest.mark.parametrize(
    ("name", "data", "needle"),
    [
        ("empty.json", b"", "empty file"),
        ("binary.json", b"\x00\x01\x02", "binary data"),
        ("latin1.json", '[{"role": "user", "content": "caf\u00e9"}]'.encode("latin-1"), "not UTF-8"),
        ("utf16.json", '[{"role": "user"}]'.encode("utf-16"), "not UTF-8"),
        ("deep.json", b"[" * 200 + b"]" * 200, "nested deeper than 100"),
        ("nan.json", b'[{"role": "user", "content": NaN}]', "NaN"),
        ("number.json", b"42", "a number"),
        ("odd.json", b'{"id": "x", "choices": []}', "OpenAI Chat completion"),
        ("bad_calls.json", b'[{"role": "user", "content": "a"}, {"role": "assistant", "tool_calls": 5}]', "tool_calls"),
        (
            "events.jsonl",
            b'{"type": "event_msg", "payload": {"type": "x"}}\n{"type": "event_msg", "payload": {}}\n',
            "without conversation events",
        ),
    ],
)
def test_input_errors_honour_json(tmp_path: Path, name: str, data: bytes, needle: str) -> None:
    path = _write(tmp_path, name, data)
    _error_doc(["inspect", str(path)], "inspect", needle)
    _error_doc(["compact", str(path), "-o", str(tmp_path / "out.json")], "compact", needle)
    assert not (tmp_path / "out.json").exists()


def test_several_problems_are_each_listed_once(tmp_path: Path) -> None:
    rows = [{"role": "user", "content": "a"}, {"role": "assistant", "tool_calls": 5}, {"content": "c"}]
    path = _write(tmp_path, "bad.json", json.dumps(rows).encode())
    doc = _error_doc(["inspect", str(path)], "inspect")
    assert [p.split(":")[0] for p in doc["problems"]] == ["message 1", "message 2"]
    assert "tool_calls" not in doc["error"] and doc["error"].endswith("2 problems")
    result = runner.invoke(app, ["inspect", str(path)])
    lines = result.stderr.splitlines()
    assert len(lines) == 3 and sum("tool_calls" in line for line in lines) == 1


def test_file_and_output_errors_honour_json(tmp_path: Path, chat: Path) -> None:
    _error_doc(["inspect", str(tmp_path / "missing.json")], "inspect", "no such file")
    _error_doc(["compact", str(tmp_path), "-o", str(tmp_path / "o.json")], "compact", "is a directory")
    _error_doc(["inspect", str(chat), "--max-bytes", "10"], "inspect", "larger than 10 bytes", "--max-bytes")
    _error_doc(["compact", str(chat), "-o", str(chat)], "compact", "is the input file")
    existing = _write(tmp_path, "exists.json", b"{}")
    _error_doc(["compact", str(chat), "-o", str(existing)], "compact", "already exists", "--force")
    _error_doc(["compact", str(chat), "-o", "-"], "compact", "both write to stdout")
    _error_doc(
        ["compact", str(chat), "--out-format", "claude-code", "-o", str(tmp_path / "o.jsonl")],
        "compact",
        "the input is openai",
    )
    _error_doc(["compact", str(chat), "--index", "3", "-o", str(tmp_path / "o.json")], "compact", "out of range")
    tau, _ = write_sample(tmp_path, "tau-bench")
    _error_doc(["compact", str(tau), "-o", str(tmp_path / "o.json")], "compact", "choose one with --index")
    _error_doc(["inspect", str(tau), "--index", "9"], "inspect", "--index 9 is out of range")
    _error_doc(["simulate", str(chat), "--chart", str(tmp_path / "c.txt")], "simulate", "ending in .png")
    _error_doc(["demo", "--chart", "-"], "demo", "a chart is a PNG file")
    _error_doc(
        ["inspect", str(_write(tmp_path, "empty-dir-file.txt", b"x").parent / "nothing")], "inspect", "no such file"
    )


def test_a_named_pipe_without_a_writer_times_out(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    started = time.monotonic()
    _error_doc(["inspect", str(fifo), "--timeout", "0.5"], "inspect", "nothing to read after 0.5 s", "--timeout")
    assert time.monotonic() - started < 30


def test_a_named_pipe_with_a_writer_is_read(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    writer = subprocess.Popen(
        [sys.executable, "-c", f'open({str(fifo)!r}, \'w\').write(\'[{{"role": "user", "content": "hi"}}]\')']
    )
    try:
        result = runner.invoke(app, ["inspect", str(fifo), "--json", "--timeout", "20"])
    finally:
        writer.wait(timeout=30)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["totals"]["messages"] == 1


def test_sockets_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.sock"
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(path))
        _error_doc(["inspect", str(path)], "inspect", "is a socket")
    finally:
        server.close()


def test_demo_without_matplotlib_prints_the_table_and_says_how_to_get_the_chart(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(app_module, "_has_plot", lambda: False)
    result = runner.invoke(app, ["demo", "--steps", "20", "--budget", "3000"])
    assert result.exit_code == 0, result.output
    assert "TokenBudgetContextManager" in result.stdout
    assert 'pip install "windowkeeper[plot]"' in result.stderr
    as_json = runner.invoke(app, ["demo", "--steps", "20", "--budget", "3000", "--json"])
    assert as_json.exit_code == 0 and json.loads(as_json.stdout)["chart"] is None
    _error_doc(["demo", "--steps", "20", "--chart", str(tmp_path / "c.png")], "demo", "windowkeeper[plot]")


def test_demo_writes_its_chart_to_a_temporary_file_and_says_where(tmp_path: Path) -> None:
    result = runner.invoke(app, ["demo", "--steps", "20", "--budget", "3000", "--json"])
    assert result.exit_code == 0, result.output
    chart = Path(json.loads(result.stdout)["chart"])
    try:
        assert chart.parent == Path(tempfile.gettempdir()) and chart.suffix == ".png"
        assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f"chart written to {chart}" in result.stderr.replace("\n", "")
    finally:
        chart.unlink(missing_ok=True)
    assert not list(Path.cwd().glob("windowkeeper-demo*.png"))


@pytest.mark.parametrize("command", ["inspect", "compact", "demo", "simulate"])
def test_help_has_an_example_and_the_json_fields_and_no_flag_placeholders(command: str) -> None:
    result = runner.invoke(app, [command, "-h"])
    assert result.exit_code == 0
    text = result.stdout
    assert "Example:" in text and f"windowkeeper {command} " in text.split("Example:")[1]
    assert f'"schema": "windowkeeper.{command}"' in text and "docs/cli.md" not in text
    flags = [line.split()[0] for line in text.splitlines() if line.strip().startswith(("--json", "--force"))]
    assert "--json" in flags and "<bool>" not in text and "BOOLEAN" not in text
    json_line = next(line for line in text.splitlines() if line.strip().startswith("--json"))
    assert json_line.split()[1][0].isupper()  # the help text follows the flag directly, no value placeholder


def test_bare_command_shows_the_help_not_an_error() -> None:
    result = runner.invoke(app, [])
    assert result.exit_code == 2
    assert result.stdout.startswith("Usage: windowkeeper") and "error:" not in result.stdout + result.stderr
