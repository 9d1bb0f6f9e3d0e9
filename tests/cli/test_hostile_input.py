"""Hostile and careless input to the CLI: a one-line error and exit 2, never a traceback, a hang or lost data."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from windowkeeper.cli.app import app
from windowkeeper.llm.formats import to_openai_chat
from windowkeeper.testing.sessiongen import generate_session

runner = CliRunner()


def _assert_one_line_error(result: object, *needles: str) -> None:
    exit_code = getattr(result, "exit_code", getattr(result, "returncode", None))
    stderr = str(getattr(result, "stderr", ""))
    assert exit_code == 2, stderr
    assert "Traceback" not in stderr
    lines = stderr.strip().splitlines()
    # one error line; when a file has several problems each follows on its own indented line
    assert lines[0].startswith("error: ") and all(line.startswith("  ") for line in lines[1:]), stderr
    for needle in needles:
        assert needle in stderr, stderr
    # each problem once: several are counted on the error line and listed below it, never repeated there
    listed = [line.strip() for line in lines[1:]]
    assert len(set(listed)) == len(listed) and not any(problem in lines[0] for problem in listed), stderr


@pytest.fixture
def conversation(tmp_path: Path) -> Path:
    path = tmp_path / "session.json"
    path.write_text(json.dumps(to_openai_chat(generate_session(12, seed=5).messages)))
    return path


def _write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero")
def test_dev_zero_stops_at_once() -> None:
    started = time.monotonic()
    result = runner.invoke(app, ["inspect", "/dev/zero"])
    _assert_one_line_error(result, "/dev/zero", "binary")
    assert time.monotonic() - started < 5


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero")
def test_endless_text_stops_at_the_size_limit() -> None:
    # `yes` writes text forever; the size limit ends the read
    with subprocess.Popen(["yes", "[1, 2, 3]"], stdout=subprocess.PIPE) as proc:  # closes the pipe on exit
        try:
            assert proc.stdout is not None
            done = subprocess.run(
                [sys.executable, "-m", "windowkeeper.cli", "inspect", "-", "--max-bytes", "100000"],
                stdin=proc.stdout,
                capture_output=True,
                text=True,
                timeout=60,
            )
        finally:
            proc.kill()
    _assert_one_line_error(done, "larger than 100,000 bytes", "--max-bytes")


def test_size_limit_on_a_file(conversation: Path) -> None:
    result = runner.invoke(app, ["inspect", str(conversation), "--max-bytes", "100"])
    _assert_one_line_error(result, "larger than 100 bytes")


@pytest.mark.parametrize(
    ("name", "data", "needle"),
    [
        ("binary.json", bytes(range(256)) * 4, "binary"),
        ("png.json", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "binary"),
        ("latin1.json", '[{"role": "user", "content": "café crème"}]'.encode("latin-1"), "not UTF-8"),
        ("utf16.json", '[{"role": "user", "content": "hi"}]'.encode("utf-16"), "not UTF-8"),
        ("utf32.json", '[{"role": "user", "content": "hi"}]'.encode("utf-32"), "not UTF-8"),
        ("empty.json", b"", "empty file"),
        ("blank.json", b"  \n\t\n", "empty file"),
        ("truncated.json", b'[{"role": "user", "content": "hi"', "not valid JSON"),
        ("deep.json", b"[" * 100_000 + b"]" * 100_000, "nested deeper than"),
        ("deep_obj.json", b'{"a":' * 5000 + b"1" + b"}" * 5000, "nested deeper than"),
        ("nan.json", b'[{"role": "user", "content": "hi", "x": NaN}]', "NaN"),
        ("bigint.json", b'[{"role": "user", "content": "hi", "n": ' + b"9" * 5000 + b"}]", "4300 digits"),
        ("bigint.jsonl", b'{"role": "user", "content": "hi", "n": ' + b"9" * 5000 + b"}\n", "line 1"),
        ("number.json", b"42", "top level is a number"),
        ("string.json", b'"hello"', "top level is a string"),
        ("null.json", b"null", "top level is null"),
        ("bool.json", b"true", "top level is a boolean"),
        ("list_of_ints.json", b"[1, 2, 3]", "list of numbers"),
        ("list_of_lists.json", b"[[], []]", "list of lists"),
        ("empty_list.json", b"[]", "empty list"),
        ("empty_obj.json", b"{}", "not a conversation"),
        ("other_obj.json", b'{"foo": 1, "bar": [1]}', "'foo'"),
        ("not_messages.json", b'[{"x": 1}]', "not messages"),
        ("messages_string.json", b'{"messages": "hi"}', "'messages' is a string"),
        ("contents_number.json", b'{"contents": 3}', "'contents' is a number"),
        ("tools_bad.json", b'{"messages": [{"role": "user", "content": "hi"}], "tools": [1]}', "tools[0]"),
        ("jsonl_mixed.jsonl", b'{"role": "user", "content": "hi"}\n{"messages": []}\n', "mix messages"),
        ("jsonl_bad_line.jsonl", b'{"role": "user", "content": "hi"}\n{nope\n', "line 2"),
        ("swe_bad.traj", b'{"history": [1, 2]}', "history 0"),
        ("swe_none.traj", b'{"trajectory": 5, "info": {}}', "'trajectory' is a number"),
        ("tau_bad.json", b'[{"traj": 5}]', "trajectory 0"),
        ("content_obj.json", b'[{"role": "user", "content": {"nested": true}}]', "message 0"),
    ],
)
def test_unreadable_input_is_one_line_and_exit_2(tmp_path: Path, name: str, data: bytes, needle: str) -> None:
    path = _write(tmp_path, name, data)
    for command in (["inspect", str(path)], ["compact", str(path), "-o", str(tmp_path / "out.json")]):
        result = runner.invoke(app, command)
        _assert_one_line_error(result, str(path), needle)
    assert not (tmp_path / "out.json").exists()
    as_json = runner.invoke(app, ["inspect", str(path), "--json"])
    assert as_json.exit_code == 2 and json.loads(as_json.stdout)["ok"] is False


def test_directory_and_unreadable_file(tmp_path: Path) -> None:
    _assert_one_line_error(runner.invoke(app, ["inspect", str(tmp_path)]), "a folder with no conversation files")
    out = str(tmp_path / "out.json")
    _assert_one_line_error(runner.invoke(app, ["compact", str(tmp_path), "-o", out]), "is a directory")
    locked = _write(tmp_path, "locked.json", b"[]")
    locked.chmod(0)
    try:
        if os.access(locked, os.R_OK):
            pytest.skip("running as a user who can read any file")
        _assert_one_line_error(runner.invoke(app, ["inspect", str(locked)]), "cannot read")
    finally:
        locked.chmod(0o600)


def test_lone_surrogates_are_read_not_crashed_on(tmp_path: Path) -> None:
    path = _write(tmp_path, "surrogate.json", b'[{"role": "user", "content": "half an emoji \\ud83d here"}]')
    result = runner.invoke(app, ["inspect", str(path), "--json"])
    assert result.exit_code == 0, result.output
    out = tmp_path / "out.json"
    compacted = runner.invoke(app, ["compact", str(path), "-o", str(out)])
    assert compacted.exit_code == 0, compacted.output
    assert "\ufffd" in out.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "target",
    [
        "{tmp}",  # a directory
        "{tmp}/file.json/below.json",  # parent is a file
        "/proc/windowkeeper-test/out.json",  # cannot create
    ],
)
def test_bad_output_paths(conversation: Path, tmp_path: Path, target: str) -> None:
    (tmp_path / "file.json").write_text("x")
    result = runner.invoke(app, ["compact", str(conversation), "-o", target.format(tmp=tmp_path)])
    _assert_one_line_error(result, "-o ")


def test_bad_chart_paths(tmp_path: Path, conversation: Path) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("my notes")
    named_png = tmp_path / "notes.png"  # a file that is no chart, under a chart's name
    named_png.write_text("my notes")
    for args, needle in (
        (["--chart", str(text)], "PNG"),  # its name is refused before --force could matter
        (["--chart", str(named_png)], "already exists"),
        (["--chart", str(tmp_path / "chart.svg")], "PNG"),
        (["--chart", "-"], "--no-chart"),
        (["--chart", str(conversation)], "is the input file"),
    ):
        result = runner.invoke(app, ["simulate", str(conversation), "--limit", "1", *args])
        _assert_one_line_error(result, *([needle] if needle else []))
    assert text.read_text() == "my notes" and named_png.read_text() == "my notes"


def test_symlink_to_the_input_is_the_input(conversation: Path, tmp_path: Path) -> None:
    link = tmp_path / "link.json"
    link.symlink_to(conversation)
    original = conversation.read_bytes()
    result = runner.invoke(app, ["compact", str(conversation), "-o", str(link), "--force"])
    _assert_one_line_error(result, "is the input file")
    assert conversation.read_bytes() == original


def test_missing_extra_for_langchain_is_one_line(tmp_path: Path) -> None:
    path = _write(tmp_path, "lc.json", b'[{"type": "human", "data": {"content": "hi"}}]')
    code = (
        "import sys; sys.modules['langchain_core'] = None\n"
        "from windowkeeper.cli import main\n"
        f"main(['inspect', {str(path)!r}])\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    _assert_one_line_error(done, 'pip install "windowkeeper[langchain]"')


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full")
def test_devices_are_written_in_place_never_replaced(conversation: Path) -> None:
    before = os.stat("/dev/null")
    ok = runner.invoke(app, ["compact", str(conversation), "-o", "/dev/null"])
    assert ok.exit_code == 0, ok.output
    after = os.stat("/dev/null")
    assert (after.st_ino, after.st_rdev) == (before.st_ino, before.st_rdev)
    full = runner.invoke(app, ["compact", str(conversation), "-o", "/dev/full", "--force"])
    _assert_one_line_error(full, "/dev/full", "cannot write")
    assert Path("/dev/full").is_char_device()
