"""What a new user met trying every command on real files and odd ones: each case was wrong once."""

from __future__ import annotations

import json
import os
import re
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
    """A file detection reads wrongly says "--format picks another"; simulate accepts --format like inspect."""
    path, _ = write_sample(tmp_path, "openai-request")
    result = runner.invoke(app, ["simulate", str(path), "--format", "openai", "--no-chart", "--json"])
    assert result.exit_code in (0, 1), result.output
    assert json.loads(result.stdout)["trajectories"] == 1
    wrong = runner.invoke(app, ["simulate", str(path), "--format", "gemini", "--no-chart"])
    assert wrong.exit_code == 2 and "Traceback" not in wrong.stderr, wrong.output


def _chat_with_named_tool_results() -> list[dict[str, object]]:
    """A tau-bench-like turn: its tool messages carry the tool's ``name``, which OpenAI Chat accepts beside
    ``tool_call_id`` and which our message model has no field for."""
    call = {"id": "call_1", "type": "function", "function": {"name": "get_user", "arguments": '{"id": "u1"}'}}
    return [
        {"role": "system", "content": "You are an airline agent."},
        {"role": "user", "content": "Look me up, please: u1."},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "name": "get_user", "content": '{"name": "Sofia"}'},
        {"role": "assistant", "content": "Hello Sofia, how can I help?"},
        {"role": "user", "content": "Thanks!"},
    ]


def _compact(tmp_path: Path, name: str, data: object, *args: str) -> object:
    path = tmp_path / name
    path.write_text(json.dumps(data))
    out = tmp_path / f"out-{name}"
    result = runner.invoke(app, ["compact", str(path), "-o", str(out), *args])
    assert result.exit_code == 0, result.output
    return json.loads(out.read_text())


def test_compact_under_budget_writes_every_chat_message_back_as_it_was(tmp_path: Path) -> None:
    """Nothing to cut, nothing changed: each item comes back equal to the file's (the tool message's name was
    dropped: 1 of 6 messages rewritten)."""
    chat = _chat_with_named_tool_results()
    assert _compact(tmp_path, "chat.json", chat) == chat
    body = {"model": "gpt-4o", "messages": chat, "temperature": 0}
    assert _compact(tmp_path, "body.json", body) == body


def test_compact_keeps_the_item_ids_of_unchanged_responses_items(tmp_path: Path) -> None:
    """A Responses item's own ``id`` was replaced by one derived from its content."""
    items = [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "What is 2 + 2?"}]},
        {
            "type": "message",
            "role": "assistant",
            "id": "msg_from_the_api_0001",
            "status": "completed",
            "content": [{"type": "output_text", "text": "4.", "annotations": []}],
        },
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Thanks."}]},
    ]
    body = {"model": "gpt-4o", "input": items}
    assert _compact(tmp_path, "responses.json", body) == body


def test_compact_keeps_the_fields_of_unchanged_anthropic_blocks(tmp_path: Path) -> None:
    """An Anthropic block's ``cache_control`` was dropped and a string content became a list of blocks."""
    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 512,
        "system": "Be brief.",
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Hi", "cache_control": {"type": "ephemeral"}}]},
            {"role": "assistant", "content": "Hello."},
            {"role": "user", "content": "Bye."},
        ],
    }
    assert _compact(tmp_path, "anthropic.json", body) == body


def test_compact_in_another_format_and_as_state_carries_no_source_items(tmp_path: Path) -> None:
    """Converted, a message is written in the target's shape; a state file does not repeat every input item."""
    chat = _chat_with_named_tool_results()
    converted = _compact(tmp_path, "chat.json", chat, "--out-format", "anthropic")
    assert isinstance(converted, dict) and converted["system"] == "You are an airline agent."
    state = _compact(tmp_path, "chat2.json", chat, "--out-format", "windowkeeper")
    assert isinstance(state, dict) and all(m["raw"] is None for m in state["context"])


def test_compact_keeps_a_responses_request_s_instructions_where_they_were(tmp_path: Path) -> None:
    """The system prompt of a body with ``instructions`` was moved into ``input`` as a system item and the key
    dropped; it stays in ``instructions`` (with the summary, when there is one)."""
    items = [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "What is 2 + 2?"}]},
        {"type": "message", "role": "assistant", "id": "msg_1", "content": [{"type": "output_text", "text": "4."}]},
    ]
    body = {"model": "gpt-4o", "instructions": "Be brief.", "input": items, "store": False}
    assert _compact(tmp_path, "responses.json", body) == body


def test_compact_dates_no_message_a_file_did_not_date(tmp_path: Path) -> None:
    """An OpenAI Chat file has no times; each message was stamped with the moment it was read, so a recall note
    quoted it as said then ("message #7, turn 3, user, 2026-12-07 15:52 UTC") and two runs a minute apart wrote
    different files. Now a message is dated only by what the file says."""
    chat: list[dict[str, object]] = [{"role": "system", "content": "You are a travel agent."}]
    for turn in range(40):
        chat.append({"role": "user", "content": f"Turn {turn}: my booking code is ZX{turn:04d}. " + "Details. " * 60})
        chat.append({"role": "assistant", "content": f"Noted booking ZX{turn:04d}. " + "Sure. " * 60})
    chat.append({"role": "user", "content": "What was my booking code ZX0003 about?"})
    written = json.dumps(_compact(tmp_path, "chat.json", chat, "--budget", "2000"))
    assert "Recalled context" in written and "ZX0003" in written
    assert not re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC", written), written


def test_an_object_that_is_no_conversation_names_its_keys_once(tmp_path: Path) -> None:
    """The error listed the keys, then "; it looks like an object with keys ..." listed them again."""
    path = tmp_path / "wrong.json"
    path.write_text('{"question": "q", "answer": "a"}')
    result = runner.invoke(app, ["inspect", str(path)])
    assert result.exit_code == 2 and result.stderr.count("'question'") == 1, result.stderr
