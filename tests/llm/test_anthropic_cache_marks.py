"""Prompt-cache markers that `Window(format="anthropic")` adds: within the four a request may carry (the caller's
own anywhere in it counted), never changing the caller's, never before a caller's longer-lived one, and on a
turn of SDK objects (the canonical tool loop appends ``response.content`` as it came)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from anthropic.types import MessageParam, TextBlock, ToolUseBlock
from pydantic import TypeAdapter

from windowkeeper import Window

CC = {"type": "ephemeral"}
LIMIT = 4


def markers(*parts: Any) -> list[dict[str, Any]]:
    """Every ``cache_control`` value in ``parts`` (as JSON), nested ones included."""
    found: list[dict[str, Any]] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            if isinstance(value.get("cache_control"), dict):
                found.append(value["cache_control"])
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(json.loads(json.dumps(parts, default=lambda o: o.model_dump(mode="json", exclude_none=True))))
    return found


def test_a_turn_of_sdk_objects_takes_a_marker_without_failing() -> None:
    window = Window(budget=100_000, format="anthropic")
    reply = [
        TextBlock(type="text", text="Reading the log.", citations=None),
        ToolUseBlock(type="tool_use", id="toolu_1", name="read_log", input={"n": 1}),
    ]
    messages: list[Any] = [{"role": "user", "content": "Read log 1."}, {"role": "assistant", "content": reply}]
    window.fit(messages, system="You read logs.")
    messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}]})
    fit = window.fit(messages, system="You read logs.")  # the previous call's last turn is marked now

    assistant = fit.messages[1]
    assert assistant["content"][0] is reply[0]  # what carries no marker is the caller's own object
    assert assistant["content"][1] == {**reply[1].model_dump(mode="json", exclude_none=True), "cache_control": CC}
    assert reply[1].model_dump().get("cache_control") is None  # the caller's object is not touched
    TypeAdapter(list[MessageParam]).validate_python(
        json.loads(json.dumps(fit.messages, default=lambda o: o.model_dump(mode="json", exclude_none=True)))
    )


@pytest.mark.parametrize("system_kind", ["string", "blocks"])
def test_the_callers_markers_anywhere_count_against_the_four(system_kind: str) -> None:
    tools = [{"name": "read", "description": "Read.", "input_schema": {"type": "object"}, "cache_control": CC}]
    system: Any = (
        "You are helpful." if system_kind == "string" else [{"type": "text", "text": "You help.", "cache_control": CC}]
    )
    nested = {"type": "tool_result", "tool_use_id": "toolu_0", "content": [{"type": "text", "text": "r", **{}}]}
    nested["content"][0]["cache_control"] = CC  # type: ignore[index]
    messages: list[Any] = [
        {"role": "user", "content": [{"type": "text", "text": "q1", "cache_control": CC}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_0", "name": "read", "input": {}}]},
        {"role": "user", "content": [nested]},
    ]
    window = Window(budget=100_000, format="anthropic")
    for turn in range(3):
        messages += [{"role": "assistant", "content": f"a{turn}"}, {"role": "user", "content": f"q{turn + 2}"}]
        fit = window.fit(messages, system=system, tools=tools)
        assert len(markers(tools, fit.system, fit.messages)) <= LIMIT


def test_a_callers_marker_keeps_its_ttl_and_none_of_ours_goes_before_a_longer_lived_one() -> None:
    long_lived = {"type": "ephemeral", "ttl": "1h"}
    document = {"type": "text", "text": "A long document.", "cache_control": long_lived}
    messages: list[Any] = [
        {"role": "user", "content": [document]},
        {"role": "assistant", "content": "Read it."},
        {"role": "user", "content": "What does it say?"},
    ]
    fit = Window(budget=100_000, format="anthropic").fit(messages, system="You are helpful.")

    assert fit.messages[0] is messages[0]  # the caller's turn, its marker and ttl as sent
    assert fit.system == "You are helpful."  # a 5-minute marker here would come before the 1-hour one
    sent = markers(fit.system, fit.messages)
    assert sent[0] == long_lived and all(mark == CC for mark in sent[1:])


def test_a_result_written_anew_answers_the_callers_tool_use_id_as_sent() -> None:
    """Some hosts accept ids Anthropic's own API would not (``functions.read_log:0``): the caller's turn keeps its
    id, so a pointer written for the result must carry the same one, or the pair breaks."""
    messages: list[Any] = [{"role": "user", "content": "Read the logs."}]
    for n in range(12):
        call_id = f"functions.read_log:{n}"
        messages += [
            {"role": "assistant", "content": [{"type": "tool_use", "id": call_id, "name": "read_log", "input": {}}]},
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": call_id, "content": f"log {n}: E{n}\n" * 60}],
            },
        ]
        if n % 4 == 3:
            messages += [{"role": "assistant", "content": f"Part {n} done."}, {"role": "user", "content": "Go on."}]
    fit = Window(budget=6_000, format="anthropic").fit(messages, system="You read logs.")

    calls = {
        b["id"] for m in fit.messages if isinstance(m["content"], list) for b in m["content"] if b["type"] == "tool_use"
    }
    results = [
        b["tool_use_id"]
        for m in fit.messages
        if isinstance(m["content"], list)
        for b in m["content"]
        if b["type"] == "tool_result"
    ]
    assert results and set(results) <= calls
    assert any("cleared" in json.dumps(m) for m in fit.messages)  # some were written anew as pointers
