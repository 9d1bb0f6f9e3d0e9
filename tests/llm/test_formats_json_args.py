"""Tool-call arguments that arrive already decoded are read only when JSON can carry them, in every format that
takes them as an object: the message's fingerprint, the stores and the providers all write them as JSON."""

from __future__ import annotations

from typing import Any

import pytest

from windowkeeper.errors import FormatError
from windowkeeper.llm.formats import from_anthropic, from_gemini, from_openai_chat, from_responses_input

BAD: dict[str, Any] = {"rows": [1, {"deep": object()}]}


@pytest.mark.parametrize(
    ("read", "payload"),
    [
        (
            from_openai_chat,
            [{"role": "assistant", "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": BAD}}]}],
        ),
        (
            from_responses_input,
            [{"type": "function_call", "call_id": "c", "name": "f", "arguments": BAD}],
        ),
        (
            lambda messages: from_anthropic(None, messages),
            [{"role": "assistant", "content": [{"type": "tool_use", "id": "c", "name": "f", "input": BAD}]}],
        ),
        (
            lambda contents: from_gemini(None, contents),
            [{"role": "model", "parts": [{"functionCall": {"name": "f", "args": BAD}}]}],
        ),
    ],
)
def test_arguments_json_cannot_carry_are_a_format_error(read: Any, payload: Any) -> None:
    with pytest.raises(FormatError, match="JSON cannot carry"):
        read(payload)


def test_decoded_arguments_of_json_types_are_read_as_given() -> None:
    args = {"rows": [1, 2.5, None, True], "note": {"x": "y"}}
    (message,) = from_openai_chat(
        [{"role": "assistant", "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": args}}]}]
    )
    assert message.tool_call_blocks()[0].args == args
    message.fingerprint()


def test_langchain_tool_call_arguments_json_cannot_carry_are_a_format_error() -> None:
    messages = pytest.importorskip("langchain_core.messages")
    from windowkeeper.llm.formats import from_langchain

    call = {"id": "c", "name": "f", "args": BAD, "type": "tool_call"}
    with pytest.raises(FormatError, match="JSON cannot carry"):
        from_langchain([messages.AIMessage(content="", tool_calls=[call])])
