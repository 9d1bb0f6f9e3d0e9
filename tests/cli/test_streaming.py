"""`inspect` reads a long message list slice by slice: the same report as reading it whole, problems and turn
order included across slice boundaries, and memory that grows with the file's text, not its messages."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from windowkeeper.cli.inspect_cmd import PROVIDERS, conversation_report, inspect_reports
from windowkeeper.io import read_conversation, read_text
from windowkeeper.io import stream as stream_module
from windowkeeper.io.stream import open_stream
from windowkeeper.llm.formats import to_anthropic, to_openai_chat, to_responses_input
from windowkeeper.prompt import assemble
from windowkeeper.testing.conversation_files import write_sample
from windowkeeper.testing.sessiongen import generate_session

MESSAGES = generate_session(40, seed=5).messages


def _shapes() -> dict[str, tuple[str, str]]:
    chat = to_openai_chat(MESSAGES)
    _system, anthropic = to_anthropic([m for m in MESSAGES if m.role != "system"])
    _instructions, responses = to_responses_input(MESSAGES)
    return {
        "openai.json": ("openai", json.dumps(chat, indent=1)),
        "openai.jsonl": ("openai", "\n".join(json.dumps(m) for m in chat) + "\n"),
        "anthropic.json": ("anthropic", json.dumps(anthropic)),
        "responses.json": ("responses", json.dumps(responses)),
    }


@pytest.fixture(autouse=True)
def small_slices(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stream_module, "SLICE", 4)


def _streamed(path: Path, fmt: str = "auto") -> dict[str, Any]:
    stream = open_stream(read_text(path), fmt)
    assert stream is not None, "this shape is read slice by slice"
    return inspect_reports(str(path), fmt=fmt, index=None, reserve=100, provider="all", max_bytes=1 << 30, timeout=5)[0]


@pytest.mark.parametrize("name", sorted(_shapes()))
def test_a_streamed_report_equals_the_whole_one(tmp_path: Path, name: str) -> None:
    fmt, text = _shapes()[name]
    path = tmp_path / name
    path.write_text(text)
    conversation = read_conversation(path)
    whole = conversation_report(conversation, reserve=100, providers=PROVIDERS)
    assert _streamed(path) == whole
    # the tally counts what `assemble` counts: the request an Agent would send
    prompt = assemble(conversation.state(), tools=conversation.tools, reserve_tokens=100)
    assert whole["tokens"]["zones"] == prompt.zone_tokens and whole["tokens"]["input"] == prompt.input_tokens
    assert whole["format"] == fmt and whole["messages"] >= 60


def test_problems_and_turn_order_are_found_across_slices(tmp_path: Path) -> None:
    call = {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    rows: list[dict[str, Any]] = []
    for turn in range(6):
        rows.append({"role": "user", "content": f"question {turn}"})
        rows.append({"role": "assistant", "content": None, "tool_calls": [call]})  # the same id every turn
        rows.append({"role": "tool", "tool_call_id": "call_1", "content": "ok"})
        rows.append({"role": "assistant", "content": "answer"})
    rows.insert(9, {"role": "tool", "tool_call_id": "call_zz", "content": "orphan"})
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(rows))
    whole = conversation_report(read_conversation(path), reserve=100, providers=PROVIDERS)
    streamed = _streamed(path)
    assert streamed["problems"] == whole["problems"]
    codes = {p["code"] for p in streamed["problems"]["anthropic"]}
    assert {"duplicate_tool_call_id", "orphan_tool_result"} <= codes
    assert [p["index"] for p in streamed["problems"]["openai"] if p["code"] == "orphan_tool_result"] == [9]

    turns = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}] * 5
    turns.insert(7, {"role": "user", "content": "again"})
    path = tmp_path / "anthropic.json"
    path.write_text(json.dumps(turns))
    streamed = _streamed(path, "anthropic")
    assert [(p["index"], p["code"]) for p in streamed["problems"]["anthropic"]] == [(7, "consecutive_same_role")]
    whole = conversation_report(read_conversation(path, fmt="anthropic"), reserve=100, providers=PROVIDERS)
    assert streamed["problems"] == whole["problems"]


def test_shapes_read_whole_are_not_streamed(tmp_path: Path) -> None:
    cases = (
        "openai-request",
        "tau-bench",
        "claude-code",
        "codex",
        "windowkeeper",
        "jsonl-conversations",
        "gemini",
    )
    for case in cases:
        path, _ = write_sample(tmp_path, case)
        assert open_stream(read_text(path), "auto") is None, case


_CHILD = """
import json, resource, sys
from windowkeeper.cli.inspect_cmd import inspect_reports
path, n = sys.argv[1], int(sys.argv[2])
with open(path, "w") as f:
    for i in range(n):
        role = "user" if i % 2 == 0 else "assistant"
        f.write(json.dumps({"role": role, "content": f"message {i} of the run"}) + "\\n")
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
report = inspect_reports(path, fmt="auto", index=None, reserve=0, provider="auto", max_bytes=1 << 31, timeout=5)
assert report[0]["messages"] == n
print(json.dumps({"before": before, "after": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
"""


@pytest.mark.slow
def test_memory_grows_with_the_text_not_the_messages(tmp_path: Path) -> None:
    """Four times the messages: peak memory grows by a small multiple of the added text (a message held as an
    object costs ~40x its JSON, so a reader that kept them all would grow ~40x)."""
    peaks = {}
    sizes = {}
    for n in (50_000, 200_000):
        path = tmp_path / f"{n}.jsonl"
        done = subprocess.run(
            [sys.executable, "-c", _CHILD, str(path), str(n)], capture_output=True, text=True, timeout=600, check=True
        )
        peaks[n] = json.loads(done.stdout)["after"] * 1024  # ru_maxrss is in KiB on Linux
        sizes[n] = path.stat().st_size
    grown = peaks[200_000] - peaks[50_000]
    assert grown < 6 * (sizes[200_000] - sizes[50_000]), (peaks, sizes)
    assert resource.RUSAGE_SELF is not None
