"""Where a message came from: the caller's own provider item(s), kept on `Message.raw` for lossless pass-through.

The converters map a provider's items onto `Message`s, which cannot hold everything a provider sends (a Responses
item's ``id`` and ``status``, Anthropic ``cache_control`` and ``citations``, Chat ``image_url.detail``, keys and
content kinds nobody modelled). So a format's reader, when asked to keep sources, records on each message the
item(s) it was read from and the message's fingerprint at that moment; the writer emits those items verbatim
while the message is unchanged (same fingerprint) and writes a new shape only for what windowkeeper made or
changed. One provider item may give several messages (an Anthropic user turn ``[tool_result, text]``) and several
items one message (a Responses assistant turn): every message of such a group carries the group id, its part
number and the blocks it holds, so a writer can reassemble the item when all parts are back, unchanged and in
order, and otherwise still pass through the unchanged parts' own blocks.

The record lives under ``raw["source"]`` (other keys of ``raw`` are left alone) and is stored with the message, so
pass-through survives a store round trip. The items are kept by reference (the caller's dicts, not copies): a
list's items must not be edited in place, as everywhere in windowkeeper.
"""

from __future__ import annotations

import bisect
import collections
import itertools
import logging
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ..._cache import shared_prefix
from ...boundary import clean_json
from ...messages import Message, edit_epoch
from ._common import plain

logger = logging.getLogger(__name__)

_SEQUENCES = (list, tuple)
"""A class tuple built once: ``list | tuple`` inline builds a union object per value walked."""

SOURCE_KEY = "source"
"""The key of `Message.raw` under which a reader records the message's provider source."""


def source_record(message: Message) -> Mapping[str, Any] | None:
    """The provenance record of ``message`` (whatever its state), or None."""
    raw = message.raw
    if not raw:
        return None
    record = raw.get(SOURCE_KEY)
    return record if isinstance(record, Mapping) else None


def split_parts(
    parts: Any, messages: Sequence[Message], is_result: Callable[[Any], bool]
) -> list[list[Any] | None] | None:
    """Which original parts each message of a split user turn holds: one result part per tool message (in order),
    then every other part for the user message that follows them; None when the turn was not split."""
    if len(messages) < 2:
        return None
    items = [plain(p) for p in parts] if isinstance(parts, list) else []
    blocks: list[list[Any] | None] = [[p] for p in items if is_result(p)]
    if len(messages) > len(blocks):
        blocks.append([p for p in items if not is_result(p)])
    return blocks


def keep_source(
    fmt: str,
    messages: Sequence[Message],
    items: Sequence[Any],
    blocks: Sequence[Sequence[Any] | None] | None = None,
    *,
    clean: bool = False,
) -> None:
    """Record on each of ``messages`` (all read from ``items``, in order) where it came from.

    ``blocks[k]``, for a group split over several messages, are the original content blocks (or parts) message
    ``k`` holds, so a writer can pass them through even when a sibling was changed. ``clean``: every item is
    known to be a dict of plain ASCII JSON (`CleanSource`), which `clean_json` returns unchanged.
    """
    n = len(messages)
    if not n:
        return
    kept = list(items) if clean else [clean_json(plain(item)) for item in items]
    group = str(messages[0].message_id)
    for k, message in enumerate(messages):
        record: dict[str, Any] = {
            "format": fmt,
            "fingerprint": message.fingerprint(),
            "group": group,
            "part": k,
            "parts": n,
        }
        if k == 0:
            record["items"] = kept
        if blocks is not None and blocks[k] is not None:
            record["blocks"] = [clean_json(plain(b)) for b in blocks[k] or ()]
        raw = message.raw
        # set in the instance dict: ``raw`` holds JSON already cleaned, and validating it again on assignment
        # would copy every item a second time
        message.__dict__["raw"] = {**raw, SOURCE_KEY: record} if raw else {SOURCE_KEY: record}


def unchanged(message: Message, fmt: str) -> Mapping[str, Any] | None:
    """The source record of ``message`` when it was read from ``fmt`` and is unchanged since, else None."""
    record = source_record(message)
    if record is None or record.get("format") != fmt:
        return None
    return record if record.get("fingerprint") == message.fingerprint() else None


