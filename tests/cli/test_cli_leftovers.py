"""Leftovers of the command line: `compact` does not read back a file it wrote unchanged (the numbers are the
input's, and still a recount's), and a Gemini tool result without its call is a structural problem (exit 1) as in
the other formats, not an unreadable file (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from windowkeeper.cli import compact_cmd
from windowkeeper.cli.app import app
from windowkeeper.testing.conversation_files import BUILDERS, session, write_sample

runner = CliRunner()

ONE_CONVERSATION = [case for case in BUILDERS if case not in ("tau-bench", "jsonl-conversations")]


@pytest.fixture(scope="module")
def long_session() -> Any:
    return session(60, seed=1)


@pytest.fixture
def recounts(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the files `compact` read back to count."""
    calls: list[str] = []
    recount = compact_cmd._recount

    def spy(encoded: bytes, fmt: Any, provider: str, name: str) -> dict[str, Any]:
        calls.append(name)
        return recount(encoded, fmt, provider, name)

    monkeypatch.setattr(compact_cmd, "_recount", spy)
    return calls


def _inspect(path: Path) -> dict[str, Any]:
    result = runner.invoke(app, ["inspect", str(path), "--json"])
    assert result.exit_code in (0, 1), result.output
    conversation = json.loads(result.stdout)["conversations"][0]
    assert isinstance(conversation, dict)
    return conversation


def _compact(source: Path, out: Path, *args: str, code: int = 0) -> dict[str, Any]:
    result = runner.invoke(app, ["compact", str(source), "-o", str(out), "--json", "--force", *args])
    assert result.exit_code == code, result.output
    doc = json.loads(result.stdout)
    assert isinstance(doc, dict)
    return doc


def _agrees(doc: dict[str, Any], out: Path) -> None:
    recount = _inspect(out)
    assert (doc["messages_after"], doc["tokens_after"]) == (recount["messages"], recount["tokens"]["input"])
    written = [f"[{p['index']}] {p['code']}: {p['message']}" for found in recount["problems"].values() for p in found]
    assert doc["problems"] == written


@pytest.mark.parametrize("args", [("--budget", "10000000"), ("--strategy", "window", "--budget", "10000000")])
@pytest.mark.parametrize("case", ONE_CONVERSATION)
def test_a_conversation_written_unchanged_is_not_read_back_and_its_numbers_are_a_recount(
    tmp_path: Path, case: str, args: tuple[str, ...], recounts: list[str]
) -> None:
    """Reading the written file back to count it added 2.9 s to a 7.4 s run on 7.7k messages that cut nothing;
    the input's own report is that file's when nothing changed."""
    source, _fmt = write_sample(tmp_path, case, session(12, seed=1))
    out = tmp_path / f"out{''.join(source.suffixes)}"
    doc = _compact(source, out, *args)
    assert recounts == []
    assert (doc["messages_after"], doc["tokens_after"]) == (doc["messages_before"], doc["tokens_before"])
    _agrees(doc, out)


@pytest.mark.parametrize("case", ["openai-list", "gemini", "claude-code", "codex"])
def test_a_conversation_that_was_cut_is_still_read_back(
    tmp_path: Path, case: str, long_session: Any, recounts: list[str]
) -> None:
    source, _fmt = write_sample(tmp_path, case, long_session)
    out = tmp_path / f"out{''.join(source.suffixes)}"
    doc = _compact(source, out, "--budget", "8000")
    assert len(recounts) == 1
    assert doc["tokens_after"] < doc["tokens_before"]
    _agrees(doc, out)


def test_another_out_format_is_read_back_even_when_nothing_was_cut(tmp_path: Path, recounts: list[str]) -> None:
    """Another format writes other items (Anthropic merges turns): only a recount knows their numbers."""
    source, _fmt = write_sample(tmp_path, "openai-list", session(12, seed=1))
    out = tmp_path / "out.json"
    doc = _compact(source, out, "--budget", "10000000", "--out-format", "anthropic")
    assert len(recounts) == 1
    _agrees(doc, out)


