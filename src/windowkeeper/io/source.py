"""Reading untrusted conversation files safely: bounded size, strict UTF-8, bounded nesting, one-line errors.

Every failure is a `ConversationFileError` whose message names the file and says what to do, so the CLI can print
it on one line and exit 2. Nothing here interprets the data; `windowkeeper.io.reader` does that.
"""

from __future__ import annotations

import io
import json
import os
import re
import select
import stat
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from ..boundary import clean_json
from ..errors import FormatError

DEFAULT_MAX_BYTES = 256 * 1024 * 1024
"""Largest input read by default (256 MiB); a larger file, or an endless device such as ``/dev/zero``, stops here."""

MAX_DEPTH = 100
"""Deepest JSON nesting accepted. Real conversations nest a few levels; deeper input is rejected before parsing."""

DEFAULT_TIMEOUT = 30.0
"""Seconds a named pipe or device may stay silent before reading it fails (a pipe nobody writes to)."""

STDIN = "-"
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')
_CHUNK = 1 << 16
_WIDE_BOMS = (b"\xff\xfe", b"\xfe\xff", b"\x00\x00\xfe\xff")


class ConversationFileError(FormatError):
    """A conversation file could not be read or understood; the message names the file, index and field.

    ``problems`` lists every problem found (each already prefixed with its location), not only the first.
    """

    def __init__(
        self, message: str, *, index: int | None = None, key: str | None = None, problems: list[str] | None = None
    ) -> None:
        super().__init__(message)  # the message already says where; no "message N, key K" prefix on top
        self.index = index
        self.key = key
        self.problems = list(problems) if problems else [str(self)]


@dataclass(frozen=True)
class RawDocument:
    """The decoded text of one input and where it came from (``"-"`` for standard input)."""

    source: str
    text: str


class _Waiting(io.RawIOBase):
    """A named pipe or a device, read without blocking forever: each read waits at most ``timeout`` seconds for
    data. Opening a pipe for reading would itself block until a writer appears, so it is opened non-blocking."""

    def __init__(self, path: str, timeout: float) -> None:
        self.path = path
        self.timeout = timeout
        self.fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        self.poller = select.poll()
        self.poller.register(self.fd, select.POLLIN)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while True:
            events = self.poller.poll(self.timeout * 1000)
            if not events:
                raise ConversationFileError(
                    f"{self.path}: nothing to read after {self.timeout:g} s (a pipe with no writer?); write to it, "
                    "or pass --timeout to wait longer"
                )
            try:
                data = os.read(self.fd, len(buffer))
            except BlockingIOError:
                continue
            buffer[: len(data)] = data
            return len(data)

    def close(self) -> None:
        if not self.closed:
            os.close(self.fd)
        super().close()


def _open(path: str, timeout: float = DEFAULT_TIMEOUT) -> BinaryIO:
    if path == STDIN:
        return sys.stdin.buffer
    p = Path(path)
    try:
        mode = p.stat().st_mode
    except FileNotFoundError as exc:
        raise ConversationFileError(f"{path}: no such file") from exc
    except OSError as exc:
        raise ConversationFileError(f"{path}: cannot read ({exc.strerror or exc})") from exc
    if stat.S_ISDIR(mode):
        raise ConversationFileError(f"{path}: is a directory; pass a conversation file")
    if stat.S_ISSOCK(mode) or stat.S_ISBLK(mode):
        what = "a socket" if stat.S_ISSOCK(mode) else "a block device"
        raise ConversationFileError(f"{path}: is {what}; pass a conversation file")
    try:
        if stat.S_ISFIFO(mode) or stat.S_ISCHR(mode):
            return io.BufferedReader(_Waiting(path, timeout))  # type: ignore[return-value]
        return p.open("rb")
    except OSError as exc:
        raise ConversationFileError(f"{path}: cannot read ({exc.strerror or exc})") from exc


def _chunks(handle: BinaryIO, source: str, max_bytes: int) -> Iterator[bytes]:
    read = 0
    first = True
    while True:
        try:
            chunk = handle.read(_CHUNK)
        except OSError as exc:
            raise ConversationFileError(f"{source}: cannot read ({exc.strerror or exc})") from exc
        if not chunk:
            return
        if first and chunk.startswith(_WIDE_BOMS):
            raise ConversationFileError(
                f"{source}: not UTF-8 (a UTF-16/UTF-32 byte order mark); re-encode it, e.g. iconv -f utf-16 -t utf-8"
            )
        if first and b"\x00" in chunk:
            raise ConversationFileError(f"{source}: binary data (NUL bytes); expected a JSON or JSONL text file")
        first = False
        read += len(chunk)
        if read > max_bytes:
            raise ConversationFileError(
                f"{source}: larger than {max_bytes:,} bytes; pass --max-bytes to read bigger files"
            )
        yield chunk


