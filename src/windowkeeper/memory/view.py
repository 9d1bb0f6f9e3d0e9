"""The live view of one session, maintained incrementally so an add costs what it adds.

`LiveView` holds the records that are in the working view (live events and active summaries) in ``seq`` order,
each with what a model call needs from it (its `Message` and exact token count) computed once per record
version, plus the running token total. Records are never mutated in place: compaction and summarization write
new docs, and the view swaps in the records the store returns, so readers can share them without copying.

It also remembers what management learned cheaply: which event versions declined compaction, and up to which
position every event is already compacted or exempt, so a pass does not re-examine them on every add.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from ..errors import FormatError, StorageError
from ..messages import Message
from ..storage import Record
from ..tokens import TokenCounter
from .compaction import is_compacted
from .events import event_to_message, full_source
from .structured import StructuredSummary

HEAD_KEY = "head"
ARCHIVE_PREFIX = "o:"
ARCHIVE_KEY = "archive"
"""Doc field of a compacted event whose original moved to an archive record (key ``o:...``)."""
EVENT_PREFIX = "e:"
SUMMARY_PREFIX = "s:"
TOKENS_KEY = "tokens"
"""Doc field holding ``{"counter": name, "n": tokens}``: the view message's count, so a reload need not recount."""


def is_visible(doc: Mapping[str, Any]) -> bool:
    """Whether a stored doc belongs in the working view: an uncovered event or an active summary."""
    kind = doc.get("type")
    if kind == "event":
        return not doc.get("summary_id")
    return kind == "summary" and doc.get("status") == "active"


def view_message(doc: Mapping[str, Any]) -> Message:
    """The message sent for a stored doc: the original `Message` while uncompacted, else the compacted form;
    a summary becomes a system message."""
    if doc.get("type") == "summary":
        summary = StructuredSummary.model_validate(doc["summary"])
        return Message.text_message(summary.render(), role="system", message_id=f"summary:{summary.id}", timestamp=None)
    source = None if is_compacted(doc["event"]) else full_source(doc)
    if source is not None:
        return Message.from_stored(source)  # validated in full unless in the exact form Message wrote
    return event_to_message(doc["event"])


def stored_view_message(record: Record) -> Message:
    """`view_message` of a stored record; a source that passed the shape check but is no valid `Message` (a
    block type this version does not know, an edited field) raises `StorageError` naming the record."""
    try:
        return view_message(record.doc)
    except (ValidationError, FormatError) as exc:
        where = f"{record.origin}: " if record.origin else ""
        raise StorageError(
            f"{where}memory record {record.key!r} does not give a valid message ({exc}); list and remove bad "
            "records with `windowkeeper store check URL --remove`",
        ) from exc


class Entry:
    """One visible record with its token count and (built on first use) its view message.

    Valid for exactly this record version. The message is built lazily: a reopened session whose records carry
    their token count (see `TOKENS_KEY`, `peek`) costs a look at each live record's leading fields and nothing
    more until a model call needs the messages.
    """

    __slots__ = ("_message", "record", "tokens")

    def __init__(self, record: Record, tokens: int, message: Message | None = None) -> None:
        self.record = record
        self.tokens = tokens
        self._message = message

    @property
    def message(self) -> Message:
        if self._message is None:
            self._message = stored_view_message(self.record)
        return self._message

    @property
    def key(self) -> str:
        return self.record.key

    @property
    def seq(self) -> int:
        return self.record.seq

    @property
    def is_summary(self) -> bool:
        return self.record.key.startswith(SUMMARY_PREFIX)  # from the key: the doc may not be decoded yet


def stored_tokens(doc: Mapping[str, Any], counter: TokenCounter) -> int | None:
    """The token count written with ``doc`` by ``counter`` (same counter name), or ``None``."""
    info = doc.get(TOKENS_KEY)
    if isinstance(info, Mapping) and info.get("counter") == getattr(counter, "name", None):
        n = info.get("n")
        if isinstance(n, int) and not isinstance(n, bool) and n >= 0:
            return n
    return None


_EVENT_HEAD = re.compile(
    r'\{"type":"event","summary_id":(null|"[^"\\]*"),"pinned":(?:true|false),'
    r'"tokens":\{"counter":"([^"\\]*)","n":(\d+)\}[,}]'
)
"""The leading fields of an event doc as `BaseMemory.add` lays it out (type, summary_id, pinned, tokens first)."""


def peek(record: Record, counter: TokenCounter) -> tuple[bool, int | None]:
    """Whether ``record`` belongs in the view, and its stored token count by ``counter`` (``None``: count it).

    An event record read undecoded (`Record.stored`) whose body starts with the fields `_EVENT_HEAD` matches is
    answered from those few bytes, so a reload decodes none of the live events' text; the doc is decoded when a
    model call or management needs it. Anything else (summaries, records written before that layout) is decoded.
    """
    body = record.body
    if isinstance(body, str):
        head = _EVENT_HEAD.match(body)
        if head is not None:
            if head[1] != "null":
                return False, None
            return True, int(head[3]) if head[2] == getattr(counter, "name", None) else None
    return is_visible(record.doc), stored_tokens(record.doc, counter)


def with_tokens(doc: dict[str, Any], counter: TokenCounter, message: Message | None = None) -> Message:
    """Count what `view_message` sends for ``doc`` and record it in the doc (before it is written)."""
    built = message if message is not None else view_message(doc)
    doc[TOKENS_KEY] = {"counter": getattr(counter, "name", type(counter).__name__), "n": counter.count_message(built)}
    return built


