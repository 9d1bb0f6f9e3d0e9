"""The rules every value obeys when it enters windowkeeper: text that can be encoded, JSON that can be read back.

**Lone surrogates are replaced, never rejected.** A Python ``str`` may hold code points U+D800-U+DFFF that no
UTF-8 encoder accepts: half an emoji cut by a truncated stream or a JSON ``"\\ud83d"`` escape, or a file name from
``os.listdir`` decoded with ``surrogateescape``. Such text cannot be hashed, stored or sent to a provider, so it
used to crash every manager, the memory, the stores and the CLI with `UnicodeEncodeError`. We replace each lone
surrogate with U+FFFD (the Unicode replacement character) and join a valid high/low pair into the character it
encodes. Replacing rather than raising `FormatError` was chosen because the damage is nearly always careless, not
hostile, and confined to one or two characters: rejecting would throw away the user's whole turn (and, in a graph
run, everything persisted with it) over half an emoji, whereas U+FFFD is exactly what any UTF-8 decoder shows for
the same bytes and what a provider would have received anyway. The rule is applied once, by the model
constructors (`Message` and every content block validate their text through `clean_text` and their JSON-valued
fields through `clean_json`), so every reader, manager, memory, store and the CLI inherits it.

Identifiers are the one exception to the replacement character: two different lone surrogates must not become
the same id (the second message would be dropped as a duplicate), so `clean_id` writes each as its ``\\uXXXX``
escape instead. The addresses a store is called with (thread, namespace, session, record key) are refused with
`ConfigurationError` rather than changed, because silently rewriting an address could point one caller at
another's data.

**JSON limits are the same on write and read.** `MAX_JSON_DEPTH` bounds the nesting of a stored document and
`json_problem` finds what a store would refuse (too deep, NaN or Infinity): the stores check it before writing,
so what a store accepts it can always read back, and a reader of provider payloads reports it as `FormatError`.
"""

from __future__ import annotations

import math
from typing import Any

REPLACEMENT_CHARACTER = "\ufffd"

MAX_JSON_DEPTH = 128
"""Deepest nesting of arrays and objects a stored document may have, envelope included.

PostgreSQL, SQLite, Redis and memory all keep JSON text; the read path (pydantic's JSON parser) refuses anything
nested deeper than 200 levels, and a message inside a state snapshot or a memory record sits a few levels lower
than on its own, so writes stop well before that: at 128 levels for a message (about 124 for a tool's arguments or
output) and 128 plus the envelope for documents that embed messages.
"""

MAX_DOC_DEPTH = MAX_JSON_DEPTH + 32
"""Depth limit of a state snapshot or memory record, which embed whole messages a few levels down."""

_WALK_LIMIT = 240
"""Beyond this depth `clean_json` refuses a value (a cycle included): pydantic's serializer stops at about 255
levels, envelope included, so a message holding it could be neither hashed, stored nor sent."""


