"""Agent session logs and model_dump lists: read with every event accounted for, compacted back into their own
format, and that output accepted by `inspect` and by the provider SDK's request types."""

from __future__ import annotations

import itertools
import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from anthropic.types import MessageParam
from google.genai import types as genai_types
from openai.types.chat import ChatCompletionMessageParam
from openai.types.responses import ResponseInputItemParam
from pydantic import TypeAdapter
from typer.testing import CliRunner

from windowkeeper.cli.app import app
from windowkeeper.io import read_conversation
from windowkeeper.llm.formats import to_responses_input
from windowkeeper.testing.conversation_files import (
    SESSION_ID,
    claude_code_events,
    codex_rollout_events,
    session,
    write_sample,
)
from windowkeeper.testing.sessiongen import generate_session

runner = CliRunner()
LONG = generate_session(60, seed=2).messages


def _doc(stdout: str) -> dict[str, Any]:
    doc = json.loads(stdout)
    assert isinstance(doc, dict)
    return doc


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_claude_code_log_keeps_every_turn_and_counts_what_it_skips(tmp_path: Path) -> None:
    events = claude_code_events(session())
    path = tmp_path / "session.jsonl"
    path.write_text("\n".join(json.dumps(e) for e in events) + "\n")
    conversation = read_conversation(path)
    assert conversation.format == "claude-code"
    assistant_ids = {e["message"]["id"] for e in events if e["type"] == "assistant"}
    # one assistant turn per API message, however many lines (one content block each) it was written on
    assert [m.message_id for m in conversation.messages if m.role == "assistant"] == sorted(
        assistant_ids, key=[e["message"].get("id") for e in events if e["type"] == "assistant"].index
    )
    assert sum(e["type"] == "assistant" for e in events) > len(assistant_ids)
    blocks = [b.type for m in conversation.messages for b in m.content]
    assert {"reasoning", "tool_call", "tool_result", "text", "image"} <= set(blocks)
    results = sum(
        1
        for e in events
        if e["type"] == "user"
        for b in e["message"]["content"]
        if isinstance(b, dict) and b.get("type") == "tool_result"
    )
    assert sum(m.role == "tool" for m in conversation.messages) == results
    assert conversation.skipped == {"file-history-snapshot": 2, "summary": 1, "system": 1}
    first_user = next(e for e in events if e["type"] == "user")
    stamp = datetime.fromisoformat(first_user["timestamp"].replace("Z", "+00:00")).timestamp()
    assert conversation.messages[0].timestamp == pytest.approx(stamp)
    thinking = next(b for m in conversation.messages for b in m.content if b.type == "reasoning")
    assert thinking.signature is not None and thinking.signature.startswith("EqQB")


def test_codex_rollout_reads_every_item_type(tmp_path: Path) -> None:
    events = codex_rollout_events(session())
    path = tmp_path / "rollout-2025-09-01T10-00-00.jsonl"
    path.write_text("\n".join(json.dumps(e) for e in events) + "\n")
    conversation = read_conversation(path)
    assert conversation.format == "codex"
    kinds = [e["payload"]["type"] for e in events if e["type"] == "response_item"]
    assert {"custom_tool_call", "custom_tool_call_output", "local_shell_call", "reasoning"} <= set(kinds)
    calls = [b for m in conversation.messages for b in m.tool_call_blocks()]
    assert len(calls) == sum(k in ("function_call", "custom_tool_call", "local_shell_call") for k in kinds)
    assert "apply_patch" in {c.name for c in calls} and "local_shell" in {c.name for c in calls}
    outputs = sum(k.endswith("_output") for k in kinds)
    assert sum(m.role == "tool" for m in conversation.messages) == outputs
    assert any(b.type == "image" for m in conversation.messages for b in m.content)
    assert any(b.type == "reasoning" for m in conversation.messages for b in m.content)
    skipped = sum(e["type"] in ("event_msg", "turn_context") for e in events)
    assert sum(conversation.skipped.values()) == skipped + (0 if events[0]["payload"]["instructions"] else 1)