def read_text(
    path: str | os.PathLike[str], *, max_bytes: int = DEFAULT_MAX_BYTES, timeout: float = DEFAULT_TIMEOUT
) -> RawDocument:
    """The UTF-8 text of ``path`` (``"-"`` is standard input), read at most ``max_bytes`` bytes.

    A UTF-8 byte order mark is accepted; any other encoding is an error naming the first bad byte's offset,
    because guessing (say, Latin-1) would silently change what is counted.
    """
    source = os.fspath(path)
    handle = _open(source, timeout)
    try:
        data = b"".join(_chunks(handle, source, max_bytes))
    finally:
        if handle is not sys.stdin.buffer:
            handle.close()
    if b"\x00" in data:
        raise ConversationFileError(f"{source}: binary data (NUL bytes); expected a JSON or JSONL text file")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConversationFileError(
            f"{source}: not UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start}); "
            "re-encode it, e.g. iconv -f latin1 -t utf-8"
        ) from exc
    return RawDocument(source, text)


def check_depth(text: str, *, source: str, max_depth: int = MAX_DEPTH, line: int | None = None) -> None:
    """Reject JSON nested deeper than ``max_depth`` before the parser (or anything after it) recurses into it.

    Brackets inside strings are skipped, so a message that merely talks about ``[[[`` is fine.
    """
    if text.count("[") + text.count("{") <= max_depth:
        return  # too few brackets to nest that deep (the usual case: one short JSON line)
    depth = 0
    for match in _TOKENS.finditer(text):
        ch = match.group()
        if ch in "[{":
            depth += 1
            if depth > max_depth:
                where = f" (line {line})" if line is not None else ""
                raise ConversationFileError(f"{source}{where}: JSON nested deeper than {max_depth} levels")
        elif ch in "]}":
            depth -= 1


def _reject_constant(name: str) -> Any:
    raise json.JSONDecodeError(f"{name} is not a JSON number", name, 0)


def parse_json(text: str, *, source: str, line: int | None = None) -> Any:
    """One JSON value: nesting bounded, ``NaN``/``Infinity`` refused, lone surrogates replaced."""
    check_depth(text, source=source, line=line)
    try:
        value = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        where = f"line {line}" if line is not None else f"line {exc.lineno}, column {exc.colno}"
        hint = ""
        if exc.msg == "Extra data" and line is None and text[: exc.pos].rstrip().endswith(("}", "]")):
            hint = "; it looks like JSON Lines (one value per line): name it .jsonl or pass --format"
        raise ConversationFileError(f"{source}: not valid JSON ({where}: {exc.msg}){hint}") from exc
    except RecursionError as exc:  # pragma: no cover - check_depth stops this first
        raise ConversationFileError(f"{source}: JSON nested too deeply") from exc
    except ValueError as exc:  # an integer of more digits than Python converts (``sys.set_int_max_str_digits``)
        where = f" (line {line})" if line is not None else ""
        raise ConversationFileError(f"{source}: not valid JSON{where}: {exc}") from exc
    # valid UTF-8 cannot hold a lone surrogate, but a JSON escape (\\ud83d) can; only then walk the value
    return clean_json(value) if _SURROGATE_ESCAPE.search(text) else value


_parse = parse_json


def has_surrogate_escape(text: str) -> bool:
    """Whether ``text`` may hold a lone surrogate escape (values parsed from it then need `clean_json`)."""
    return _SURROGATE_ESCAPE.search(text) is not None


@dataclass(frozen=True)
class ParsedDocument:
    """Parsed JSON (``lines`` set when the input was JSON Lines: one value per non-empty line)."""

    source: str
    data: Any
    lines: list[Any] | None = None
    numbers: list[int] | None = None
    """The line number of each of ``lines`` (blank lines are skipped, so they differ from positions)."""


def parse_document(doc: RawDocument, *, jsonl: bool | None = None) -> ParsedDocument:
    """Parse ``doc`` as one JSON value, or as JSON Lines when ``jsonl`` is true (or when it is None and the text
    holds several top-level values, one per line)."""
    if not doc.text.strip():
        raise ConversationFileError(f"{doc.source}: empty file; expected a JSON conversation")
    if not is_jsonl(doc, jsonl):
        return ParsedDocument(doc.source, _parse(doc.text, source=doc.source))
    values: list[Any] = []
    numbers: list[int] = []
    for number, line in enumerate(doc.text.splitlines(), start=1):
        if line.strip():
            values.append(_parse(line, source=doc.source, line=number))
            numbers.append(number)
    return ParsedDocument(doc.source, values, lines=values, numbers=numbers)


def is_jsonl(doc: RawDocument, jsonl: bool | None = None) -> bool:
    """Whether ``doc`` is read as JSON Lines: ``jsonl`` when given, else by its suffix, else by its first line."""
    if jsonl is not None:
        return jsonl
    suffix = Path(doc.source).suffix.lower()
    return suffix in (".jsonl", ".ndjson") or (suffix not in (".json", ".traj") and _looks_like_jsonl(doc.text))


def _looks_like_jsonl(text: str) -> bool:
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) < 2:
        return False
    head = lines[0].strip()
    if not ((head.startswith("{") and head.endswith("}")) or (head.startswith("[") and head.endswith("]"))):
        return False
    try:
        json.loads(head)
    except (json.JSONDecodeError, RecursionError):
        return False
    return True
