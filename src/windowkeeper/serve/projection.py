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

from ..blocks import UNKNOWN_PREFIX
from ..llm.formats._common import unknown_block
from ..llm.formats._source import cut_from, own_parts_in, with_own_item_keys
from ..llm.formats.openai_chat import CHAT
from ..llm.formats.openai_responses import ITEM_FIELDS, RESPONSES

CHAT_KEYS = frozenset({"role", "content", "name", "tool_calls", "tool_call_id", "refusal", "function_call"})
CHAT_ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})
"""Roles the Chat reader models (``function``: the answer to a legacy ``function_call``)."""
CHAT_PARTS = frozenset({"text", "image_url", "input_audio", "file", "refusal"})
ANTHROPIC_BLOCKS = frozenset({"text", "image", "document", "thinking", "redacted_thinking", "tool_use", "tool_result"})
RESPONSES_PARTS = frozenset({"input_text", "output_text", "text", "input_image", "input_file", "refusal"})
TEXT_TYPES = frozenset({"text", "input_text", "output_text"})
TOOL_TEXT = CHAT.output_parts
"""The part types the Chat reader models in a tool message (text only: any other it reads as a text of its JSON)."""
RESPONSES_OUTPUT_PARTS = RESPONSES.output_parts


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
    """The text standing in for something the manager does not model: its JSON, so its size is counted, written as
    the format readers write an unknown kind (`windowkeeper.blocks.UNKNOWN_PREFIX`), so a summary reads it the
    same way (`windowkeeper.blocks.readable_text`)."""
    kind = value.get("type") if isinstance(value, dict) else None
    if not isinstance(kind, str):
        role = value.get("role") if isinstance(value, dict) else None
        kind = f"role {role}" if isinstance(role, str) else type(value).__name__
    return f"{UNKNOWN_PREFIX}{kind}] {_dumps(value)}"


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


def _plain_anthropic_block(block: Any) -> Any:
    """One Anthropic content block (its marks already stripped) as the manager sees it."""
    if isinstance(block, dict) and block.get("type") not in ANTHROPIC_BLOCKS:
        return {"type": "text", "text": _opaque(block)}
    if isinstance(block, dict) and block.get("type") == "tool_result":
        return {**block, "content": _parts(block.get("content"), ANTHROPIC_BLOCKS, "text")}
    return block


def plain_anthropic(item: Any) -> Any:
    if not isinstance(item, dict):
        return item
    role = item.get("role")
    if role not in ("user", "assistant"):
        return {"role": "user", "content": _opaque(item)}
    content = _strip_marks(item.get("content"))
    if isinstance(content, list):
        content = _lone_text([_plain_anthropic_block(block) for block in content])
    return {"role": role, "content": content}


def plain_responses(item: Any) -> Any:
    if not isinstance(item, dict):
        return item
    kind = item.get("type", "message" if "role" in item else None)
    # the item types and keys are the reader's own (`ITEM_FIELDS`): a type the window models but this projection
    # did not would reach it as an opaque text (a computer-use step: its screenshot as base64 text, no call)
    if not isinstance(kind, str) or kind not in ITEM_FIELDS:
        # an item type not modelled joins the assistant turn, where the Responses reader puts it too: a hosted
        # tool's item (``web_search_call``, ``mcp_call``...) is not a user turn to answer or to search recall for
        role = "user" if kind is None else "assistant"
        return {"type": "message", "role": role, "content": _opaque(item)}
    keys = ITEM_FIELDS[kind]
    plain = {k: v for k, v in _strip_marks(item).items() if (keys is None or k in keys) and v is not None}
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
    """The canonical key of an item: its sorted JSON after `canonical` (which a flat item of strings, the
    commonest shape, would come out of unchanged, so it is not walked)."""
    if (
        type(plain) is dict
        and "cache_control" not in plain
        and "status" not in plain
        and all(type(v) is str for v in plain.values())
    ):
        return _dumps(plain)
    return _dumps(canonical(plain))