def whole_group(messages: Sequence[Message], start: int, fmt: str) -> tuple[list[Any], int] | None:
    """``(items, end)`` when ``messages[start:end]`` is one complete, unchanged group read from ``fmt``."""
    first = unchanged(messages[start], fmt)
    if first is None or first.get("part") != 0 or not isinstance(first.get("items"), list):
        return None
    parts = first.get("parts")
    group = first.get("group")
    if not isinstance(parts, int) or parts < 1 or start + parts > len(messages):
        return None
    for k in range(1, parts):
        record = unchanged(messages[start + k], fmt)
        if record is None or record.get("group") != group or record.get("part") != k:
            return None
    return list(first["items"]), start + parts


def original_items(message: Message, fmt: str) -> list[Any]:
    """The items ``message`` was read from (in ``fmt``), even when it changed since: for ids a new shape keeps."""
    record = source_record(message)
    if record is None or record.get("format") != fmt:
        return []
    items = record.get("items")
    return list(items) if isinstance(items, list) else []


def write_items(
    messages: Sequence[Message],
    fmt: str,
    fresh: Callable[[int, Message], Sequence[Any]],
    *,
    passthrough: bool,
    part_type: str,
    report: Callable[[Message, str], None],
    always_fresh: Callable[[Message], bool] | None = None,
    memo: WriteMemo | None = None,
    refill: Callable[[Message, list[Any]], list[Any]] | None = None,
) -> list[Any]:
    """Messages as items of a format with one list item per message (or several): unchanged ones as the items
    they were read from, the rest by ``fresh(index, message)``; with ``passthrough`` a recall note goes into the
    user item it serves (its text first, as ``part_type`` parts) instead of being a user item of its own.
    ``always_fresh`` names messages ``fresh`` takes whatever their state (Responses system text for
    ``instructions``). ``memo`` (see `WriteMemo`) carries each message's items to the next write of the same
    conversation, which then looks at a message it wrote before only to recognize it. ``refill`` puts the caller's
    own parts back into what is written anew for a changed message of theirs (`ProviderFormat.refill`)."""
    out: list[Any] = []
    leading: list[str] = []
    kept: dict[int, _Written] | None = {} if memo is not None else None
    known = memo.entries if memo is not None else {}
    # no message anywhere edited in place since the last write: a message it wrote has the fingerprint it had
    epoch = edit_epoch()
    unedited = memo is not None and memo.epoch == epoch
    bounds: list[int] = []
    fresh_at: list[int] = []
    fresh_items: list[Any] = []
    begin = 0
    if memo is not None and unedited and memo.passthrough is passthrough and memo.always is always_fresh:
        begin = memo.reusable(messages)
        if begin:
            end = memo.bounds[begin - 1]
            out = memo.out[:end]
            # what windowkeeper wrote is handed out as new dicts on every write (the caller may keep and edit them),
            # made from the memo's own copies, never from what an earlier write handed out (placed in C: a view
            # holds hundreds of pointers)
            k = bisect.bisect_left(memo.fresh_at, end)
            fresh_at, fresh_items = memo.fresh_at[:k], memo.fresh_items[:k]
            _place(out, fresh_at, fresh_items)
            bounds = memo.bounds[:begin]
            if begin == len(memo.messages) and kept is not None:
                kept = memo.entries  # the last write's messages, all still here: their entries stay as they are
            elif kept is not None:
                kept.update((id(m), known[id(m)]) for m in itertools.islice(messages, begin))
    clean = True  # every item so far is one the memo may hand the next write again (see `WriteMemo`)
    mark, marked = RECALL_MARK
    for i in range(begin, len(messages)):
        message = messages[i]
        metadata = message.metadata
        # the mark read inline: this loop runs over the whole view on every write
        if passthrough and metadata and metadata.get(mark) == marked and recall_for_next(messages, i):
            leading.append(message.text())
            clean = False
            continue
        key = id(message)
        entry = known.get(key)
        forced = always_fresh is not None and always_fresh(message)
        if (
            entry is not None
            and not forced
            and entry[0] is message
            and entry[1] is metadata
            and entry[2] is message.raw
            and (unedited or entry[3] == message.fingerprint())
        ):
            # fresh items are copied, as a fresh write makes new ones: a caller may keep and extend what it got
            written = list(entry[5]) if entry[4] else [dict(x) if isinstance(x, dict) else x for x in entry[5]]
        else:
            source = unchanged(message, fmt) if passthrough and not forced else None
            if source is not None:
                written = list(source["items"])
            else:
                if passthrough and not forced:
                    report(message, fmt)
                written = list(fresh(i, message))
                if passthrough and not forced and refill is not None and message.raw:
                    written = refill(message, written)
            mine = source is not None
            stored = written if mine else [dict(x) if isinstance(x, dict) else x for x in written]
            entry = (message, message.metadata, message.raw, message.fingerprint(), mine, stored)
            written = list(written)
        if kept is not None and not forced:
            kept[key] = entry
        if leading and written:
            written[0] = with_leading_text(written[0], leading, part_type)
            leading = []
        clean = clean and not forced
        if clean and not entry[4]:
            # a fresh item (a pointer, the summary section) the memo hands the next write as a new copy of its own
            # stored item, so a write after a cut need not look at every message after the pointer
            fresh_at.extend(range(len(out), len(out) + len(entry[5])))
            fresh_items.extend(entry[5])
        out.extend(written)
        if clean:
            bounds.append(len(out))
    if memo is not None and kept is not None:
        memo.entries = kept
        memo.epoch = epoch
        memo.remember(messages, out, bounds, passthrough, always_fresh, fresh_at, fresh_items)
    return out