GEMINI_ORPHAN = {
    "contents": [
        {"role": "user", "parts": [{"text": "read the readme"}]},
        {"role": "model", "parts": [{"text": "on it"}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "read_file", "response": {"result": "# readme"}}}]},
        {"role": "model", "parts": [{"text": "done"}]},
    ]
}
ANTHROPIC_ORPHAN = {
    "messages": [
        {"role": "user", "content": "read the readme"},
        {"role": "assistant", "content": "on it"},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "# readme"}]},
        {"role": "assistant", "content": "done"},
    ]
}


@pytest.mark.parametrize("document", [GEMINI_ORPHAN, ANTHROPIC_ORPHAN], ids=["gemini", "anthropic"])
def test_a_tool_result_without_its_call_is_a_problem_in_gemini_as_in_the_other_formats(
    tmp_path: Path, document: dict[str, Any]
) -> None:
    """A Gemini functionResponse answering no call made the file unreadable: exit 2 and an error telling the user
    to pick another --format, though the file was Gemini; the other formats report orphan_tool_result, exit 1."""
    source = tmp_path / "orphan.json"
    source.write_text(json.dumps(document))
    result = runner.invoke(app, ["inspect", str(source), "--json"])
    assert result.exit_code == 1, result.output
    assert "--format picks another" not in result.output
    (report,) = json.loads(result.stdout)["conversations"]
    codes = [(p["index"], p["code"]) for found in report["problems"].values() for p in found]
    assert codes == [(2, "orphan_tool_result")]
    out = tmp_path / "out.json"
    doc = _compact(source, out, code=1)
    assert any("orphan_tool_result" in p for p in doc["problems"])
    _agrees(doc, out)
    human = runner.invoke(app, ["compact", str(source), "-o", str(out), "--force"])
    assert human.exit_code == 1 and "orphan_tool_result" in human.stderr


ALL_CASES = list(BUILDERS)


@pytest.mark.parametrize("case", ALL_CASES)
def test_simulate_reads_every_input_kind_and_its_numbers_are_a_recount(tmp_path: Path, case: str) -> None:
    """`simulate`'s help named only tau-bench, SWE-agent and JSONL files; it replays every format `inspect` reads.
    Its numbers: a model call per assistant message after the first message, and with no management each sends
    every message before it and the file's tool definitions (as `inspect` counts them), as a request would."""
    from windowkeeper.io import read_collection
    from windowkeeper.prompt import assemble, tool_schema_tokens
    from windowkeeper.state import AgentState
    from windowkeeper.tokens import default_counter

    source, _fmt = write_sample(tmp_path, case, session(12, seed=1))
    result = runner.invoke(app, ["simulate", str(source), "--no-chart", "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    conversations = read_collection(str(source), fmt="auto", limit=None, max_bytes=1 << 30, timeout=10.0)
    counter = default_counter()
    prompts = [
        assemble(AgentState(context=c.messages[:i]), counter=counter).input_tokens
        + tool_schema_tokens(c.tools, counter)
        for c in conversations
        for i, m in enumerate(c.messages)
        if m.role == "assistant" and i > 0
    ]
    full = doc["strategies"][0]
    assert full["name"] == "no management"
    assert (doc["trajectories"], doc["calls"]) == (len(conversations), len(prompts))
    assert (full["tokens_sent"], full["max_call_tokens"]) == (sum(prompts), max(prompts))
    assert full["calls_over_budget"] == sum(p > doc["budget"] for p in prompts)


def test_simulate_help_says_what_it_reads() -> None:
    result = runner.invoke(app, ["simulate", "--help"])
    text = " ".join(result.stdout.split())
    assert "any format inspect reads" in text and "- for stdin" in text
    assert "tokens sent count both" in text


def test_nothing_to_simulate_says_what_a_model_call_is_and_what_to_pass(tmp_path: Path) -> None:
    source = tmp_path / "question.json"
    source.write_text(json.dumps([{"role": "user", "content": "hi"}]))
    result = runner.invoke(app, ["simulate", str(source), "--no-chart"])
    assert result.exit_code == 1
    assert f"nothing to simulate: {source} holds no trajectory with a model call" in result.stderr
    assert "an assistant message after the first message" in result.stderr and "with its replies" in result.stderr