GEMINI_PARTS = frozenset(
    {"text", "functionCall", "functionResponse", "inlineData", "fileData"}
    | {"function_call", "function_response", "inline_data", "file_data"}
)
"""The Gemini part kinds the reader models, by their data key in either spelling the API reads."""
GEMINI_PART_KEYS = GEMINI_PARTS | {"thought", "thoughtSignature", "thought_signature"}


def plain_gemini(item: Any) -> Any:
    """A Gemini content: its role (``user`` when it has none, as the API reads it) and parts; a part of a kind the
    reader does not model (``executableCode``...) as a text part, a modelled one without the keys it does not
    model (``videoMetadata``...), which its client part gets back where it is written anew (`_restore_parts`)."""
    if not isinstance(item, dict):
        return item
    role = item.get("role", "user")
    parts = item.get("parts")
    if role not in ("user", "model", "function") or not isinstance(parts, list):
        return {"role": "user", "parts": [{"text": _opaque(item)}]}
    out = []
    for part in parts:
        if isinstance(part, dict) and part.keys() & GEMINI_PARTS:
            out.append(
                {k: v for k, v in part.items() if k in GEMINI_PART_KEYS} if part.keys() - GEMINI_PART_KEYS else part
            )
        else:
            out.append({"text": _opaque(part)})
    return {"role": role, "parts": out}


PLAIN: dict[str, Callable[[Any], Any]] = {
    "openai_chat": plain_chat,
    "openai_responses": plain_responses,
    "anthropic": plain_anthropic,
    "gemini": plain_gemini,
}


DIGEST = 16
"""Bytes of each item hash and prefix digest (blake2b)."""
BOUNDARY_ITEMS = 4
"""Newest items of the last list always compared with a new request; before them, log-spaced ones."""


def _hash(key: str) -> bytes:
    return hashlib.blake2b(key.encode(), digest_size=DIGEST).digest()


def chain(previous: str, key: str) -> str:
    """The digest of a prefix one item longer (``previous`` is the shorter prefix's digest, hex)."""
    return hashlib.blake2b(f"{previous}\x1e{key}".encode(), digest_size=DIGEST).hexdigest()


def probe_points(length: int) -> list[int]:
    """Where a list of ``length`` items is compared with the next request: its last `BOUNDARY_ITEMS` items, then
    log-spaced ones back to the first (O(log n) of them; see `project`)."""
    points: list[int] = []
    i, step = length - 1, 1
    while i >= 0:
        points.append(i)
        if length - 1 - i >= BOUNDARY_ITEMS:
            step *= 2
        i -= step
    if length and points[-1] != 0:
        points.append(0)
    return points


@dataclass
class ItemCache:
    """What a thread keeps of the list it last received, so the next request costs what is new, not the history.

    ``plains`` are the plain twins (the objects the window read last time: an unchanged prefix hands it the same
    objects, so its own reading skips them too); ``hashes`` the item hashes (`DIGEST` bytes each, of their keys) and
    ``digests`` the chained prefix digests (``digests[i]`` covers items ``[0, i)``), both packed in one buffer
    rather than an object per item. ``probes`` are the client's own items at `probe_points`, the only originals
    kept: the client's list itself is not (a thread costs a few dozen bytes per item, not a copy of the list).
    """

    plains: list[Any] = field(default_factory=list)
    hashes: bytearray = field(default_factory=bytearray)
    digests: bytearray = field(default_factory=lambda: bytearray(DIGEST))
    probes: dict[int, Any] = field(default_factory=dict)
    tail: tuple[int, int, Any] | None = None
    """The running hash of `tail_digest` (its ``lead``, the items it has read, the hash object), carried by
    `project` to the next list so that each call hashes only its new items."""

    def __len__(self) -> int:
        return len(self.plains)

    def tail_digest(self, lead: int, length: int) -> str:
        """The hex digest of items ``[lead, length)``: the history after a Chat list's leading system items (all
        of it in the other formats, whose system text is not an item).

        The recognition index keeps it per thread (`Recognizer.remember`), so that a list whose system text
        changed is found to continue its thread from the store alone, in a process that never saw the thread's
        list (a restarted one, or another behind the same load balancer). Costs the items since the last call's.
        """
        memo = self.tail
        if memo is not None and memo[0] == lead and memo[1] <= length:
            hasher, start = memo[2].copy(), memo[1]
        else:
            hasher, start = hashlib.blake2b(digest_size=DIGEST), lead
        hasher.update(self.hashes[start * DIGEST : length * DIGEST])
        if memo is None or memo[0] != lead or memo[1] <= length:  # a shorter one leaves the longer memo
            self.tail = (lead, length, hasher.copy())
        digest: str = hasher.hexdigest()
        return digest

    def digest(self, length: int) -> str:
        """The hex digest of the first ``length`` items ("" for none)."""
        if length == 0:
            return ""
        return self.digests[length * DIGEST : (length + 1) * DIGEST].hex()

    def item_hash(self, index: int) -> bytes:
        return bytes(self.hashes[index * DIGEST : (index + 1) * DIGEST])