def clean_text(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD and surrogate pairs joined; the same object if clean.

    ASCII text is recognised in constant time; other text costs one encode attempt.
    """
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text


def clean_id(identifier: str) -> str:
    """An identifier with each lone surrogate written as its ``\\uXXXX`` escape; the same object if clean.

    Ids (message ids, tool call ids) are compared, not read: replacing two different lone surrogates by the same
    U+FFFD would merge two distinct ids (and silently drop the second message as a duplicate), so an id keeps
    them apart with an escape instead. Valid pairs are joined first, as in `clean_text`.
    """
    if identifier.isascii():
        return identifier
    try:
        identifier.encode("utf-8")
    except UnicodeEncodeError:
        joined = identifier.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
        return joined.encode("utf-8", "backslashreplace").decode("utf-8")
    return identifier


def has_lone_surrogate(text: str) -> bool:
    """Whether ``text`` holds a code point no UTF-8 encoder accepts (a lone surrogate)."""
    if text.isascii():
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def clean_json(value: Any, *, _depth: int = 0) -> Any:
    """``value`` with `clean_text` applied to every string and key inside it (dicts, lists and tuples).

    Containers are copied only when something inside them changed, so clean data costs one walk and no
    allocation. Raises `ValueError` for data nested deeper than 240 levels (or cyclic), which nothing could
    serialize.
    """
    kind = type(value)
    if kind is str:
        return value if value.isascii() else clean_text(value)
    if kind is int or kind is float or kind is bool or value is None:
        return value  # the common leaves first: this walk runs on every tool call read back
    if kind is dict and _depth < _WALK_LIMIT:
        copied: dict[Any, Any] | None = None
        for key, item in value.items():
            new_key = key if type(key) is not str or key.isascii() else clean_text(key)
            new_item = item if type(item) is str and item.isascii() else clean_json(item, _depth=_depth + 1)
            if copied is None and (new_key is not key or new_item is not item):
                copied = {}
                for done_key, done_item in value.items():  # copy what came before unchanged, then continue
                    if done_key is key:
                        break
                    copied[done_key] = done_item
            if copied is not None:
                copied[new_key] = new_item
        return value if copied is None else copied
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        if _depth >= _WALK_LIMIT:
            raise ValueError(f"value nests deeper than {_WALK_LIMIT} levels; flatten it or pass it as a string")
        changed = False
        out: dict[Any, Any] = {}
        for key, item in value.items():
            new_key = clean_text(key) if isinstance(key, str) else key
            new_item = clean_json(item, _depth=_depth + 1)
            if new_key is not key or new_item is not item:
                changed = True
            out[new_key] = new_item
        return out if changed else value
    if isinstance(value, _SEQUENCES):
        if _depth >= _WALK_LIMIT:
            raise ValueError(f"value nests deeper than {_WALK_LIMIT} levels; flatten it or pass it as a string")
        items = [clean_json(item, _depth=_depth + 1) for item in value]
        if all(new is old for new, old in zip(items, value, strict=True)):
            return value
        return items if isinstance(value, list) else tuple(items)
    return value


_CONTAINERS = (dict, list, tuple)
_SEQUENCES = (list, tuple)


def json_depth(value: Any, *, limit: int) -> int:
    """Nesting depth of ``value`` (a scalar is 0, ``[1]`` is 1); stops counting once it passes ``limit``.

    Every payload a reader is handed is walked here first, so the kinds are tested against class tuples built once
    (``dict | list | tuple`` written inline made a union object per child, most of the walk's cost).
    """
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    pop, push = stack.pop, stack.append
    while stack:
        item, depth = pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, _SEQUENCES):
            children = item
        else:
            continue
        depth += 1
        if depth > deepest:
            deepest = depth
            if deepest > limit:
                return deepest
        for child in children:
            if isinstance(child, _CONTAINERS):
                push((child, depth))
    return deepest


def json_problem(value: Any, *, limit: int = MAX_JSON_DEPTH) -> str | None:
    """Why ``value`` cannot be stored as JSON and read back, or ``None`` when it can.

    Reports nesting deeper than ``limit`` and non-finite floats (NaN, Infinity), naming the path of the first
    non-finite number found.
    """
    depth = json_depth(value, limit=limit)
    if depth > limit:
        return f"it nests more than {limit} levels deep (the limit every store can read back); flatten it"
    path = _non_finite_path(value)
    if path is not None:
        return (
            f"it holds NaN or Infinity at {path}; stores keep strict JSON, which has neither: "
            "use null or a string such as 'NaN'"
        )
    return None


def _has_non_finite(value: Any) -> bool:
    """Whether a NaN or Infinity is anywhere in ``value``: the walk every stored document takes, without the path
    strings `_non_finite_path` builds for each element (only a document that holds one needs its path)."""
    stack: list[Any] = [value]
    pop, extend = stack.pop, stack.extend
    isfinite = math.isfinite
    while stack:
        item = pop()
        if isinstance(item, float):
            if not isfinite(item):
                return True
        elif isinstance(item, dict):
            extend(item.values())
        elif isinstance(item, _SEQUENCES):
            extend(item)
    return False


def _non_finite_path(value: Any) -> str | None:
    if not _has_non_finite(value):
        return None
    stack: list[tuple[Any, str]] = [(value, "$")]
    while stack:
        item, path = stack.pop()
        if isinstance(item, float):
            if not math.isfinite(item):
                return path
        elif isinstance(item, dict):
            stack.extend((v, f"{path}.{k}") for k, v in item.items())
        elif isinstance(item, _SEQUENCES):
            stack.extend((v, f"{path}[{i}]") for i, v in enumerate(item))
    return None


__all__ = [
    "MAX_DOC_DEPTH",
    "MAX_JSON_DEPTH",
    "REPLACEMENT_CHARACTER",
    "clean_id",
    "clean_json",
    "clean_text",
    "has_lone_surrogate",
    "json_depth",
    "json_problem",
]
