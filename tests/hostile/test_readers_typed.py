"""Issue 12, item 10: readers raise only `FormatError`; a failing summarizer never cuts turns silently.

Before the fix 268 of 19,000 mutated provider payloads leaked `ValidationError`, `RecursionError`, `TypeError`,
`AttributeError` or `UnicodeEncodeError` out of the ``from_*`` readers, and the budget manager dropped turns with
no trace when its summarizer failed although docs/index.md promises a marked cut.
"""

from __future__ import annotations

from typing import Any

import pytest

from windowkeeper import Message
from windowkeeper.context._compaction import unsummarized_marker
from windowkeeper.context.budget import TokenBudgetContextManager
from windowkeeper.errors import FormatError
from windowkeeper.llm import formats
from windowkeeper.state import AgentState
from windowkeeper.units import validate


def _deep(depth: int) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = {"a": [value]}
    return value


def _cycle() -> list[Any]:
    loop: list[Any] = ["x"]
    loop.append(loop)
    return loop


BAD_PAYLOADS: list[tuple[str, Any]] = [
    # each of these escaped as a non-FormatError before the reader boundary
    ("openai_chat", [{"role": "user", "content": [{"type": "text", "text": {}}]}]),
    ("openai_chat", [{"role": "user", "content": "hi", "name": b"\xff"}]),
    (
        "openai_chat",
        [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "[" * 5000}}],
            }
        ],
    ),
    ("openai_chat", [{"role": "user", "content": _cycle()}]),
    ("openai_chat", [{"role": "user", "content": [{"type": "text", "text": "deep", "extra": _deep(300)}]}]),
    ("responses", [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": {}}]}]),
    ("anthropic", [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c", "content": object()}]}]),
    (
        "anthropic",
        [{"role": "assistant", "content": [{"type": "tool_use", "id": "c", "name": "f", "input": _cycle()}]}],
    ),
    ("gemini", [{"role": "model", "parts": [{"functionCall": {"name": "f", "args": b"\x00"}}]}]),
    ("langchain", [{"role": "user", "content": "a plain dict, not a LangChain message"}]),
]


def _read(fmt: str, payload: Any) -> list[Message]:
    if fmt == "openai_chat":
        return formats.from_openai_chat(payload)
    if fmt == "responses":
        return formats.from_responses_input(payload)
    if fmt == "anthropic":
        return formats.from_anthropic(None, payload)
    if fmt == "gemini":
        return formats.from_gemini(None, payload)
    return formats.from_langchain(payload)


@pytest.mark.parametrize(("fmt", "payload"), BAD_PAYLOADS, ids=[f"{f}-{i}" for i, (f, _) in enumerate(BAD_PAYLOADS)])
def test_a_mutated_payload_is_a_format_error(fmt: str, payload: Any) -> None:
    try:
        messages = _read(fmt, payload)
    except FormatError as exc:
        assert str(exc)  # names what was read and why
    else:  # a reader may also accept it, if what it returns is a real, storable conversation
        for message in messages:
            assert message.fingerprint() and message.model_dump_json()


def test_a_lone_surrogate_in_a_payload_is_read_not_refused() -> None:
    messages = formats.from_openai_chat([{"role": "user", "content": "half \ud83d emoji"}])
    assert messages[0].text() == "half \ufffd emoji"
    again = formats.from_openai_chat([{"role": "user", "content": "half \ud83d emoji"}])
    assert again[0].message_id == messages[0].message_id  # ids still derived deterministically


def test_a_failing_summarizer_makes_a_marked_cut_not_a_silent_one() -> None:
    def broken(messages: list[Message]) -> str:
        raise RuntimeError("summarizer is down")

    chat: list[Message] = []
    for i in range(30):
        chat.append(Message.text_message(f"question {i} " + "words " * 40, message_id=f"u{i}"))
        chat.append(Message.text_message(f"answer {i} " + "more " * 40, role="assistant", message_id=f"a{i}"))
    manager = TokenBudgetContextManager(max_tokens=2_000, reserve_tokens=0, summarizer=broken)
    state = manager.trim_context(AgentState(context=chat))
    dropped = len(chat) - len(state.context)
    assert dropped > 0
    assert state.context_summary == unsummarized_marker(dropped)
    assert validate(state.context, "anthropic") == []
    assert manager.last_metrics is not None and manager.last_metrics.tokens_after <= manager.budget