_MISSING = object()


def _same_at(item: Any, index: int, cache: ItemCache, plain_of: Callable[[Any], Any]) -> bool:
    """Whether the client's ``item`` is still what ``cache`` holds at ``index``: the kept original, or an item
    with the same key (a moved cache mark, a string for a one-text-block list)."""
    probe = cache.probes.get(index, _MISSING)
    if probe is item or (probe is not _MISSING and probe == item):
        return True
    return _hash(item_key(plain_of(item))) == cache.item_hash(index)


def _kept_prefix(items: Sequence[Any], cache: ItemCache, plain_of: Callable[[Any], Any]) -> int:
    """How many leading items of ``items`` continue ``cache``, judged at the boundary (`probe_points`).

    When every probe holds, the whole cached list is taken as kept: an item replaced deep in the history between
    two probes goes unnoticed, as in `Window` (rewriting history is starting a thread over). When one fails, the
    items between the last probe that held and the first that failed are compared one by one.
    """
    known = len(cache)
    if known == 0:
        return 0
    points = sorted(p for p in probe_points(known) if p < len(items))
    if 0 < len(items) < known and (not points or points[-1] != len(items) - 1):
        points.append(len(items) - 1)  # a shorter list: its own last item is the boundary
    held = -1
    for point in points:
        if not _same_at(items[point], point, cache, plain_of):
            for index in range(held + 1, point):
                if not _same_at(items[index], index, cache, plain_of):
                    return index
            return point
        held = point
    return min(known, len(items))


def project(fmt: str, items: Sequence[Any], cache: ItemCache | None) -> ItemCache:
    """The `ItemCache` of ``items``, computing only what is new since ``cache``."""
    plain_of = PLAIN[fmt]
    same = _kept_prefix(items, cache, plain_of) if cache is not None else 0
    if cache is not None:
        plains = cache.plains[:same]
        hashes = cache.hashes[: same * DIGEST]
        digests = cache.digests[: (same + 1) * DIGEST]
    else:
        plains, hashes, digests = [], bytearray(), bytearray(DIGEST)
    previous = digests[-DIGEST:].hex() if same else ""
    for index in range(same, len(items)):
        plain = plain_of(items[index])
        if cache is not None and index < len(cache.plains) and cache.plains[index] == plain:
            plain = cache.plains[index]  # a moved cache mark: the same plain object, so the window's read holds
        key = item_key(plain)
        plains.append(plain)
        hashes += _hash(key)
        previous = chain(previous, key)
        digests += bytes.fromhex(previous)
    probes = {index: items[index] for index in probe_points(len(items))}
    tail = cache.tail if cache is not None and cache.tail is not None and cache.tail[1] <= same else None
    return ItemCache(plains=plains, hashes=hashes, digests=digests, probes=probes, tail=tail)