@pytest.mark.parametrize("case", ["claude-code", "codex", "langchain-model-dump"])
def test_inspect_counts_real_shapes(tmp_path: Path, case: str) -> None:
    path, fmt = write_sample(tmp_path, case)
    result = runner.invoke(app, ["inspect", str(path), "--json"])
    assert result.exit_code == 0, result.output
    report = _doc(result.stdout)["conversations"][0]
    expected = read_conversation(path)
    assert report["format"] == fmt
    assert report["messages"] == len(expected.messages)
    assert report["tool_calls"] == sum(len(m.tool_call_blocks()) for m in expected.messages)
    assert report["skipped_events"] == expected.skipped
    assert all(not found for found in report["problems"].values())
    if expected.skipped:
        human = runner.invoke(app, ["inspect", str(path)])
        assert f"Skipped {sum(expected.skipped.values())} events that are not conversation" in human.stdout


def _validate_claude_log(events: list[dict[str, Any]]) -> None:
    """Each API message of the log (its lines merged by message.id) is an Anthropic MessageParam, and the chain of
    parentUuid links is unbroken."""
    adapter = TypeAdapter(MessageParam)
    parent = None
    merged: dict[str, dict[str, Any]] = {}
    for event in events:
        assert event["type"] in ("user", "assistant")
        assert event["parentUuid"] == parent
        parent = event["uuid"]
        assert event["sessionId"] == SESSION_ID
        message = event["message"]
        key = message.get("id") or event["uuid"]
        content = message["content"]
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        merged.setdefault(key, {"role": message["role"], "content": []})["content"].extend(blocks)
    for message in merged.values():
        adapter.validate_python(message)


_OWN_ITEMS = {"function_call", "function_call_output", "custom_tool_call", "custom_tool_call_output"}


def _validate_rollout(path: Path, events: list[dict[str, Any]]) -> None:
    """The conversation of the written rollout, as it would be sent, is a list of Responses input items; so is
    every function and custom-tool item as written. (Codex stores reasoning and shell items without the ``id`` and
    images without the ``detail`` that the SDK's TypedDicts require; those lines are the input's, unchanged.)"""
    adapter = TypeAdapter(ResponseInputItemParam)
    assert events[0]["type"] == "session_meta" and events[1]["type"] == "compacted"
    assert events[1]["payload"]["message"].startswith("Summary of the earlier conversation")
    for event in events[2:]:
        assert event["type"] == "response_item"
        if event["payload"]["type"] in _OWN_ITEMS:
            adapter.validate_python(event["payload"])
    _instructions, items = to_responses_input(read_conversation(path).messages)
    _validate_items(items)


def _sdk_gap(item: dict[str, Any]) -> bool:
    """Items the SDK's TypedDicts reject only for a missing ``id`` (and ``status``): a reasoning item, or an
    assistant message with output_text parts, as Codex stores them and as ``to_responses_input`` writes a
    transcript's turns. The API takes them back with ``store=false``; the TypedDicts describe stored items."""
    if "id" in item:
        return False
    return item.get("type") == "reasoning" or (item.get("type") == "message" and item.get("role") == "assistant")


def _validate_items(items: list[Any]) -> None:
    """Responses input items against the SDK's TypedDicts, every item but those of `_sdk_gap`."""
    adapter = TypeAdapter(ResponseInputItemParam)
    checked = 0
    for item in items:
        if not _sdk_gap(item):
            adapter.validate_python(item)
            checked += 1
    assert checked >= len(items) // 2


