"""Reading a caller's provider-shaped list into `Message`s and writing an assembled prompt back in that shape.

`Window` takes whatever list a provider SDK (or LangChain) holds. A list in the wrong shape is the most common
mistake when wiring it in (Responses items handed to a Chat Completions window, Gemini contents to an Anthropic
one), and the converters alone would sometimes accept it silently (a Chat Completions reader keeps unknown keys).
So before converting, each item is checked for keys that belong to another provider's shape, and every error
names the index, the key, the shape expected and, when it can tell, the format the list looks like.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any, Literal, get_args

from ..errors import ConfigurationError, FormatError
from ..llm.formats import (
    from_anthropic,
    from_gemini,
    from_langchain,
    from_openai_chat,
    from_responses_input,
    to_anthropic,
    to_gemini,
    to_langchain,
    to_openai_chat,
    to_responses_input,
)
from ..llm.formats._common import plain
from ..llm.formats.anthropic import CacheBreakpoint
from ..messages import Message
from ..prompt import system_message

logger = logging.getLogger(__name__)

WindowFormat = Literal["openai_chat", "openai_responses", "anthropic", "gemini", "langchain"]
WINDOW_FORMATS: tuple[WindowFormat, ...] = get_args(WindowFormat)

NAMES: dict[str, str] = {
    "openai_chat": "OpenAI Chat Completions",
    "openai_responses": "OpenAI Responses",
    "anthropic": "Anthropic Messages",
    "gemini": "Gemini",
    "langchain": "LangChain",
}

EXPECTED: dict[str, str] = {
    "openai_chat": "Chat Completions messages such as {'role': 'user', 'content': 'hi'} "
    "(roles system, developer, user, assistant with tool_calls, tool with tool_call_id)",
    "openai_responses": "Responses input items such as {'type': 'message', 'role': 'user', 'content': 'hi'}, "
    "{'type': 'function_call', ...} or {'type': 'function_call_output', 'call_id': ..., 'output': ...}",
    "anthropic": "Anthropic messages such as {'role': 'user', 'content': 'hi'} with tool_use / tool_result "
    "content blocks (the system prompt goes to system=, not into the list)",
    "gemini": "Gemini contents such as {'role': 'user', 'parts': [{'text': 'hi'}]} (roles user and model; "
    "the system instruction goes to system=)",
    "langchain": "langchain_core message objects such as HumanMessage('hi'), AIMessage, ToolMessage",
}

_ANTHROPIC_PARTS = frozenset({"tool_use", "tool_result", "thinking", "redacted_thinking"})
_RESPONSES_PARTS = frozenset({"input_text", "output_text", "input_image", "input_file"})


def check_format(fmt: object) -> WindowFormat:
    if fmt not in WINDOW_FORMATS:
        raise ConfigurationError(f"format={fmt!r} is not supported; use one of {', '.join(map(repr, WINDOW_FORMATS))}")
    return fmt


def _is_langchain(item: Any) -> bool:
    return any(cls.__module__.startswith("langchain_core.messages") for cls in type(item).__mro__)


def _part_types(content: Any) -> list[tuple[int, str]]:
    if not isinstance(content, list):
        return []
    out = []
    for j, part in enumerate(content):
        p = plain(part)
        if isinstance(p, Mapping) and isinstance(p.get("type"), str):
            out.append((j, p["type"]))
    return out


def foreign_shape(fmt: WindowFormat, item: Any) -> tuple[str, str | None] | None:
    """``(key, guessed_format)`` when ``item`` carries a key that ``fmt``'s messages never have, else None."""
    if _is_langchain(item):
        return None if fmt == "langchain" else ("type", "langchain")
    if fmt == "langchain":
        return ("type", None)
    d = plain(item)
    if not isinstance(d, Mapping):
        return None  # the converter reports the wrong type with the expected shape
    role = d.get("role")
    if fmt != "gemini" and ("parts" in d or role == "model"):
        return ("parts" if "parts" in d else "role", "gemini")
    if fmt == "gemini" and "content" in d:
        return ("content", guess_format(item))
    if fmt != "openai_responses" and "type" in d:
        return ("type", "openai_responses")
    if fmt != "openai_chat" and ("tool_calls" in d or "tool_call_id" in d or role in ("tool", "system")):
        key = "tool_calls" if "tool_calls" in d else "tool_call_id" if "tool_call_id" in d else "role"
        if not (fmt == "openai_responses" and role == "system"):
            return (key, "openai_chat")
    for j, ptype in _part_types(d.get("content")):
        if fmt != "anthropic" and ptype in _ANTHROPIC_PARTS:
            return (f"content[{j}].type", "anthropic")
        if fmt == "anthropic" and ptype in _RESPONSES_PARTS:
            return (f"content[{j}].type", "openai_responses")
    return None