def _place(out: list[Any], at: list[int], items: list[Any]) -> None:
    """``out[at[k]] = `` a copy of ``items[k]`` for each k, as a write hands a fresh item out (a dict as a new dict,
    anything else as it is), run in C when every item is a dict (a view holds hundreds of pointers)."""
    if all(map(isinstance, items, itertools.repeat(dict))):
        collections.deque(map(out.__setitem__, at, map(dict.copy, items)), maxlen=0)
        return
    for k, item in zip(at, items, strict=True):
        out[k] = dict(item) if isinstance(item, dict) else item


_Written = tuple[Message, Any, Any, str, bool, list[Any]]
"""A memo entry: the message, its metadata and raw objects and fingerprint as written, whether the items are its
source's, and the items."""


class WriteMemo:
    """What `write_items` wrote for each message of one conversation's last write, by message identity.

    A caller that writes the same conversation again and again (`Window`, once per model call, with the view
    mostly the messages of the call before) passes one memo per conversation: a message that is the same object,
    with the same metadata, raw record and fingerprint as when it was written, gets the same items without being
    looked at again. Only the messages of the latest write are kept, with the `edit_epoch` it started at: while
    that is unchanged, no fingerprint needs to be read again either.

    Its leading run of messages (up to a recall note joined into the user turn it serves, or a message written
    fresh whatever its state) is also kept as the written list itself, with where each message's items end: a
    write whose messages start with the same objects (nothing edited since: `edit_epoch`) takes that part of the
    list as it is and looks only at the rest, so a call that appends to a long conversation costs what it
    appends. The run's sources' own items are handed out again as they are (they are the caller's); the items
    windowkeeper wrote (pointers, the summary section) are kept apart (``fresh``: position and the memo's own
    copy) and handed out as new copies, as a fresh write would make them. Pointers sit early in a view, so a run
    that stopped at them left most of the view to be looked at again on every call.
    """

    __slots__ = (
        "always",
        "bounds",
        "entries",
        "epoch",
        "fresh_at",
        "fresh_items",
        "hint",
        "messages",
        "origin",
        "out",
        "parts",
        "passthrough",
        "pending",
    )

    def __init__(self) -> None:
        self.entries: dict[int, _Written] = {}
        self.epoch = -1
        self.messages: list[Message] = []
        self.origin: Sequence[Message] | None = None
        self.hint: tuple[Sequence[Message], Sequence[Message]] | None = None
        self.pending: tuple[Sequence[Message], Sequence[Message], Sequence[Message]] | None = None
        self.parts: tuple[Sequence[Message], Sequence[Message]] | None = None
        self.out: list[Any] = []
        self.bounds: list[int] = []
        self.fresh_at: list[int] = []
        self.fresh_items: list[Any] = []
        self.passthrough = False
        self.always: Callable[[Message], bool] | None = None

    def grown(self, before: Sequence[Message], now: Sequence[Message]) -> None:
        """Say, for the next write only, that the list ``now`` it is given starts with the messages of ``before``
        (the same objects; both lists the caller's own, never edited): when ``before`` is the list the last write
        was given, its messages need not be compared."""
        self.hint = (before, now)

    def composed(self, laid: Sequence[Message], lead: Sequence[Message], messages: Sequence[Message]) -> None:
        """Say, for the next write only, that the list ``laid`` it is given is ``lead`` then ``messages`` (a format
        that writes the system zone as messages first): a hint given for ``messages`` (`grown`) then holds for
        ``laid`` when the last write was the same ``lead`` object then the hint's ``before``."""
        self.pending = (laid, lead, messages)

    def reusable(self, messages: Sequence[Message]) -> int:
        """How many leading ``messages`` are the last write's clean run (the caller checked `edit_epoch`, which a
        new metadata or raw object moves too, so the same objects hold the same records)."""
        hint, self.hint = self.hint, None
        if hint is not None and len(messages) >= len(self.messages):
            before, now = hint
            pending, parts = self.pending, self.parts
            if (messages is now and before is self.origin) or (
                pending is not None
                and parts is not None
                and pending[0] is messages
                and pending[2] is now
                and parts[0] is pending[1]
                and parts[1] is before
            ):
                return len(self.bounds)  # the last write's messages all lead this one; its run is no longer
        return min(shared_prefix(messages, self.messages), len(self.bounds))

    def remember(
        self,
        messages: Sequence[Message],
        out: list[Any],
        bounds: list[int],
        passthrough: bool,
        always: Callable[[Message], bool] | None,
        fresh_at: list[int] | None = None,
        fresh_items: list[Any] | None = None,
    ) -> None:
        self.messages = list(messages)
        pending, self.pending, self.hint = self.pending, None, None
        self.origin = messages
        self.parts = (pending[1], pending[2]) if pending is not None and pending[0] is messages else None
        self.out = out[: bounds[-1]] if bounds else []  # a copy: the caller owns the list it is handed
        self.bounds = bounds
        self.fresh_at = fresh_at or []
        self.fresh_items = fresh_items or []
        self.passthrough = passthrough
        self.always = always