@pytest.mark.parametrize("case", ["claude-code", "codex"])
def test_compact_writes_the_same_log_back(tmp_path: Path, case: str) -> None:
    path, fmt = write_sample(tmp_path, case, LONG)
    out = tmp_path / "out.jsonl"
    result = runner.invoke(app, ["compact", str(path), "--budget", "8000", "-o", str(out), "--json"])
    assert result.exit_code == 0, result.output
    summary = _doc(result.stdout)
    assert summary["out_format"] == fmt and summary["tokens_after"] <= 8000 and summary["summary"]
    events = _lines(out)
    original = _lines(path)
    # what the manager kept unchanged is written as it was read, byte for byte
    kept = [e for e in events if e in original]
    assert len(kept) >= len(events) // 2
    if case == "claude-code":
        by_uuid = {e["uuid"]: e for e in original if "uuid" in e}
        rewritten = [e for e in events if e["uuid"] in by_uuid and e["message"] != by_uuid[e["uuid"]]["message"]]
        assert rewritten and all("toolUseResult" not in e for e in rewritten)
        for event in rewritten:  # the envelope stays
            before = by_uuid[event["uuid"]]
            assert {k: before[k] for k in ("sessionId", "cwd", "timestamp", "type")} == {
                k: event[k] for k in ("sessionId", "cwd", "timestamp", "type")
            }
    inspected = runner.invoke(app, ["inspect", str(out), "--json"])
    assert inspected.exit_code == 0, inspected.output
    doc = _doc(inspected.stdout)
    assert doc["conversations"][0]["format"] == fmt and doc["totals"]["problems"] == 0
    # the summary travels as a user event of the log rather than in the system text: one message's framing more
    assert 0 <= doc["totals"]["input_tokens"] - summary["tokens_after"] <= 8
    if case == "claude-code":
        _validate_claude_log(events)
        assert events[0].get("isCompactSummary") is True
    else:
        _validate_rollout(out, events)


_SDK_TYPES: dict[str, Any] = {
    "openai-request": ("messages", TypeAdapter(list[ChatCompletionMessageParam])),
    "openai-list": (None, TypeAdapter(list[ChatCompletionMessageParam])),
    "tau-bench": (None, TypeAdapter(list[ChatCompletionMessageParam])),
    "responses": ("input", None),
    "anthropic-system": ("messages", TypeAdapter(list[MessageParam])),
    "anthropic-no-system": ("messages", TypeAdapter(list[MessageParam])),
    "gemini": ("contents", TypeAdapter(list[genai_types.Content])),
}


@pytest.mark.parametrize("case", sorted(_SDK_TYPES))
def test_compact_output_is_a_request_the_sdk_types_accept(tmp_path: Path, case: str) -> None:
    path, _fmt = write_sample(tmp_path, case, LONG)
    out = tmp_path / "out.json"
    args = ["compact", str(path), "--budget", "3000", "-o", str(out)]
    args += ["--index", "1"] if case == "tau-bench" else []
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    written = json.loads(out.read_text())
    original = json.loads(path.read_text())
    key, adapter = _SDK_TYPES[case]
    if key is None:
        assert isinstance(written, list)
        adapter.validate_python(written)
    else:
        # the same request body: every other key kept, in its order
        expected_keys = [k for k in original if k not in ("system", "instructions", "system_instruction")]
        assert [k for k in written if k not in ("system", "instructions", "system_instruction")] == expected_keys
        for k in expected_keys:
            if k != key:
                assert written[k] == original[k]
        if adapter is None:
            _validate_items(written[key])
        else:
            adapter.validate_python(written[key])
    inspected = runner.invoke(app, ["inspect", str(out), "--json", "--provider", "all"])
    assert inspected.exit_code == 0, inspected.output
    assert _doc(inspected.stdout)["totals"]["problems"] == 0


