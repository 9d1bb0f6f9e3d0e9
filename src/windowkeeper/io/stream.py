"""Reading one long conversation a slice at a time, so measuring it costs memory for its text, not its messages.

A message list (a JSON array, or JSON Lines with one message per line) in a provider format is parsed value by
value (`json.JSONDecoder.raw_decode` walks the array without building it) and converted in slices cut where a
user turn starts, so a tool call and its results always land in one slice and converters that pair them see
both. One converted message costs about 1.5 KB, 40 times its JSON text; holding only a slice keeps a file of a
million messages within a few times its own size. Everything else (request bodies, collections, session logs)
is read whole by `windowkeeper.io.reader`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import partial
from itertools import islice
from pathlib import Path
from typing import Any

from ..boundary import clean_json
from ..messages import Message
from .reader import _READERS, InputFormat, _is_conversation, _message_list_format, forced_hint
from .source import ConversationFileError, RawDocument, check_depth, has_surrogate_escape, is_jsonl, parse_json

SLICE = 2048
"""Messages converted together; a slice ends where a user turn starts once it holds this many. Only there: a cut
anywhere else could part a tool call from its result, or reasoning from the reply it belongs to, so a list with
no user turns at all is one slice."""

STREAMED = frozenset(
    {
        InputFormat.OPENAI.value,
        InputFormat.ANTHROPIC.value,
        InputFormat.RESPONSES.value,
        InputFormat.LANGCHAIN.value,
        InputFormat.WINDOWKEEPER.value,
    }
)
"""Formats whose messages convert the same alone as in their list. Gemini is not among them: it has no call ids,
and the ids made up for them count calls from the start of the list."""
_WS = re.compile(r"[ \t\n\r]*")
_PEEK = 50
_MESSAGE_INDEX = re.compile(r"\bmessage (\d+)")


@dataclass
class MessageStream:
    """One conversation read slice by slice: ``slices()`` yields each slice's messages and the roles its items
    had in the file (for the turn-order rules of Anthropic and Gemini). It can be iterated once."""

    name: str
    format: str
    source: str
    values: Iterator[Any]
    tools: list[dict[str, Any]] = field(default_factory=list)
    summary: str | None = None
    scratchpad: str | None = None
    skipped: dict[str, int] = field(default_factory=dict)
    detected: bool = False
    looks: str | None = None
    """The format detection finds in the first values, when the format was forced (named if reading fails)."""

    def slices(self) -> Iterator[tuple[list[Message], list[str]]]:
        offset = 0
        for chunk in _cut(self.values, self.format):
            try:
                conversation = _READERS[self.format](self.source, self.name, chunk)
            except ConversationFileError as exc:
                problems = [_shift(p, offset) for p in exc.problems]
                summary = problems[0] if len(problems) == 1 else f"{len(problems)} problems"
                if self.detected:
                    how = f"{self.source} (read as {self.format}, detected; --format picks another): "
                else:
                    how = forced_hint(self.source, self.format, self.looks) or f"{self.source}: "
                raise ConversationFileError(f"{how}{summary}", problems=problems) from None
            roles = [str(v.get("role", "user")) if isinstance(v, Mapping) else "user" for v in chunk]
            offset += len(chunk)
            yield conversation.messages, roles


def _shift(problem: str, offset: int) -> str:
    return _MESSAGE_INDEX.sub(lambda m: f"message {int(m.group(1)) + offset}", problem, count=1)


def _opens_turn(value: Any, fmt: str) -> bool:
    """Whether ``value`` starts a user turn (no tool result in it), where a slice may end."""
    if not isinstance(value, Mapping):
        return False
    if fmt == InputFormat.LANGCHAIN.value:
        kind = value.get("type")
        if kind == "constructor":
            ids = value.get("id")
            return isinstance(ids, list) and bool(ids) and ids[-1] == "HumanMessage"
        return kind == "human"
    if value.get("role") != "user" or value.get("type") not in (None, "message"):
        return False
    content = value.get("content", value.get("parts"))
    if isinstance(content, list):
        for block in content:
            if isinstance(block, Mapping) and (
                block.get("type") in ("tool_result", "function_call_output") or "functionResponse" in block
            ):
                return False
    return True


def _cut(values: Iterator[Any], fmt: str) -> Iterator[list[Any]]:
    chunk: list[Any] = []
    for value in values:
        if len(chunk) >= SLICE and _opens_turn(value, fmt):
            yield chunk
            chunk = []
        chunk.append(value)
    if chunk:
        yield chunk


def _array_values(doc: RawDocument, start: int) -> Iterator[Any]:
    """The values of the JSON array opening at ``start``, parsed one at a time."""
    text = doc.text
    dirty = has_surrogate_escape(text)
    decode = _DECODER.raw_decode
    pos = _skip(text, start + 1)
    if text.startswith("]", pos):
        return
    while True:
        try:
            value, pos = decode(text, pos)
        except json.JSONDecodeError as exc:
            raise ConversationFileError(
                f"{doc.source}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
            ) from None
        except ValueError as exc:  # NaN or Infinity
            raise ConversationFileError(f"{doc.source}: not valid JSON ({exc})") from None
        yield clean_json(value) if dirty else value
        pos = _skip(text, pos)
        if text.startswith(",", pos):
            pos = _skip(text, pos + 1)
        elif text.startswith("]", pos):
            if _skip(text, pos + 1) != len(text):
                raise ConversationFileError(f"{doc.source}: not valid JSON (extra data after the list)")
            return
        else:
            raise ConversationFileError(f"{doc.source}: not valid JSON (expected ',' or ']' at offset {pos})")


def _skip(text: str, pos: int) -> int:
    match = _WS.match(text, pos)
    return match.end() if match is not None else pos


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


_DECODER = json.JSONDecoder(parse_constant=_reject_constant)


def _line_values(doc: RawDocument) -> Iterator[Any]:
    text = doc.text
    start = 0
    number = 0
    while start < len(text):
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        line = text[start:end]
        start = end + 1
        number += 1
        if line.strip():
            yield parse_json(line, source=doc.source, line=number)


def open_stream(doc: RawDocument, fmt: str) -> MessageStream | None:
    """A `MessageStream` over ``doc`` when it is one message list in a streamed format; None otherwise (the
    caller reads it whole, which reports malformed input with every problem)."""
    text = doc.text
    if not text.strip() or fmt not in STREAMED | {InputFormat.AUTO.value, InputFormat.JSONL.value}:
        return None
    values: Callable[[], Iterator[Any]]
    if is_jsonl(doc, True if fmt == InputFormat.JSONL.value else None):
        values = partial(_line_values, doc)
    else:
        head = _skip(text, 0)
        if not text.startswith("[", head):
            return None
        check_depth(text, source=doc.source)
        values = partial(_array_values, doc, head)
    try:
        peek = list(islice(values(), _PEEK))
    except ConversationFileError:
        return None
    if not peek or any(isinstance(v, list) or _is_conversation(v) for v in peek):
        return None
    found = _message_list_format(peek) if fmt in (InputFormat.AUTO.value, InputFormat.JSONL.value) else fmt
    if found not in STREAMED:
        return None
    name = Path(doc.source).stem or doc.source
    detected = fmt in (InputFormat.AUTO.value, InputFormat.JSONL.value)
    looks = None if detected else _message_list_format(peek)
    return MessageStream(name, found, doc.source, values(), detected=detected, looks=looks)