def restore_originals(
    written: Sequence[Any], items: Sequence[Any], cache: ItemCache, *, offset: int = 0
) -> tuple[list[Any], bool]:
    """The list to send: each written item that is a client item (in order) as the client's original ``items[i]``.

    An item the window passed through is the very plain twin it was given (`ItemCache.plains`), found by identity;
    any other written item (a pointer, a summary, or an item read back from the store after a restart) is compared
    by its key's hash. ``offset`` client items at the head are not part of ``written`` (kept apart by the caller).
    Returns ``(items, unchanged)``; ``unchanged`` is True when the result is exactly the client's items from
    ``offset``. A written item that is no client item gets the client's own parts and keys back where it holds
    them unchanged (`_restore_parts`).
    """
    plains = cache.plains
    by_id = {id(p): index for index, p in enumerate(plains) if index >= offset}
    where: dict[bytes, list[int]] | None = None
    out: list[Any] = []
    at: list[int | None] = []  # the client item each written item is, by position in ``out``
    last = offset - 1
    matched_all = len(written) == len(items) - offset
    for item in written:
        found = by_id.get(id(item))
        if found is not None and (found <= last or plains[found] is not item):
            found = None
        if found is None:
            if where is None:
                where = {}
                for index in range(offset, len(plains)):
                    where.setdefault(cache.item_hash(index), []).append(index)
            found = next((i for i in where.get(_hash(item_key(item)), ()) if i > last), None)
        at.append(found)
        if found is None:
            out.append(item)
            matched_all = False
            continue
        if found != last + 1:
            matched_all = False
        out.append(items[found])
        last = found
    if not matched_all:
        _restore_parts(out, at, items, cache, offset)
    return out, matched_all


def _restore_parts(out: list[Any], at: list[int | None], items: Sequence[Any], cache: ItemCache, offset: int) -> None:
    """Put the client's own parts and keys back into the items of ``out`` that are no client item (``at`` is None).

    The manager changes an item by its parts: a tool result cleared from an Anthropic turn, a recall note joined
    to the question, the tool result of a turn whose call was cut left out. The item is then written from the
    manager's plain twin, so its other parts would go upstream without their ``cache_control`` and an unknown part
    (Anthropic's ``search_result``, a Chat or Responses part type the reader does not model) as the text standing
    in for it, and the item without the keys the twin leaves out (a Chat message's vendor keys, a Responses
    message's ``id`` and ``status``). Each part whose twin is one of the client's parts is that part again, byte
    for byte, and an item made of the parts of one client item of its role gets that item's other keys back.
    The same code serves every format: all three hold an item's parts in ``content`` (a Responses tool output in
    ``output``). A tool output cut to fit (`_cut_output_of`) keeps every key of the client's besides its text.

    A run of written items that are no client item sits between two that are (or the ends), and its parts come
    from the client items between those two. Those are searched newest first, by a cheap handle of each part
    (`_handle`: no serializing), only until every handle the run holds was seen: a run between two kept turns
    costs the one turn it replaces, not the history cut before it. Each client part is used once, in the
    client's order, so of two parts with equal twins (one marked) each keeps its own mark.
    """
    n = len(out)
    p = 0
    while p < n:
        if at[p] is not None:
            p += 1
            continue
        q = p
        while q < n and at[q] is None:
            q += 1
        before = at[p - 1] if p else None
        after = at[q] if q < n else None
        lo = before + 1 if before is not None else offset
        hi = after if after is not None else len(items)
        wanted = {_handle(block) for k in range(p, q) for block in _blocks_of(out[k])}
        missing = set(wanted)
        sources: list[tuple[int, list[tuple[Any, Any]]]] = []
        for index in range(hi - 1, lo - 1, -1):
            pairs = [pair for pair in _twin_pairs(items[index], cache.plains[index]) if _handle(pair[0]) in wanted]
            if pairs:
                sources.append((index, pairs))
                missing.difference_update(_handle(twin) for twin, _ in pairs)
                if not missing:
                    break
        pool: dict[str, list[tuple[int, Any]]] = {}
        for index, pairs in reversed(sources):
            for twin, block in pairs:
                pool.setdefault(_part_key(twin), []).append((index, block))
        for k in range(p, q):
            owned = False
            if pool:
                out[k], owned = _with_own_parts(out[k], pool, items, cache.plains)
            cut = _cut_output_of(out[k], items, cache.plains, lo, hi)
            if cut is not None:
                out[k] = _with_own_output(out[k], items[cut], cache.plains[cut])
            elif not owned:
                turn = _turn_of_results(out[k], items, cache.plains, lo, hi)
                if turn is not None:
                    out[k] = _with_own_keys(out[k], items[turn], cache.plains[turn])
            out[k] = _with_own_results(out[k], items, lo, hi)
        p = q