def guess_format(item: Any) -> str | None:
    """The format ``item`` most likely belongs to, for error hints (None when nothing is distinctive)."""
    if _is_langchain(item):
        return "langchain"
    d = plain(item)
    if not isinstance(d, Mapping):
        return None
    if "parts" in d or d.get("role") == "model":
        return "gemini"
    if "type" in d:
        return "openai_responses"
    if "tool_calls" in d or "tool_call_id" in d or d.get("role") in ("tool", "system", "developer"):
        return "openai_chat"
    for _, ptype in _part_types(d.get("content")):
        if ptype in _ANTHROPIC_PARTS:
            return "anthropic"
        if ptype in _RESPONSES_PARTS:
            return "openai_responses"
    return None


def _shape_error(fmt: WindowFormat, index: int, key: str, guess: str | None, detail: str) -> FormatError:
    hint = f"; it looks like {NAMES[guess]}: pass format={guess!r} if the list is in that shape" if guess else ""
    return FormatError(
        f"{detail}; Window(format={fmt!r}) expects {EXPECTED[fmt]}{hint}",
        index=index,
        key=key,
    )


def read_messages(fmt: WindowFormat, messages: Any) -> list[Message]:
    """The caller's list as our messages (deterministic ids); never mutates ``messages``."""
    if fmt == "openai_responses" and isinstance(messages, str):
        return from_responses_input(messages)
    if isinstance(messages, str | bytes | Mapping) or not isinstance(messages, Sequence):
        raise FormatError(
            f"Window(format={fmt!r}) takes the whole conversation as a list of {EXPECTED[fmt]}, "
            f"got {type(messages).__name__}",
        )
    for i, item in enumerate(messages):
        foreign = foreign_shape(fmt, item)
        if foreign is not None:
            key, guess = foreign
            raise _shape_error(
                fmt,
                i,
                key,
                guess,
                f"this {type(plain(item)).__name__} has {key!r}, which {NAMES[fmt]} messages never carry",
            )
    try:
        if fmt == "openai_chat":
            return from_openai_chat(list(messages))
        if fmt == "openai_responses":
            return from_responses_input(list(messages))
        if fmt == "anthropic":
            return from_anthropic(None, list(messages))
        if fmt == "gemini":
            return from_gemini(None, list(messages))
        return from_langchain(list(messages))
    except FormatError as exc:
        index = exc.index
        guess = guess_format(messages[index]) if index is not None and 0 <= index < len(messages) else None
        detail = str(exc)
        prefix = ", ".join(
            part
            for part in (f"message {index}" if index is not None else None, f"key {exc.key!r}" if exc.key else None)
            if part
        )
        if prefix and detail.startswith(prefix + ": "):
            detail = detail[len(prefix) + 2 :]
        error = _shape_error(fmt, index if index is not None else 0, exc.key or "", guess, detail)
        error.index, error.key = exc.index, exc.key
        raise error from None


def system_text(fmt: WindowFormat, system: Any) -> str | None:
    """The ``system=`` argument as one text: a string, Anthropic text blocks, a Gemini content, a SystemMessage."""
    if system is None:
        return None
    if isinstance(system, str):
        return system or None
    if fmt == "anthropic" or isinstance(system, list):
        messages = from_anthropic(system, [])
    elif fmt == "gemini":
        messages = from_gemini(system, [])
    elif _is_langchain(system):
        messages = from_langchain([system])
    else:
        raise FormatError(
            f"system= must be a string for format {fmt!r}, got {type(system).__name__}", key="system"
        )
    return "\n\n".join(m.text() for m in messages if m.role == "system") or None


def write_messages(
    fmt: WindowFormat,
    system: str | None,
    messages: Sequence[Message],
    *,
    cache_breakpoints: Sequence[CacheBreakpoint] | None = None,
    developer: bool = False,
) -> tuple[list[Any], Any]:
    """``(messages, system)`` in ``fmt``: system in its native place (in the list for Chat Completions/LangChain)."""
    if fmt == "openai_chat":
        head: list[dict[str, Any]] = (
            [{"role": "developer" if developer else "system", "content": system}] if system else []
        )
        return [*head, *to_openai_chat(messages)], None
    if fmt == "openai_responses":
        _, items = to_responses_input(messages, reasoning="signed")
        return items, system
    if fmt == "anthropic":
        if cache_breakpoints is None:
            _, out = to_anthropic(messages, reasoning="signed")
            return out, system
        marks = [b for b in cache_breakpoints if b != "system"]
        _, out = to_anthropic(messages, reasoning="signed", cache_breakpoints=marks)
        if system and "system" in cache_breakpoints:
            return out, [{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}]
        return out, system
    if fmt == "gemini":
        _, contents = to_gemini(messages, reasoning="signed")
        return contents, ({"parts": [{"text": system}]} if system else None)
    head_lc: list[Message] = [system_message(system)] if system else []
    return to_langchain([*head_lc, *messages]), None


__all__ = [
    "EXPECTED",
    "NAMES",
    "WINDOW_FORMATS",
    "WindowFormat",
    "check_format",
    "foreign_shape",
    "guess_format",
    "read_messages",
    "system_text",
    "write_messages",
]
