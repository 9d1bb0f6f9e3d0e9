"""`compact` as a user checks it: the numbers it prints are the ones a recount of the file it wrote gives, and a
message it did not change (the system prompt above all) leaves as the item it came as, with every key."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from windowkeeper.cli.app import app
from windowkeeper.testing.conversation_files import BUILDERS, session, write_sample

runner = CliRunner()

ONE_CONVERSATION = [case for case in BUILDERS if case not in ("tau-bench", "jsonl-conversations")]
"""Every sample case holding one conversation (the others need --index, which changes nothing here)."""


@pytest.fixture(scope="module")
def long_session() -> Any:
    """Long enough (about 44k tokens) that a budget of 8,000 summarizes it and recalls a passage."""
    return session(60, seed=1)


def _json(stdout: str) -> dict[str, Any]:
    doc = json.loads(stdout)
    assert isinstance(doc, dict)
    return doc


def _compact(source: Path, out: Path, *args: str) -> dict[str, Any]:
    result = runner.invoke(app, ["compact", str(source), "-o", str(out), "--json", *args])
    assert result.exit_code == 0, result.output
    return _json(result.stdout)


def _inspect(path: Path) -> dict[str, Any]:
    result = runner.invoke(app, ["inspect", str(path), "--json"])
    assert result.exit_code == 0, result.output
    conversation = _json(result.stdout)["conversations"][0]
    assert isinstance(conversation, dict)
    return conversation


@pytest.mark.parametrize("case", ONE_CONVERSATION)
def test_the_numbers_compact_reports_are_a_recount_of_the_file_it_wrote(
    tmp_path: Path, case: str, long_session: Any
) -> None:
    """An Anthropic or Gemini file merges a recall note into the user turn after it (their turns alternate), so
    it held one message and one message's overhead (4 tokens) fewer than the summary line said; a Codex or Claude
    Code log wrote the summary as an event the count did not include."""
    source, _fmt = write_sample(tmp_path, case, long_session)
    out = tmp_path / f"out{''.join(source.suffixes)}"
    doc = _compact(source, out, "--budget", "8000")
    recount = _inspect(out)
    assert (doc["messages_after"], doc["tokens_after"]) == (recount["messages"], recount["tokens"]["input"])
    before = _inspect(source)
    assert (doc["messages_before"], doc["tokens_before"]) == (before["messages"], before["tokens"]["input"])
    text = runner.invoke(app, ["compact", str(source), "-o", str(out), "--budget", "8000", "--force"])
    assert f"{doc['messages_before']} -> {recount['messages']} messages" in text.stderr
    assert f"-> {recount['tokens']['input']:,} tokens" in text.stderr


@pytest.mark.parametrize("strategy", ["window", "budget", "summary"])
@pytest.mark.parametrize("case", ["langchain", "langchain-model-dump"])
def test_a_langchain_system_message_keeps_its_id_and_keys(
    tmp_path: Path, case: str, strategy: str, long_session: Any
) -> None:
    """The system message went out as a new SystemMessage with windowkeeper's own id, whether or not anything
    was summarized; the summary is now a system message of its own after the caller's, which is unchanged."""
    source, _fmt = write_sample(tmp_path, case, long_session)
    items = json.loads(source.read_text())
    out = tmp_path / "out.json"
    doc = _compact(source, out, "--strategy", strategy, "--budget", "8000")
    written = json.loads(out.read_text())
    assert written[0] == items[0]
    if strategy == "window":  # drops messages and changes none: every item written is one of the file's
        assert all(item in items for item in written)
    if doc["summary"]:
        summary = written[1]
        data = summary.get("data", summary)
        assert data["type"] == "system" and "Summary of the earlier conversation" in data["content"]


def _system_of(case: str, data: Any) -> Any:
    if case == "openai-request":
        return next(m for m in data["messages"] if m["role"] == "system")
    if case == "anthropic-system":
        return data["system"]
    return data["system_instruction"]


def _decorate(case: str, data: Any) -> Any:
    """The system prompt with keys windowkeeper does not model: a Chat message's name and a vendor key,
    Anthropic text blocks with a cache marker, a Gemini content's role."""
    if case == "openai-request":
        data["messages"][0].update({"name": "ops", "x_vendor": {"tier": 2}})
    elif case == "anthropic-system":
        data["system"] = [{"type": "text", "text": data["system"], "cache_control": {"type": "ephemeral"}}]
    else:
        data["system_instruction"] = {"role": "system", **data["system_instruction"]}
    return data


