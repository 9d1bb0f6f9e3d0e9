"""Arbitrary JSON and mutated real payloads: the reader returns conversations or raises ConversationFileError,
never anything else (the CLI maps that error to one line and exit 2)."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from windowkeeper.io import ConversationFileError, parse_conversations, read_conversations
from windowkeeper.llm.formats import to_anthropic, to_gemini, to_openai_chat
from windowkeeper.testing.conversation_files import session

KEYS = st.sampled_from(
    [
        "role",
        "content",
        "type",
        "text",
        "tool_calls",
        "tool_call_id",
        "id",
        "function",
        "name",
        "arguments",
        "messages",
        "system",
        "contents",
        "parts",
        "input",
        "history",
        "traj",
        "context",
        "tools",
        "data",
        "lc",
        "kwargs",
        "functionCall",
        "args",
        "tool_use_id",
        "call_id",
        "output",
        "message_id",
        "source",
    ]
)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-5, 5)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from(
        [
            "user",
            "assistant",
            "system",
            "tool",
            "model",
            "function",
            "text",
            "tool_use",
            "tool_result",
            "message",
            "function_call",
            "function_call_output",
            "human",
            "ai",
            "",
            "c1",
            "\ud83d",
        ]
    )
)
JSON = st.recursive(
    SCALARS,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(KEYS, children, max_size=5),
    max_leaves=25,
)
BASE: list[Any] = []


def _bases() -> list[Any]:
    if not BASE:
        messages = session(6, seed=2)
        system, anthropic = to_anthropic(messages)
        gemini_system, contents = to_gemini(messages)
        BASE.extend(
            [
                to_openai_chat(messages),
                {"system": system, "messages": anthropic},
                {"system_instruction": gemini_system, "contents": contents},
            ]
        )
    return BASE


def _check(data: Any) -> None:
    try:
        conversations = parse_conversations(data)
    except ConversationFileError:
        return
    for conversation in conversations:
        assert isinstance(conversation.messages, list)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(JSON)
def test_arbitrary_json_is_read_or_rejected_with_a_typed_error(data: Any) -> None:
    _check(data)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2), st.data())
def test_mutated_payloads_are_read_or_rejected_with_a_typed_error(which: int, data: st.DataObject) -> None:
    payload = json.loads(json.dumps(_bases()[which]))
    items = payload if isinstance(payload, list) else payload.get("messages", payload.get("contents"))
    index = data.draw(st.integers(0, len(items) - 1))
    item = items[index]
    key = data.draw(st.sampled_from(sorted(item)) if item else st.just("role"))
    item[key] = data.draw(JSON)
    _check(payload)


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=200))
def test_arbitrary_bytes_are_read_or_rejected_with_a_typed_error(tmp_path_factory: Any, raw: bytes) -> None:
    path = Path(tmp_path_factory.mktemp("fuzz")) / "input.json"
    path.write_bytes(raw)
    with contextlib.suppress(ConversationFileError):
        read_conversations(path)