def test_anthropic_output_of_a_tau_conversation_alternates_turns(tmp_path: Path) -> None:
    path, _fmt = write_sample(tmp_path, "tau-bench", LONG)
    out = tmp_path / "out.json"
    result = runner.invoke(
        app, ["compact", str(path), "--index", "0", "--budget", "3000", "--out-format", "anthropic", "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    roles = [m["role"] for m in json.loads(out.read_text())["messages"]]
    assert all(a != b for a, b in itertools.pairwise(roles)) and roles[0] == "user"


def test_inspect_reports_consecutive_same_role_turns(tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    turns = [
        {"role": "user", "content": "hi"},
        {"role": "user", "content": "again"},
        {"role": "assistant", "content": "yes"},
    ]
    path.write_text(json.dumps({"model": "claude-sonnet-4-5", "max_tokens": 100, "messages": turns}))
    result = runner.invoke(app, ["inspect", str(path), "--json", "--format", "anthropic"])
    assert result.exit_code == 1
    problems = _doc(result.stdout)["conversations"][0]["problems"]["anthropic"]
    assert [(p["index"], p["code"]) for p in problems] == [(1, "consecutive_same_role")]


def test_langchain_model_dump_compacts_to_model_dump(tmp_path: Path) -> None:
    from langchain_core.messages import messages_from_dict

    path, _fmt = write_sample(tmp_path, "langchain-model-dump", LONG)
    out = tmp_path / "out.json"
    assert runner.invoke(app, ["compact", str(path), "--budget", "3000", "-o", str(out)]).exit_code == 0
    written = json.loads(out.read_text())
    assert all("additional_kwargs" in m and "data" not in m for m in written)
    objects = messages_from_dict([{"type": m["type"], "data": m} for m in written])
    assert len(objects) == len(written)


def test_cut_to_budget_keeps_more_than_the_watermark(tmp_path: Path) -> None:
    path, _fmt = write_sample(tmp_path, "openai-request", LONG)
    after = {}
    for cut in ("budget", "watermark"):
        out = tmp_path / f"{cut}.json"
        result = runner.invoke(app, ["compact", str(path), "--budget", "8000", "--cut", cut, "-o", str(out), "--json"])
        assert result.exit_code == 0, result.output
        after[cut] = _doc(result.stdout)["tokens_after"]
    assert after["watermark"] < after["budget"] <= 8000
    assert after["budget"] > 0.85 * 8000


def test_inspect_reads_a_folder_of_conversations(tmp_path: Path) -> None:
    for case in ("claude-code", "codex", "openai-request"):
        write_sample(tmp_path, case)
    (tmp_path / "notes.txt").write_text("not a conversation")
    result = runner.invoke(app, ["inspect", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    doc = _doc(result.stdout)
    assert sorted(c["format"] for c in doc["conversations"]) == ["claude-code", "codex", "openai"]
    assert sorted(c["name"] for c in doc["conversations"]) == sorted(
        ["request.json", "session.jsonl", "rollout-2025-09-01T10-00-00.jsonl"]
    )


def test_another_providers_body_is_not_reused(tmp_path: Path) -> None:
    path, _fmt = write_sample(tmp_path, "openai-request", LONG)
    out = tmp_path / "out.json"
    args = ["compact", str(path), "--budget", "3000", "--out-format", "anthropic", "-o", str(out)]
    assert runner.invoke(app, args).exit_code == 0
    written = json.loads(out.read_text())
    assert "model" not in written and set(written) == {"system", "tools", "messages"}
    TypeAdapter(list[MessageParam]).validate_python(written["messages"])


def test_a_log_under_another_name_is_read_with_format_and_named_without(tmp_path: Path) -> None:
    path, _fmt = write_sample(tmp_path, "claude-code")
    renamed = path.rename(tmp_path / "session.json")
    forced = runner.invoke(app, ["inspect", str(renamed), "--format", "claude-code", "--json"])
    assert forced.exit_code == 0, forced.output
    assert _doc(forced.stdout)["conversations"][0]["format"] == "claude-code"
    guessed = runner.invoke(app, ["inspect", str(renamed)])
    assert guessed.exit_code == 2 and "it looks like JSON Lines" in guessed.stderr