@pytest.mark.parametrize("strategy", ["window", "budget"])
@pytest.mark.parametrize("case", ["openai-request", "anthropic-system", "gemini"])
def test_the_system_prompt_keeps_every_key_it_came_with(
    tmp_path: Path, case: str, strategy: str, long_session: Any
) -> None:
    """Each format's system prompt was written anew from its text: a Chat system message lost its 'name' and
    vendor keys, Anthropic system blocks became one string without their cache_control, and a Gemini
    system_instruction lost its keys. Unchanged, it goes out as it came; the summary follows it."""
    source, _fmt = write_sample(tmp_path, case, long_session)
    data = _decorate(case, json.loads(source.read_text()))
    source.write_text(json.dumps(data))
    out = tmp_path / "out.json"
    doc = _compact(source, out, "--strategy", strategy, "--budget", "8000")
    written = json.loads(out.read_text())
    before, after = _system_of(case, data), _system_of(case, written)
    if not doc["summary"]:
        assert after == before
    elif case == "openai-request":
        assert after == before
        assert [m["role"] for m in written["messages"][:2]] == ["system", "system"]
    elif case == "anthropic-system":
        assert after[:1] == before and "Summary of the earlier conversation" in after[1]["text"]
    else:
        assert {k: v for k, v in after.items() if k != "parts"} == {"role": "system"}
        assert after["parts"][:1] == before["parts"]
        assert "Summary of the earlier conversation" in after["parts"][1]["text"]


@pytest.mark.parametrize("place", ["systemInstruction", "config.system_instruction", "config.systemInstruction"])
def test_a_gemini_system_instruction_is_written_where_the_file_held_it(
    tmp_path: Path, place: str, long_session: Any
) -> None:
    """A system instruction read from ``systemInstruction`` or the SDK's ``config`` was written back as a second
    one under ``system_instruction``: a REST body with it twice, or SDK keyword arguments ``generate_content``
    does not take."""
    source, _fmt = write_sample(tmp_path, "gemini", long_session)
    data = json.loads(source.read_text())
    system = data.pop("system_instruction")
    if place.startswith("config."):
        data = {"model": "gemini-2.5-flash", **data, "config": {place.split(".")[1]: system, "temperature": 0.2}}
    else:
        data = {place: system, **data}
    source.write_text(json.dumps(data))
    out = tmp_path / "out.json"
    doc = _compact(source, out, "--budget", "8000")
    written = json.loads(out.read_text())
    assert list(written) == list(data)
    held = written["config"][place.split(".")[1]] if place.startswith("config.") else written[place]
    assert held["parts"][0] == system["parts"][0]
    assert doc["summary"] and "Summary of the earlier conversation" in held["parts"][-1]["text"]
    if place.startswith("config."):
        assert list(written["config"]) == list(data["config"])


@pytest.mark.parametrize("strategy", ["window", "budget"])
@pytest.mark.parametrize("place", ["system_instruction", "config.system_instruction"])
def test_a_gemini_system_instruction_given_as_text_stays_text(
    tmp_path: Path, place: str, strategy: str, long_session: Any
) -> None:
    """The SDK takes ``config.system_instruction`` as a plain string (its most common form): it came back as a
    ``{"parts": [...]}`` content even when nothing was summarized."""
    source, _fmt = write_sample(tmp_path, "gemini", long_session)
    data = json.loads(source.read_text())
    text = data.pop("system_instruction")["parts"][0]["text"]
    if place.startswith("config."):
        data = {**data, "config": {"system_instruction": text, "temperature": 0.2}}
    else:
        data = {"system_instruction": text, **data}
    source.write_text(json.dumps(data))
    out = tmp_path / "out.json"
    doc = _compact(source, out, "--strategy", strategy, "--budget", "8000")
    written = json.loads(out.read_text())
    held = (written["config"] if place.startswith("config.") else written)["system_instruction"]
    assert isinstance(held, str) and held.startswith(text)
    assert held == text if not doc["summary"] else "Summary of the earlier conversation" in held


def test_a_responses_input_given_as_text_stays_text(tmp_path: Path) -> None:
    """``"input": "..."`` (the Responses API's plain-text input) came back as a list holding one message item."""
    source = tmp_path / "request.json"
    body = {"model": "gpt-4o", "instructions": "Be brief.", "input": "Which file holds the parser?", "store": False}
    source.write_text(json.dumps(body))
    out = tmp_path / "out.json"
    _compact(source, out, "--strategy", "window")
    assert json.loads(out.read_text()) == body


LIST_KEYS = {"openai-list": None, "openai-request": "messages", "responses": "input", "jsonl-messages": "lines"}
LIST_KEYS |= {"anthropic-system": "messages", "gemini": "contents", "langchain": None}


def _items(path: Path, key: str | None) -> tuple[list[Any], dict[str, Any]]:
    """The message items of a file and the rest of its body."""
    if key == "lines":
        return [json.loads(line) for line in path.read_text().splitlines()], {}
    data = json.loads(path.read_text())
    if key is None:
        return data, {}
    return data[key], {k: v for k, v in data.items() if k != key}


@pytest.mark.parametrize("case", sorted(LIST_KEYS))
def test_a_strategy_that_changes_nothing_writes_only_the_files_own_items(
    tmp_path: Path, case: str, long_session: Any
) -> None:
    """--strategy window drops messages and changes none: every item written is one of the file's, byte for
    byte, and the body around them (model, tools, system, settings) is the file's."""
    source, _fmt = write_sample(tmp_path, case, long_session)
    out = tmp_path / f"out{source.suffix}"
    _compact(source, out, "--strategy", "window", "--budget", "8000")
    items, body = _items(source, LIST_KEYS[case])
    written, written_body = _items(out, LIST_KEYS[case])
    assert 0 < len(written) < len(items)
    assert all(item in items for item in written)
    assert written_body == body
