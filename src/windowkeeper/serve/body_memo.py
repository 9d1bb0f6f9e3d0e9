"""Parse a request body at the cost of what is new in it.

An agent re-sends its whole conversation on every call, so a 100k-token thread is a ~400 KB body of which only the
last item or two are new; parsing all of it was the one step of a passed-through request that still grew with the
history. A client serializes the same list the same way from call to call, so this call's bytes start with the
previous call's bytes up to where that call's item list closed, or up to one of its last items when the client
moved a cache mark off them. The memo keeps, per client and route, that prefix with the places its last few items
start (`_cuts`) and what it parsed to (the keys before the list and the list's items); a body that starts with the
prefix, or with it up to such a place, has only the items after it and the keys after the list parsed.

Soundness: the kept prefix is a byte prefix of a document that parsed, cut just before its list's closing bracket
(found from the end and confirmed by re-parsing what followed it against the keys the full parse had after the
list). A body that starts with it is in the same parser state there, so when the rest splits into a valid run of
items, the closing bracket and a valid tail of keys, the whole body parses to the kept head, the kept items plus the
new ones, and the tail. Anything else (an edited item, a moved cache mark, a key repeated across the parts,
whitespace where there was none, a mark moved further back than the cut points reach) falls back to a full
parse, which is what every body had before.

The parsed items are shared between the calls that continue one list: nothing in the gateway mutates a client's
item (every change builds a new dict), which `tests/serve/test_memory.py` holds it to (a gateway whose memo
reuses bodies sends the same requests as one whose memo holds none, over conversations it cuts).
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

MAX_CANDIDATES = 8
"""How many ``]`` from the end are tried as the list's close before a body is parsed in full (the tail after the
list is a few keys; a nested array there adds one candidate)."""

ENTRIES_PER_KEY = 4
"""Lists kept per client and route: one client may run a few conversations at once on one credential."""

CUT_ITEMS = 3
"""How many of a list's last items get a cut point before them: a client that moves its cache marks to the newest
messages on every call (as the Anthropic docs advise) changes the last item or two of what it sent before, so the
next body continues the last one only up to an earlier item."""

STYLES: tuple[Callable[[Any], bytes], ...] = (
    orjson.dumps,  # compact, text as is: JavaScript's JSON.stringify, httpx's json=, orjson
    lambda value: json.dumps(value).encode(),  # Python's defaults: ", " and ": ", non-ASCII escaped
    lambda value: json.dumps(value, ensure_ascii=False).encode(),
    lambda value: json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode(),
)
"""How clients commonly serialize an item; an item is found in the body's bytes by writing it each way."""

_SPACE = frozenset(b" \t\r\n")


@dataclass(slots=True)
class _Entry:
    body: bytes
    """The body as received: the kept prefix is its first ``cuts[0][0]`` bytes (up to its list's closing ``]``,
    whitespace before it dropped), held without a copy."""
    head: dict[str, Any]
    """The keys before the list, parsed."""
    items: list[Any]
    """The list's items, parsed."""
    size: int
    """What the entry is charged against the memo's bound: its bytes and an estimate of its objects."""
    cuts: list[tuple[int, int]]
    """``(offset, count)``, the longest first: ``body[:offset]`` ends just after item ``count - 1`` (just after
    the list's ``[`` when ``count`` is 0); the first is the whole prefix with every item."""
    style: int
    """The `STYLES` entry that wrote this client's items last time, tried first."""


def _back_over_space(data: bytes, end: int) -> int:
    while end > 0 and data[end - 1] in _SPACE:
        end -= 1
    return end


def _cuts(body: bytes, end: int, items: list[Any], style: int) -> tuple[list[tuple[int, int]], int]:
    """The cut points of ``body[:end]`` (a prefix holding ``items``) before its last `CUT_ITEMS` items (see
    `_Entry.cuts`) and the style that found them. An item is located by writing it in a client's style and finding
    exactly those bytes where it must end, preceded by a comma (or the list's ``[``); an item no style writes as
    the client did ends the search, so every cut is where an item really starts."""
    cuts = [(end, len(items))]
    order = [style, *(i for i in range(len(STYLES)) if i != style)]
    for count in range(len(items) - 1, max(-1, len(items) - 1 - CUT_ITEMS), -1):
        for index in order:
            try:
                text = STYLES[index](items[count])
            except (TypeError, ValueError):  # orjson.JSONEncodeError is a TypeError (an int over 64 bits)
                continue
            start = end - len(text)
            if start > 0 and body.startswith(text, start, end):
                style = index
                break
        else:
            break
        before = _back_over_space(body, start)
        mark = body[before - 1 : before]
        if count > 0 and mark == b",":
            end = _back_over_space(body, before - 1)
        elif count == 0 and mark == b"[":
            end = before
        else:
            break
        cuts.append((end, count))
    return cuts, style


def _tail(data: bytes) -> dict[str, Any] | None:
    """The keys in ``data`` (what follows a list's ``]``: ``}`` or ``, "key": value ... }``), or None when it is
    not such a tail."""
    rest = data.lstrip()
    if rest[:1] == b"}":
        return {} if not rest[1:].strip() else None
    if rest[:1] != b",":
        return None
    try:
        parsed = orjson.loads(b"{" + rest[1:])
    except orjson.JSONDecodeError:
        return None
    return parsed if isinstance(parsed, dict) else None