def _output_text(item: Any) -> str | None:
    """The (first) text of a tool output: a Chat ``tool`` message's content, a Responses ``*_output``'s output."""
    if not isinstance(item, dict):
        return None
    value = item.get("content") if item.get("role") == "tool" else item.get("output")
    if isinstance(value, list):
        value = next((v.get("text") for v in value if isinstance(v, dict) and v.get("type") in TEXT_TYPES), None)
    return value if isinstance(value, str) else None


def _cut_output_of(item: Any, items: Sequence[Any], plains: Sequence[Any], lo: int, hi: int) -> int | None:
    """The client item (in ``[lo, hi)``) whose tool output ``item`` is as the manager cut it to fit, if it is one.

    A result cut to fit keeps its head (and tail, around a marker), so it begins as the client's text does; a
    pointer to a cleared result, which replaces the item, begins with words of its own and is not one."""
    text = _output_text(item)
    call = item.get("tool_call_id", item.get("call_id")) if isinstance(item, dict) else None
    if text is None or not isinstance(call, str):
        return None
    for index in range(hi - 1, lo - 1, -1):
        twin = plains[index]
        if not isinstance(twin, dict) or twin.get("tool_call_id", twin.get("call_id")) != call:
            continue
        if twin.get("role") != item.get("role") or twin.get("type") != item.get("type"):
            return None
        return index if cut_from(text, _output_text(twin)) else None
    return None


def _handle(block: Any) -> tuple[Any, ...]:
    """What tells parts apart before their keys are compared: the type and the first string that names it (a
    text of any of the formats' text types being one kind, as in `_part_key`)."""
    if not isinstance(block, dict):
        return (None,)
    kind = block.get("type")
    if kind in TEXT_TYPES:
        kind = "text"
    for key in ("text", "id", "tool_use_id", "signature", "data"):
        value = block.get(key)
        if isinstance(value, str):
            return (kind, key, value)
    return (kind,)


def _part_key(block: Any) -> str:
    """The comparison form of a part: a bare text is one whatever the text type a writer gave it (a Responses
    message held as a string is written back as ``input_text`` or ``output_text`` parts), and a Responses image
    the same whatever its ``detail``: one the client sent without it is written back with ``"auto"``, which the
    SDK's type requires."""
    value = canonical(block)
    if isinstance(value, dict) and value.get("type") in TEXT_TYPES and value.keys() <= {"type", "text"}:
        value = {"type": "text", "text": value.get("text")}
    elif isinstance(value, dict) and value.get("type") == "input_image":
        value = {k: v for k, v in value.items() if k != "detail"}
    return _dumps(value)


def _parts_key(item: Any) -> str:
    """Where an item holds its parts: ``content``, a Responses tool output's ``output``, a Gemini content's
    ``parts``."""
    if isinstance(item, dict) and "content" not in item:
        return "parts" if "parts" in item else "output" if "output" in item else "content"
    return "content"


def _blocks_of(item: Any) -> list[Any]:
    content = item.get(_parts_key(item)) if isinstance(item, dict) else None
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return content if isinstance(content, list) else []


