"""What the manager sees of a client's items, and how a managed list goes back out in the client's own bytes.

The gateway must forward whatever it does not change exactly as the client sent it: unknown keys, unknown content
blocks, message kinds windowkeeper does not model, the client's own ``cache_control`` marks. The manager, though,
reads only what windowkeeper models. So each client item gets a *plain* twin for the manager: the known keys only,
an unknown block or item as a text part carrying its JSON (so it is counted and can be cleared like any text), no
``cache_control`` (clients move their marks every call; a moved mark is not an edit), and a lone text block as a
string (the same text either way).

Each plain item also has a canonical *key* (its sorted JSON with the same normalizations). When the manager's output
holds an item whose key equals a client item's key, the client's original goes out in its place; only the items the
manager changed (a pointer, a summary) go out as written. The keys also feed thread recognition (`identity`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

CHAT_KEYS = frozenset({"role", "content", "name", "tool_calls", "tool_call_id", "refusal", "function_call"})
CHAT_ROLES = frozenset({"system", "developer", "user", "assistant", "tool"})
CHAT_PARTS = frozenset({"text", "image_url", "input_audio", "file", "refusal"})
ANTHROPIC_BLOCKS = frozenset({"text", "image", "document", "thinking", "redacted_thinking", "tool_use", "tool_result"})
RESPONSES_ITEMS = {
    "message": frozenset({"type", "role", "content"}),
    "reasoning": frozenset({"type", "id", "summary", "encrypted_content", "content"}),
    "function_call": frozenset({"type", "call_id", "name", "arguments", "id"}),
    "function_call_output": frozenset({"type", "call_id", "output"}),
}
RESPONSES_PARTS = frozenset({"input_text", "output_text", "text", "input_image", "input_file", "refusal"})
TEXT_TYPES = frozenset({"text", "input_text", "output_text"})


def _dumps(value: Any) -> str:
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    except TypeError:  # integers beyond 64 bits, which JSON allows and orjson refuses
        return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def dumps_body(value: Any) -> bytes:
    """A request or reply body as JSON bytes (orjson, or the standard library for what orjson refuses)."""
    try:
        return orjson.dumps(value)
    except TypeError:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def _strip_marks(value: Any) -> Any:
    """``value`` without ``cache_control`` anywhere (a new object only where something was removed)."""
    if isinstance(value, dict):
        if "cache_control" in value or any(isinstance(v, dict | list) for v in value.values()):
            return {k: _strip_marks(v) for k, v in value.items() if k != "cache_control"}
        return value
    if isinstance(value, list):
        return [_strip_marks(v) for v in value]
    return value


def _lone_text(content: Any) -> Any:
    """A list of one text block with nothing but its text, as the string; anything else unchanged."""
    if isinstance(content, list) and len(content) == 1:
        block = content[0]
        if isinstance(block, dict) and block.get("type") in TEXT_TYPES and isinstance(block.get("text"), str):
            rest = {k for k, v in block.items() if v not in (None, []) and k not in ("type", "text")}
            if not rest:
                return block["text"]
    return content


def _opaque(value: Any) -> str:
    """The text standing in for something the manager does not model: its JSON, so its size is counted."""
    return _dumps(value)


def _parts(content: Any, known: frozenset[str], text_type: str) -> Any:
    if not isinstance(content, list):
        return content
    out = []
    for part in content:
        if isinstance(part, dict) and part.get("type") not in known:
            out.append({"type": text_type, "text": _opaque(part)})
        else:
            out.append(part)
    return out


def plain_chat(item: Any) -> Any:
    if not isinstance(item, dict):
        return item
    role = item.get("role")
    if role not in CHAT_ROLES:
        return {"role": "user", "content": _opaque(item)}
    plain = {k: v for k, v in _strip_marks(item).items() if k in CHAT_KEYS and v is not None}
    if "content" in plain:
        plain["content"] = _lone_text(_parts(plain["content"], CHAT_PARTS, "text"))
    return plain


def plain_anthropic(item: Any) -> Any:
    if not isinstance(item, dict):
        return item
    role = item.get("role")
    if role not in ("user", "assistant"):
        return {"role": "user", "content": _opaque(item)}
    content = _strip_marks(item.get("content"))
    if isinstance(content, list):
        blocks = []
        for block in content:
            if isinstance(block, dict) and block.get("type") not in ANTHROPIC_BLOCKS:
                blocks.append({"type": "text", "text": _opaque(block)})
            elif isinstance(block, dict) and block.get("type") == "tool_result":
                inner = block.get("content")
                blocks.append({**block, "content": _parts(inner, ANTHROPIC_BLOCKS, "text")})
            else:
                blocks.append(block)
        content = _lone_text(blocks)
    return {"role": role, "content": content}


def plain_responses(item: Any) -> Any:
    if not isinstance(item, dict):
        return item
    kind = item.get("type", "message" if "role" in item else None)
    keys = RESPONSES_ITEMS.get(kind) if isinstance(kind, str) else None
    if keys is None:
        role = "assistant" if isinstance(kind, str) and kind.endswith("_call") else "user"
        return {"type": "message", "role": role, "content": _opaque(item)}
    plain = {k: v for k, v in _strip_marks(item).items() if k in keys and v is not None}
    plain["type"] = kind
    if kind == "message":
        if plain.get("role") not in ("user", "assistant", "system", "developer"):
            return {"type": "message", "role": "user", "content": _opaque(item)}
        part = "output_text" if plain.get("role") == "assistant" else "input_text"
        plain["content"] = _lone_text(_parts(plain.get("content"), RESPONSES_PARTS, part))
    return plain


def canonical(plain: Any) -> Any:
    """The comparison form of a plain or written item: no empty values, lone text blocks as strings."""
    if isinstance(plain, dict):
        # what a writer may add or leave out of an item it did not change: empty annotations, a message's status
        skip = {"cache_control", "status"} if plain.get("type") == "message" else {"cache_control"}
        out = {k: canonical(v) for k, v in plain.items() if v is not None and v != [] and k not in skip}
        if "content" in out:
            out["content"] = _lone_text(out["content"])
        return out
    if isinstance(plain, list):
        return [canonical(v) for v in plain]
    return plain


def item_key(plain: Any) -> str:
    return _dumps(canonical(plain))


PLAIN: dict[str, Callable[[Any], Any]] = {
    "openai_chat": plain_chat,
    "openai_responses": plain_responses,
    "anthropic": plain_anthropic,
}


@dataclass
class ItemCache:
    """A thread's items as last received: originals, plain twins, keys, chained digests (reused on the next call).

    ``digests[i]`` is the digest of the keys of items ``[0, i)``; the plain twins of an unchanged prefix are the very
    objects of the last call, so the window's own reading skips them too.
    """

    items: list[Any] = field(default_factory=list)
    plains: list[Any] = field(default_factory=list)
    keys: list[str] = field(default_factory=list)
    digests: list[str] = field(default_factory=lambda: [""])


def common_prefix(items: Sequence[Any], known: Sequence[Any]) -> int:
    """How many leading items equal ``known``'s (value equality, a C-level compare per item)."""
    n = 0
    for mine, theirs in zip(items, known, strict=False):
        if mine is not theirs and mine != theirs:
            break
        n += 1
    return n