def with_leading_text(item: Mapping[str, Any], texts: Sequence[str], part_type: str) -> dict[str, Any]:
    """A copy of the user item ``item`` whose content starts with ``texts`` (as ``part_type`` parts), every other
    key kept: how a recall note joins the user turn it serves instead of being a second user turn before it."""
    content = item.get("content")
    own = [{"type": part_type, "text": content}] if isinstance(content, str) else list(content or [])
    return {**item, "content": [*({"type": part_type, "text": t} for t in texts), *own]}


TURN_KEYS = "keys"
"""The source record's entry (on every message read from one item) holding the item's keys its reader does not
model (a proxy's ``x_meta`` next to ``role`` and ``content``), for the formats whose items split into several
messages (Anthropic, Gemini): a turn written anew because one of its parts changed keeps them, where only the
part that survived (its text, after its tool result went with its call) may be left to say where it came from."""


def keep_turn_keys(messages: Sequence[Message], item: Mapping[str, Any], modelled: frozenset[str]) -> None:
    """Record on the source of each of ``messages`` (just read from ``item`` by `keep_source`) the keys of
    ``item`` besides ``modelled`` (`TURN_KEYS`)."""
    keys = {str(k): v for k, v in item.items() if k not in modelled}
    if not keys:
        return
    kept = clean_json(keys)
    for message in messages:
        record = source_record(message)
        if isinstance(record, dict):  # the record `keep_source` just made, owned by this message
            record[TURN_KEYS] = kept


def turn_keys(message: Message, fmt: str) -> Mapping[str, Any] | None:
    """The keys `keep_turn_keys` recorded for ``message`` read from ``fmt`` (whatever its state), or None."""
    record = source_record(message)
    if record is None or record.get("format") != fmt:
        return None
    keys = record.get(TURN_KEYS)
    return keys if isinstance(keys, Mapping) and keys else None


def with_turn_keys(item: Mapping[str, Any], keys: Mapping[str, Any] | None) -> dict[str, Any]:
    """An item written anew with the caller's keys of the item it came from (`TURN_KEYS`) after its own."""
    if not keys:
        return dict(item)
    return {**item, **{k: v for k, v in keys.items() if k not in item}}