@dataclass
class LiveView:
    """Visible records of one session in ``seq`` order, their token total, and the store position read so far.

    ``live_from`` / ``keep`` mirror the head record: every visible record has ``seq >= live_from`` or is named in
    ``keep``, which is what lets a reload read only the live records.
    """

    counter: TokenCounter
    loaded: bool = False
    head_version: int = 0
    live_from: int = 1
    max_seq: int = 0
    """Every record with ``seq <= max_seq`` has been read (reads only move it: a write may skip others' adds)."""
    events: list[Entry] = field(default_factory=list)
    summaries: list[Entry] = field(default_factory=list)
    by_key: dict[str, Entry] = field(default_factory=dict)
    total: int = 0
    declined: dict[str, int] = field(default_factory=dict)
    """Event key -> version whose compaction was declined (gist not shorter): not retried until it changes."""
    settled: int = 0
    """Number of leading events already compacted, exempt or declined: a pass starts looking after them."""

    def entry(self, record: Record, known: Mapping[str, Entry] | None = None, message: Message | None = None) -> Entry:
        """The entry of ``record``, reusing the known one when the version did not change; the count comes from
        the doc when its counter wrote it, else from counting the view message (``message`` if already built)."""
        current = (self.by_key if known is None else known).get(record.key)
        if current is not None and current.record.version == record.version:
            return current
        tokens = peek(record, self.counter)[1]
        if tokens is None:
            message = message if message is not None else view_message(record.doc)
            tokens = self.counter.count_message(message)
        return Entry(record, tokens, message)

    def rebuild(self, records: Iterable[Record]) -> None:
        """Replace the view by ``records`` (a fresh read of the live ones), reusing entries of unchanged versions."""
        known = self.by_key
        newest: dict[str, Record] = {}
        for record in records:
            self.max_seq = max(self.max_seq, record.seq)
            seen = newest.get(record.key)
            if record.key != HEAD_KEY and (seen is None or seen.version < record.version):
                newest[record.key] = record
        self.events, self.summaries, self.by_key, self.total, self.settled = [], [], {}, 0, 0
        for record in sorted(newest.values(), key=lambda r: r.seq):
            if not peek(record, self.counter)[0]:
                continue
            new = self.entry(record, known)
            self.by_key[record.key] = new
            self.total += new.tokens
            (self.summaries if new.is_summary else self.events).append(new)
        self.loaded = True

    def catch_up(self, records: Sequence[Record]) -> None:
        """Apply a read of every record after ``max_seq``; afterwards ``max_seq`` covers them too."""
        self.apply(records)
        if records:
            self.max_seq = max(self.max_seq, max(r.seq for r in records))

    def wrote(self, record: Record, message: Message | None = None) -> bool:
        """Apply a record this object just added; ``False`` when others added records since our last read (the
        caller then reads them with `catch_up`), because ``max_seq`` means "everything up to here was read"."""
        if message is not None and is_visible(record.doc):
            self.by_key.pop(record.key, None)
            self._add(self.entry(record, message=message))
        else:
            self.apply([record])
        if record.seq == self.max_seq + 1:
            self.max_seq = record.seq
            return True
        return False

    def apply(self, records: Iterable[Record]) -> None:
        """Bring the view up to date with ``records`` (new or newer versions); invisible ones leave the view.

        Appends (the common case) cost O(1); replacements and removals are gathered and merged in one pass.
        """
        changed = False
        for record in records:
            if record.key == HEAD_KEY:
                continue
            old = self.by_key.get(record.key)
            if old is not None and old.record.version > record.version:
                continue  # an older read racing a newer write: keep what we have
            if not peek(record, self.counter)[0]:
                if old is not None:
                    self.total -= old.tokens
                    del self.by_key[record.key]
                    changed = True
                continue
            new = self.entry(record)
            if new is old:
                continue
            self.by_key[record.key] = new
            self.total += new.tokens - (old.tokens if old is not None else 0)
            if old is not None:
                changed = True
                continue
            self._insert(new)
        if changed:
            self._merge()

    def _add(self, new: Entry) -> None:
        self.by_key[new.key] = new
        self.total += new.tokens
        self._insert(new)

    def _insert(self, new: Entry) -> None:
        target = self.summaries if new.is_summary else self.events
        if not target or target[-1].seq < new.seq:
            target.append(new)
        else:  # a record older than our newest (another writer's, read late): rare, so a plain insert
            index = bisect.bisect_left([e.seq for e in target], new.seq)
            target.insert(index, new)
            if not new.is_summary:
                self.settled = min(self.settled, index)

    def _merge(self) -> None:
        """Swap replaced entries in and drop removed ones, keeping order; re-derive how many lead events are
        settled (a decompressed event may be compacted again later, so settling stops before it)."""
        events: list[Entry] = []
        settled: int | None = None
        for index, old in enumerate(self.events):
            current = self.by_key.get(old.key)
            if current is None:
                continue
            reopened = current is not old and not is_compacted(current.record.doc["event"])
            if settled is None and (index >= self.settled or reopened):
                settled = len(events)
            events.append(current)
        self.events = events
        self.settled = len(events) if settled is None else settled
        self.summaries = [self.by_key[e.key] for e in self.summaries if e.key in self.by_key]

    def messages(self) -> list[Message]:
        return [e.message for e in self.summaries] + [e.message for e in self.events]

    def summary_models(self) -> list[StructuredSummary]:
        return [StructuredSummary.model_validate(e.record.doc["summary"]) for e in self.summaries]

    def keep_keys(self, live_from: int) -> list[str]:
        """Visible records older than ``live_from`` (system events, a kept turn opener, summaries)."""
        return [e.key for e in (*self.summaries, *self.events) if e.seq < live_from]