def _items(data: bytes, first: bool) -> list[Any] | None:
    """The items in ``data`` (``, item, item`` after a kept item; ``item, item`` after an empty list's ``[``), or
    None when it is not such a run."""
    run = data.strip()
    if not run:
        return []
    if not first:
        if run[:1] != b",":
            return None
        run = run[1:]
    try:
        parsed = orjson.loads(b"[" + run + b"]")
    except orjson.JSONDecodeError:
        return None
    return parsed if isinstance(parsed, list) else None


def _split(
    data: bytes, start: int, accept: Callable[[int, dict[str, Any]], list[Any] | None]
) -> tuple[int, list[Any], dict[str, Any]] | None:
    """The last ``]`` of ``data`` at or after ``start`` whose tail parses and that ``accept`` takes (it returns the
    list's items, or None): ``(position, items, tail)``."""
    end = len(data)
    for _ in range(MAX_CANDIDATES):
        close = data.rfind(b"]", start, end)
        if close < 0:
            return None
        tail = _tail(data[close + 1 :])
        if tail is not None:
            items = accept(close, tail)
            if items is not None:
                return close, items, tail
        end = close
    return None


class BodyMemo:
    """What recent bodies parsed to, per key (the client's scope and the route), bounded by ``max_bytes``."""

    def __init__(self, max_bytes: int, parse: Callable[[bytes], Any]) -> None:
        self.max_bytes = max_bytes
        self._parse = parse
        self._entries: OrderedDict[tuple[str, str], list[_Entry]] = OrderedDict()
        self._bytes = 0
        self.hits = 0
        self.misses = 0

    def parse(self, key: tuple[str, str], raw: bytes, list_key: str) -> Any:
        """``raw`` parsed (as ``parse`` would), reusing a kept prefix of ``key``'s recent bodies; the body's list
        under ``list_key`` is remembered for the next call."""
        if self.max_bytes <= 0:
            return self._parse(raw)
        entries = self._entries.get(key)
        for index, entry in enumerate(entries or ()):
            view = memoryview(entry.body)
            for offset, count in entry.cuts:
                if len(raw) > offset and raw.startswith(view[:offset]):
                    extended = self._extend(entry, raw, list_key, offset, count)
                    if extended is not None:
                        self.hits += 1
                        body, close = extended
                        made = self._sized(raw, close, entry.head, body[list_key], entry.style)
                        self._remember(key, index, made)
                        return body
                    break  # the longest cut it starts with did not take: a shorter one would not either
        self.misses += 1
        body = self._parse(raw)
        self._remember(key, None, self._entry(raw, body, list_key))
        return body

    @staticmethod
    def _extend(entry: _Entry, raw: bytes, list_key: str, start: int, count: int) -> tuple[dict[str, Any], int] | None:
        """The body ``raw`` parsed as ``entry``'s first ``count`` items (its bytes up to ``start``) and what
        follows them, with the list's close; None when what follows is not items, the close and a tail."""
        first = count == 0

        def accept(close: int, tail: dict[str, Any]) -> list[Any] | None:
            if list_key in tail or any(k in entry.head for k in tail):
                return None  # a key repeated across the parts: the full parse says which one wins
            return _items(raw[start:close], first)

        split = _split(raw, start, accept)
        if split is None:
            return None
        close, new, tail = split
        kept = entry.items if count == len(entry.items) else entry.items[:count]
        return {**entry.head, list_key: [*kept, *new], **tail}, close

    def _remember(self, key: tuple[str, str], replaced: int | None, entry: _Entry | None) -> None:
        entries = self._entries.setdefault(key, [])
        self._entries.move_to_end(key)
        if replaced is not None:
            self._bytes -= entries.pop(replaced).size
        if entry is None:
            return
        entries.insert(0, entry)
        self._bytes += entry.size
        while len(entries) > ENTRIES_PER_KEY:
            self._bytes -= entries.pop().size
        while self._bytes > self.max_bytes and self._entries:
            _, dropped = self._entries.popitem(last=False)
            self._bytes -= sum(e.size for e in dropped)

    def _entry(self, raw: bytes, body: Any, list_key: str) -> _Entry | None:
        """The entry for a body that parsed: where its list closes, confirmed by its tail."""
        if not isinstance(body, dict) or not isinstance(body.get(list_key), list):
            return None
        keys = list(body)
        at = keys.index(list_key)
        head = {k: body[k] for k in keys[:at]}
        expected = {k: body[k] for k in keys[at + 1 :]}
        items = body[list_key]

        def accept(close: int, tail: dict[str, Any]) -> list[Any] | None:
            return items if list(tail) == list(expected) and tail == expected else None

        split = _split(raw, 0, accept)
        return self._sized(raw, split[0], head, items, 0) if split is not None else None

    def _sized(self, raw: bytes, close: int, head: dict[str, Any], items: list[Any], style: int) -> _Entry | None:
        """The entry for a body whose list closes at ``close``, unless it alone would take much of the bound."""
        end = _back_over_space(raw, close)
        if (raw[end - 1 : end] == b"[") != (not items):
            return None  # not where a list of these items closes: keep nothing rather than a wrong prefix
        # the bytes, and the parsed objects at about twice the JSON they came from
        size = len(raw) + 2 * end + 256
        if size > self.max_bytes // 2:
            return None
        cuts, style = _cuts(raw, end, items, style)
        return _Entry(raw, head, items, size, cuts, style)