CUT_HEAD = 40
"""Characters a tool output cut to fit shares with the caller's at its start (`cut_from`): the manager keeps a head
of at least 32 tokens."""
TEXT_PARTS = frozenset({"text", "input_text", "output_text"})
"""The text part types of the formats that hold an item's parts in a list (Chat, Responses)."""


def cut_from(text: str | None, own: str | None) -> bool:
    """Whether the tool output ``text`` is the caller's ``own`` cut to fit: other than it and opening with its head.
    A pointer to a cleared result, which stands in for the whole result, opens with words of its own."""
    if text is None or not own or text == own:
        return False
    return text.startswith(own[:CUT_HEAD])


def with_own_item_keys(item: Mapping[str, Any], client: Mapping[str, Any]) -> dict[str, Any]:
    """``item`` (a tool output cut to fit, written anew) with every key of the caller's ``client`` item that was not
    written, in the caller's order: the cut changed its text, not its ``id``, ``status``, ``name`` or vendor keys."""
    out = {key: item.get(key, value) for key, value in client.items()}
    for key, value in item.items():
        out.setdefault(key, value)
    return out


def own_parts_in(
    value: Any, own: Any, known: frozenset[str], stand_in: Callable[[Mapping[str, Any]], str], *, what: str
) -> Any:
    """``value`` (the parts or the text written for a tool output cut to fit) with the caller's parts in ``own``
    that the cut did not change as the caller sent them: each part of a type the reader does not model (``known``:
    those it does), which the reader read as the text ``stand_in(part)``, back as the part itself where that text
    is; and the media parts (the known ones besides text) as the caller's own, keys the reader does not keep
    included (a ``cache_control``), when they are the same number of the same types. Where the cut took an
    unknown part's text out, the part is left out whole, with a warning naming it (``what`` names the output):
    never as text. A text written for a list of parts is a list of one text part, in the caller's text type."""
    if not isinstance(own, list):
        return value
    unknown = [p for p in own if isinstance(p, Mapping) and p.get("type") not in known]
    media = [p for p in own if isinstance(p, Mapping) and p.get("type") in known and p.get("type") not in TEXT_PARTS]
    text_type = next((p["type"] for p in own if isinstance(p, Mapping) and p.get("type") in TEXT_PARTS), None)
    if not unknown and (not media or isinstance(value, str)):
        # a list of text parts cut to one text: still a list, as the caller sent it (a writer writes a string)
        return [{"type": text_type, "text": value}] if isinstance(value, str) and text_type else value
    text_type = text_type or "text"
    parts = [{"type": text_type, "text": value}] if isinstance(value, str) else list(value or [])
    pending = [(part, stand_in(part)) for part in unknown if part not in parts]  # those in place already stay
    out: list[Any] = []
    for part in parts:
        text = part.get("text") if isinstance(part, Mapping) and part.get("type") in TEXT_PARTS else None
        if not isinstance(text, str) or not pending:
            out.append(part)
            continue
        pieces: list[Any] = []
        while pending:
            at, k = min(((text.find(s), k) for k, (_, s) in enumerate(pending) if s in text), default=(-1, -1))
            if at < 0:
                break
            original, found = pending.pop(k)
            pieces += [text[:at], original]
            text = text[at + len(found) :]
        pieces.append(_without_pieces_of(text, [s for _, s in pending]))
        for piece in pieces:
            if not isinstance(piece, str):
                out.append(piece)
            elif piece:
                out.append({**part, "text": piece})
    if pending:
        kinds = ", ".join(sorted({str(part.get("type")) for part, _ in pending}))
        text = (
            f"{what} was cut to fit and its part(s) of type {kinds} with it: left out whole, as windowkeeper does "
            "not read that type (raise the budget to keep the output whole)"
        )
        _say(text)
    places = [
        j
        for j, p in enumerate(out)
        if isinstance(p, Mapping) and p.get("type") in known and p.get("type") not in TEXT_PARTS
    ]
    if media and [out[j].get("type") for j in places] == [m.get("type") for m in media]:
        for j, m in zip(places, media, strict=True):
            out[j] = m
    return value if out == value else out


_PIECE = 12
"""Characters of a part's stand-in text that tell a piece of it left by a cut (`_without_pieces_of`)."""