def project(fmt: str, items: Sequence[Any], cache: ItemCache | None) -> ItemCache:
    """The `ItemCache` of ``items``, computing only what differs from ``cache``."""
    plain_of = PLAIN[fmt]
    same = common_prefix(items, cache.items) if cache is not None else 0
    if cache is not None and same == len(items) == len(cache.items):
        return cache
    plains = list(cache.plains[:same]) if cache is not None else []
    keys = list(cache.keys[:same]) if cache is not None else []
    digests = list(cache.digests[: same + 1]) if cache is not None else [""]
    for index in range(same, len(items)):
        plain = plain_of(items[index])
        if cache is not None and index < len(cache.plains) and cache.plains[index] == plain:
            plain = cache.plains[index]  # a moved cache mark: the same plain object, so the window's read holds
        key = item_key(plain)
        plains.append(plain)
        keys.append(key)
        digests.append(chain(digests[-1], key))
    return ItemCache(items=list(items), plains=plains, keys=keys, digests=digests)


def chain(previous: str, key: str) -> str:
    return hashlib.blake2b(f"{previous}\x1e{key}".encode(), digest_size=16).hexdigest()


def restore_originals(written: Sequence[Any], cache: ItemCache, *, offset: int = 0) -> tuple[list[Any], bool]:
    """The list to send: each written item that equals a client item (by key, in order) as the client's original.

    ``offset`` client items at the head are not part of ``written`` (kept apart by the caller). Returns
    ``(items, unchanged)``; ``unchanged`` is True when the result is exactly the client's items from ``offset``.
    """
    where: dict[str, list[int]] = {}
    for index in range(offset, len(cache.keys)):
        where.setdefault(cache.keys[index], []).append(index)
    out: list[Any] = []
    last = offset - 1
    matched_all = len(written) == len(cache.items) - offset
    for item in written:
        found = None
        for index in where.get(item_key(item), ()):
            if index > last:
                found = index
                break
        if found is None:
            out.append(item)
            matched_all = False
            continue
        if found != last + 1:
            matched_all = False
        out.append(cache.items[found])
        last = found
    return out, matched_all


def system_value(original: Any, managed: str | None, original_text: str | None) -> Any:
    """The system value to send: the client's own when the manager left its text as is; with a summary added,
    the client's blocks (marks included) plus one text block with what was added; else the manager's text."""
    if (managed or None) == (original_text or None):
        return original
    if managed and original_text and original_text in managed:
        added = managed.replace(original_text, "", 1).strip()
        if isinstance(original, list):
            return [*original, {"type": "text", "text": added}]
        return managed
    return managed


def with_fields(body: Mapping[str, Any], **changes: Any) -> dict[str, Any]:
    """``body`` with some top-level fields replaced (None removes), every other field and its order kept."""
    out = dict(body)
    for key, value in changes.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = value
    return out