def _twin_pairs(item: Any, twin: Any) -> list[tuple[Any, Any]]:
    """``(plain twin, client part)`` for each part of a client item; a string content is one text whose client
    part is None (there is no part of the client's to put back, only the item it came from)."""
    own = item.get(_parts_key(item)) if isinstance(item, dict) else None
    plain = twin.get(_parts_key(twin)) if isinstance(twin, dict) else None
    if isinstance(own, str):
        return [({"type": "text", "text": plain}, None)] if isinstance(plain, str) else []
    if not isinstance(own, list):
        return []
    if isinstance(plain, str) and len(own) == 1:
        plain = [{"type": "text", "text": plain}]  # a lone text block, which the twin holds as its string
    if not isinstance(plain, list) or len(plain) != len(own):
        return []
    return list(zip(plain, own, strict=True))


def _with_own_parts(
    item: Any, pool: dict[str, list[tuple[int, Any]]], items: Sequence[Any], plains: Sequence[Any]
) -> tuple[Any, bool]:
    """``item`` with each part that is a plain twin in ``pool`` as the client's part (taken from the pool), and
    with the keys of the client item most of those parts came from (`_with_own_keys`); and whether any part was
    the client's."""
    out = []
    changed = False
    owners: dict[int, int] = {}
    for block in _blocks_of(item):
        own = pool.get(_part_key(block))
        if own:
            index, original = own.pop(0)
            owners[index] = owners.get(index, 0) + 1
            if original is not None:
                changed = changed or original != block
                block = original
        out.append(block)
    result = {**item, _parts_key(item): out} if changed else item
    if owners:
        owner = max(owners, key=lambda index: owners[index])
        result = _with_own_keys(result, items[owner], plains[owner])
    return result, bool(owners)


def _results_of(item: Any) -> set[str]:
    """The call ids of the tool results an Anthropic user turn holds."""
    content = item.get("content") if isinstance(item, dict) and item.get("role") == "user" else None
    if not isinstance(content, list):
        return set()
    return {
        b["tool_use_id"]
        for b in content
        if isinstance(b, dict) and b.get("type") == "tool_result" and isinstance(b.get("tool_use_id"), str)
    }


def _turn_of_results(item: Any, items: Sequence[Any], plains: Sequence[Any], lo: int, hi: int) -> int | None:
    """The client's user turn (in ``[lo, hi)``) that held the tool results of ``item``, a turn written anew with
    none of its parts the client's (each result cleared): the turn is still the client's, its content changed,
    so the keys windowkeeper does not read (a proxy's ``x_meta``) go with it. Anthropic's results sit in the
    user turn; a Chat or Responses pointer is an item of windowkeeper's own."""
    calls = _results_of(item)
    if not calls:
        return None
    for index in range(hi - 1, lo - 1, -1):
        if calls & _results_of(plains[index]):
            return index
    return None


def _result_text(block: Mapping[str, Any]) -> str | None:
    """The (first) text of an Anthropic ``tool_result`` block."""
    content = block.get("content")
    if isinstance(content, list):
        content = next((p.get("text") for p in content if isinstance(p, dict) and p.get("type") == "text"), None)
    return content if isinstance(content, str) else None


def _client_result(call: Any, items: Sequence[Any], lo: int, hi: int) -> Mapping[str, Any] | None:
    """The client's ``tool_result`` block for ``call`` in the user turns ``items[lo:hi]``, newest first."""
    for index in range(hi - 1, lo - 1, -1):
        content = items[index].get("content") if isinstance(items[index], dict) else None
        if items[index].get("role") != "user" or not isinstance(content, list):
            continue
        for block in content:
            if isinstance(block, dict) and block.get("type") == "tool_result" and block.get("tool_use_id") == call:
                return block
    return None


def _with_own_results(item: Any, items: Sequence[Any], lo: int, hi: int) -> Any:
    """An Anthropic user turn with each ``tool_result`` the manager cut to fit as the client's block where the cut
    did not change it: every key of the block (its ``cache_control``), its images and documents as the client's,
    and each part of it the readers do not model (a ``search_result``) in its own shape, not as the text the
    window read it as (`own_parts_in`). A pointer to a cleared result is windowkeeper's own block."""
    content = item.get("content") if isinstance(item, dict) and item.get("role") == "user" else None
    if not isinstance(content, list) or not any(_is_result(b) for b in content):
        return item
    out = list(content)
    for j, block in enumerate(content):
        if not _is_result(block):
            continue
        client = _client_result(block.get("tool_use_id"), items, lo, hi)
        if client is None or client == block or not cut_from(_result_text(block), _result_text(client)):
            continue
        kept = with_own_item_keys(block, client)
        call = block.get("tool_use_id")
        kept["content"] = own_parts_in(
            kept.get("content"), client.get("content"), RESULT_PARTS, _result_stand_in, what=f"the result of {call!r}"
        )
        out[j] = kept
    return {**item, "content": out} if out != content else item