def _without_pieces_of(text: str, stand_ins: Sequence[str]) -> str:
    """``text`` without the pieces of ``stand_ins`` a cut left next to its marker or at an end of the text: the
    head of one before the marker (or at the end), the tail of one after it (or at the start)."""
    for stand_in in stand_ins:
        if len(stand_in) < 2 * _PIECE:
            continue
        at = text.find(stand_in[:_PIECE])
        while at >= 0:
            end = at + _shared_head(stand_in, text[at : at + len(stand_in)])
            if end == len(text) or text[end : end + 2] in _MARKER_STARTS:
                text = text[:at] + text[end:]
                break
            at = text.find(stand_in[:_PIECE], at + 1)
        at = text.find(stand_in[-_PIECE:])
        while at >= 0:
            stop = at + _PIECE
            head = text[max(0, stop - len(stand_in)) : stop]
            start = stop - _shared_head(stand_in[::-1], head[::-1])
            if start == 0 or text[max(0, start - 2) : start] in _MARKER_ENDS:
                text = text[:start] + text[stop:]
                break
            at = text.find(stand_in[-_PIECE:], at + 1)
    return text


def _shared_head(a: str, b: str) -> int:
    """How many leading characters ``a`` and ``b`` share (halving: a slice comparison per step, not a character)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


_MARKER_STARTS = ("\n…", "… ")
_MARKER_ENDS = ("…\n", " …")
"""How the marker of a cut (``context.pointers.TRUNCATE_CUT``, with or without its line breaks) opens and ends."""


RECALL_MARK = ("windowkeeper", "recall")
"""The metadata key and value that mark a recall note (`windowkeeper.prompt.recall`, a layer above the formats,
which cannot be imported here; a test holds the two equal)."""


def is_recall(message: Message) -> bool:
    """Whether ``message`` is a recall note (what `windowkeeper.prompt.recall.is_recall` says)."""
    key, value = RECALL_MARK
    return message.metadata.get(key) == value


def recall_for_next(messages: Sequence[Message], index: int) -> bool:
    """Whether ``messages[index]`` is a recall note serving the user message right after it (written into it)."""
    message = messages[index]
    if not is_recall(message) or index + 1 >= len(messages):
        return False
    following = messages[index + 1]
    return following.role == "user" and message.metadata.get("serves") == str(following.message_id)


def key_paths(value: Any, prefix: str = "", *, depth: int = 0) -> set[str]:
    """The key paths of a JSON value, list positions folded (``content[].text``), for naming what a write lost."""
    out: set[str] = set()
    value = plain(value)
    if depth > 12:
        return out
    if isinstance(value, Mapping):
        for key, item in value.items():
            path = f"{prefix}.{key}" if prefix else str(key)
            out.add(path)
            out |= key_paths(item, path, depth=depth + 1)
    elif isinstance(value, _SEQUENCES):
        for item in value:
            out |= key_paths(item, f"{prefix}[]", depth=depth + 1)
    return out


def warn_lost(what: str, fields: Iterable[str]) -> None:
    """Say (a `UserWarning` and a log warning) that writing ``what`` could not keep ``fields``."""
    lost = sorted(set(fields))
    if not lost:
        return
    text = (
        f"{what}: {', '.join(lost)} cannot be carried by the shape written and {'is' if len(lost) == 1 else 'are'} "
        "left out; keep the message unchanged (or send it in its own format) to keep every field"
    )
    _say(text)


def _say(text: str) -> None:
    """Tell the caller what was lost, both ways it may be listening: a `UserWarning` at the caller of the
    function that lost it, and a log warning."""
    logger.warning("%s", text)
    warnings.warn(text, UserWarning, stacklevel=4)


__all__ = [
    "RECALL_MARK",
    "SOURCE_KEY",
    "WriteMemo",
    "is_recall",
    "keep_source",
    "split_parts",
    "key_paths",
    "TURN_KEYS",
    "keep_turn_keys",
    "turn_keys",
    "with_turn_keys",
    "cut_from",
    "own_parts_in",
    "with_own_item_keys",
    "original_items",
    "recall_for_next",
    "source_record",
    "unchanged",
    "warn_lost",
    "whole_group",
    "with_leading_text",
    "write_items",
]
