"""Reading a caller's provider-shaped list into `Message`s and writing an assembled prompt back in that shape.

`Window` takes whatever list a provider SDK (or LangChain) holds. A list in the wrong shape is the most common
mistake when wiring it in (Responses items handed to a Chat Completions window, Gemini contents to an Anthropic
one), and the converters alone would sometimes accept it silently (a Chat Completions reader keeps unknown keys).
So before converting, each item is checked for keys that belong to another provider's shape, and every error
names the index, the key, the shape expected and, when it can tell, the format the list looks like.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, get_args

from ..errors import ConfigurationError, FormatError
from ..llm.formats import (
    anthropic,
    from_anthropic,
    from_gemini,
    from_langchain,
    from_openai_chat,
    from_responses_input,
    gemini,
    langchain,
    openai_chat,
    openai_responses,
    to_anthropic,
    to_gemini,
    to_langchain,
    to_openai_chat,
    to_responses_input,
)
from ..llm.formats._common import plain
from ..llm.formats.anthropic import CacheBreakpoint
from ..llm.formats.openai_responses import continues_turn
from ..messages import Message
from ..prompt import system_message

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage

    from ..llm.formats.wire import (
        AnthropicMessage,
        AnthropicSystem,
        GeminiContent,
        GeminiSystemInstruction,
        OpenAIChatDeveloperMessage,
        OpenAIChatMessage,
        OpenAIChatSystemMessage,
        ResponsesItem,
    )

logger = logging.getLogger(__name__)

WireMessages: TypeAlias = (
    "list[OpenAIChatMessage] | list[ResponsesItem] | list[AnthropicMessage] | list[GeminiContent] | list[BaseMessage]"
)
"""What `write_messages` returns for some format (which one is known at run time only)."""
WireSystem: TypeAlias = "AnthropicSystem | GeminiSystemInstruction | None"

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


@dataclass
class ReadCache:
    """What the previous read of a thread's list produced, so the next read converts only the new tail.

    ``items`` are the caller's items as last read (this cache's own list, grown in place) and ``marks`` the
    ``(item index, messages read before it)`` points a tail may start at, ascending. ``reused`` is how many
    leading messages the last read took from the read before it, and ``replaced`` the messages of that earlier
    read it re-read instead (a tail restarted before the previous end), so a caller can compare them.
    """

    items: list[Any] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)
    marks: list[tuple[int, int]] = field(default_factory=lambda: [(0, 0)])
    reused: int = 0
    replaced: list[Message] = field(default_factory=list)


def _safe_start(fmt: WindowFormat, items: Sequence[Any], index: int) -> bool:
    """Whether reading may start at ``items[index]`` without state from the items before it."""
    if index == 0 or index >= len(items):
        return True
    if fmt == "openai_responses":
        return not (continues_turn(items[index - 1]) and continues_turn(items[index]))
    if fmt == "gemini":
        entry = plain(items[index])
        parts = entry.get("parts") if isinstance(entry, Mapping) else None
        return not any(
            isinstance(p, Mapping) and ("functionResponse" in p or "function_response" in p)
            for p in (plain(part) for part in (parts if isinstance(parts, list) else []))
        )
    return True


BOUNDARY_ITEMS = 4
"""Items just before a mark that are always compared; before them the comparison steps back by doubling strides."""


def same_prefix(items: Sequence[Any], known: Sequence[Any], n: int) -> bool:
    """Whether ``items[:n]`` are still ``known[:n]``, judged at the boundary: the last `BOUNDARY_ITEMS` items, then
    log-spaced ones back to the first (O(log n) comparisons, identity first). An item replaced deep inside the
    history between two of those points goes unnoticed; rewriting history means starting the thread over."""
    if n > len(items) or n > len(known):
        return False
    i, step = n - 1, 1
    while i >= 0:
        mine, theirs = items[i], known[i]
        if mine is not theirs and mine != theirs:
            return False
        if n - 1 - i >= BOUNDARY_ITEMS:
            step *= 2
        i -= step
    return n == 0 or items[0] is known[0] or items[0] == known[0]


def read_messages_cached(fmt: WindowFormat, messages: Any, cache: ReadCache | None) -> tuple[list[Message], ReadCache]:
    """`read_messages` that re-reads only what is new since ``cache`` (the same result, ids included).

    The leading items read last time (recognized at the boundary, see `same_prefix`) are taken from the cache, up
    to the last point a read can restart from; the rest is read with the id chain continued. Work per call is
    proportional to what is new, not to the history: the cache is updated in place and the returned list is the
    cache's own (valid until the next read). Items must not be edited in place: replace an item to change history.
    """
    if cache is None or (fmt == "openai_responses" and isinstance(messages, str)):
        return _fresh(fmt, messages)
    _check_list(fmt, messages)
    chosen = 0
    for index in range(len(cache.marks) - 1, 0, -1):
        item_index = cache.marks[index][0]
        if (
            item_index <= len(messages)
            and _safe_start(fmt, messages, item_index)
            and same_prefix(messages, cache.items, item_index)
        ):
            chosen = index
            break
    if chosen == 0:
        return _fresh(fmt, messages)
    start, count = cache.marks[chosen]
    tail = list(messages[start:])
    _check_shapes(fmt, tail, offset=start)
    previous = str(cache.messages[count - 1].message_id) if count else None
    read = _guarded(fmt, messages, lambda: _read_tail(fmt, tail, start, previous))
    cache.replaced = cache.messages[count:]
    del cache.messages[count:]
    cache.messages.extend(read)
    del cache.items[start:]
    cache.items.extend(tail)
    del cache.marks[chosen + 1 :]
    cache.marks.append((len(messages), len(cache.messages)))
    cache.reused = count
    return cache.messages, cache


def _fresh(fmt: WindowFormat, messages: Any) -> tuple[list[Message], ReadCache]:
    out = read_messages(fmt, messages)
    items = [messages] if isinstance(messages, str) else list(messages)
    return out, ReadCache(items=items, messages=out, marks=[(0, 0), (len(items), len(out))])


def _read_tail(fmt: WindowFormat, tail: list[Any], offset: int, previous: str | None) -> list[Message]:
    if fmt == "openai_chat":
        return openai_chat.read_items(tail, offset=offset, previous=previous)
    if fmt == "openai_responses":
        return openai_responses.read_items(tail, offset=offset, previous=previous)
    if fmt == "anthropic":
        return anthropic.read_items(tail, offset=offset, previous=previous)
    if fmt == "gemini":
        return gemini.read_items(tail, offset=offset, previous=previous)
    return langchain.read_items(tail, offset=offset, previous=previous)


def _check_list(fmt: WindowFormat, messages: Any) -> None:
    if isinstance(messages, str | bytes | Mapping) or not isinstance(messages, Sequence):
        raise FormatError(
            f"Window(format={fmt!r}) takes the whole conversation as a list of {EXPECTED[fmt]}, "
            f"got {type(messages).__name__}",
        )


def _check_shapes(fmt: WindowFormat, items: Sequence[Any], *, offset: int = 0) -> None:
    for i, item in enumerate(items, start=offset):
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


def read_messages(fmt: WindowFormat, messages: Any) -> list[Message]:
    """The caller's list as our messages (deterministic ids); never mutates ``messages``."""
    if fmt == "openai_responses" and isinstance(messages, str):
        return from_responses_input(messages)
    _check_list(fmt, messages)
    _check_shapes(fmt, messages)
    return _guarded(fmt, messages, lambda: _read_all(fmt, list(messages)))


def _read_all(fmt: WindowFormat, items: list[Any]) -> list[Message]:
    if fmt == "openai_chat":
        return from_openai_chat(items)
    if fmt == "openai_responses":
        return from_responses_input(items)
    if fmt == "anthropic":
        return from_anthropic(None, items)
    if fmt == "gemini":
        return from_gemini(None, items)
    return from_langchain(items)


def _guarded(fmt: WindowFormat, messages: Sequence[Any], read: Callable[[], list[Message]]) -> list[Message]:
    """``read()``, its `FormatError` completed with the shape this window expects and the format it looks like."""
    try:
        return read()
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
) -> tuple[WireMessages, WireSystem]:
    """``(messages, system)`` in ``fmt``: system in its native place (in the list for Chat Completions/LangChain)."""
    if fmt == "openai_chat":
        chat = to_openai_chat(messages)
        if system:
            head: OpenAIChatSystemMessage | OpenAIChatDeveloperMessage = (
                {"role": "developer", "content": system} if developer else {"role": "system", "content": system}
            )
            chat.insert(0, head)
        return chat, None
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
    "ReadCache",
    "read_messages",
    "read_messages_cached",
    "same_prefix",
    "system_text",
    "write_messages",
]