def _is_result(block: Any) -> bool:
    return isinstance(block, dict) and block.get("type") == "tool_result"


RESULT_PARTS = frozenset({"text", "image", "document"})
"""The parts of an Anthropic ``tool_result`` the reader models."""


def _stand_in(twin_parts: frozenset[str]) -> Callable[[Mapping[str, Any]], str]:
    """The text the window read a part of a tool output as: the plain twin's `_opaque` text for a part of a type the
    twin does not model (not in ``twin_parts``), the reader's own (`windowkeeper.llm.formats._common.unknown_block`)
    for any other."""

    def text(part: Mapping[str, Any]) -> str:
        if part.get("type") not in twin_parts:
            return _opaque(part)
        return unknown_block(str(part.get("type")), part).text

    return text


_result_stand_in = _stand_in(ANTHROPIC_BLOCKS)
"""A ``tool_result`` part's stand-in text (Anthropic)."""
_output_stand_in = _stand_in(CHAT_PARTS)
"""A Chat or Responses tool output part's stand-in text."""


def _with_own_output(item: Any, client: Any, twin: Any) -> Any:
    """A tool output the manager cut to fit (``item``) with every key of the client's (`_with_own_keys`) and each
    part of the client's the readers do not model in its own shape, not as the text the window read it as
    (`windowkeeper.llm.formats._source.own_parts_in`)."""
    item = _with_own_keys(item, client, twin, every=True)
    if not isinstance(item, dict) or not isinstance(client, dict):
        return item
    key = _parts_key(client)
    known = TOOL_TEXT if client.get("role") == "tool" else RESPONSES_OUTPUT_PARTS
    call = client.get("tool_call_id", client.get("call_id"))
    own = own_parts_in(item.get(key), client.get(key), known, _output_stand_in, what=f"the output of call {call!r}")
    return item if own is item.get(key) else {**item, key: own}


def _with_own_keys(item: Any, client: Any, twin: Any, *, every: bool = False) -> Any:
    """``item`` (written from the plain twin of the client's item ``client``) with the keys of ``client`` its twin
    left out (keys the reader does not model, a Responses message's ``id`` and ``status``, a key set to null), in
    the client's order; a key the twin held and the manager took out stays out. With ``every`` (a tool output cut
    to fit, whose text is all the manager changed), every key of the client's the writer left out is back: a Chat
    tool message's ``name`` too, which the writer of a changed result does not write."""
    if not isinstance(item, dict) or not isinstance(client, dict) or not isinstance(twin, dict):
        return item
    if client.get("role") != item.get("role") or client.get("type", item.get("type")) != item.get("type"):
        return item
    if all(key in item or (key in twin and not every) for key in client):
        return item
    out = {}
    for key, value in client.items():
        if key in item:
            out[key] = item[key]
        elif every or key not in twin:
            out[key] = value
    for key, value in item.items():
        out.setdefault(key, value)
    return out


def system_value(original: Any, managed: Any, original_text: str | None) -> Any:
    """The system value to send: the client's own when the manager left its text as is; with a summary added,
    the client's blocks (marks included) plus one text block with what was added; else the manager's text.

    ``managed`` is the window's ``fit.system``: its text, or the client's blocks as the format passed them
    through (the summary a block after them), which are the client's own object again when nothing was added, so
    an unchanged request still goes upstream as the client's bytes."""
    if managed is not None and not isinstance(managed, str):
        return original if managed == original else managed
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
