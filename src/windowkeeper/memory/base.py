"""`BaseMemory`: three-tier session memory over any `SessionStore`.

Every event is one versioned record; the working view is the records not yet covered by a summary. After each
add (or on `manage_context`) the view is measured with the exact token counter and, past the triggers, old events
are compacted reversibly (tier 2) and then summarized into a `StructuredSummary` (tier 3). Nothing is deleted:
compacted text lives in the event's state, summarized events stay in the store marked with the summary's id.

Cost. The view (`LiveView`) is maintained incrementally: an add is one write, its token count is computed once,
and below the compaction trigger nothing else happens. A compaction pass frees down to ``compaction_target``
(60% by default), so the view then grows untouched, its prompt prefix byte-identical, until the trigger is hit
again. Reopening a session reads only the live records (the ``head`` record names where they start), skips the
archived originals written among them, and takes each event's visibility and token count from the leading fields
of its stored text, so the event text is decoded only when a model call or management needs it.

Consistency. Inside one memory object a per-session asyncio lock serializes add and management. Across objects
(several processes on one durable store) every management write also bumps a per-session ``head`` record with an
expected version; a writer whose head version is stale gets `ConflictError`, re-reads the live records and
retries, so a newer write is never overwritten. Adds by other objects are picked up by ``seq`` on the next add or
read.
"""

from __future__ import annotations

import asyncio
import builtins
import logging
import random
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, cast

from .._validate import check_timeout
from ..context._policy import turn_opener, unit_cut
from ..context._turns import newest_user_index, results_unit_start, turn_start
from ..errors import ConfigurationError, FormatError, ProviderError, StorageError
from ..messages import Message
from ..prompt import summary_tokens as sent_summary_tokens
from ..storage import ConflictError, InMemoryStore, Record, RecordUpdate, SessionStore
from ..summarize.failsafe import guarded_call
from ..tokens import TokenCounter, default_counter
from ..units import group_units
from .compaction import compact_in_place, decompress_in_place, is_compacted
from .config import Thresholds, resolve_thresholds
from .events import (
    COMPACTION_KEY,
    SOURCE_TEXT_KEY,
    SUMMARY_MARK,
    event_to_message,
    full_source,
    normalize_event,
    original_event,
    pack_source,
    same_event,
)
from .report import ContextReport
from .stored import StoredDocs
from .structured import (
    ExtractiveStructuredSummarizer,
    StructuredSummary,
    as_structured_summarizer,
    coerce_summary,
    fit_summary,
    with_notes,
)
from .view import (
    ARCHIVE_KEY,
    ARCHIVE_PREFIX,
    EVENT_PREFIX,
    HEAD_KEY,
    SUMMARY_PREFIX,
    TOKENS_KEY,
    Entry,
    LiveView,
    is_visible,
    with_tokens,
)

logger = logging.getLogger(__name__)

S = TypeVar("S", bound=SessionStore)

DEFAULT_NAMESPACE = "memory"
DEFAULT_SESSION = "default"
DEFAULT_SUMMARY_TIMEOUT = 120.0
"""Seconds a summarizer may take inside `add` before the pass is reported failed and the view left as it was."""

EventDict = dict[str, Any]
EventList = list[EventDict]

_CONFIG_KEYS = (
    "store",
    "summarizer",
    "thresholds",
    "enable_context_management",
    "counter",
    "namespace",
    "max_retries",
    "summary_max_tokens",
    "summary_timeout",
    "summary_notes",
)
SUMMARY_SHARE = 0.25
"""Default summary budget as a share of the compaction limit: a summary must leave room for live events."""
MAX_STAND_IN_SHARE = 0.2
"""A compaction pass takes its room from the events whose stand-in (``[COMPACTED: gist]``) keeps at most this share
of their tokens first, and compacts the others (short messages: a line of chat, a one-line finding of ~70 tokens)
only when those do not free enough: a short message frees a few dozen tokens and loses every word it said, a long
reply or tool result frees most of its size."""
NOTES_SHARE_DIVISOR = 2
"""Notes (`with_notes`) fill a default summary up to ``1/NOTES_SHARE_DIVISOR`` of the tokens it replaces at most."""


@dataclass
class _SummaryPlan:
    """A summarization in flight, shared between `_store_summary` and `_clear_summarized_events`."""

    summary: StructuredSummary
    docs: dict[str, dict[str, Any]]
    versions: dict[str, int]
    cover: list[Record]
    superseded: list[Record]
    summary_record: Record | None = None
    committed: bool = False


async def _backoff(attempt: int) -> None:
    """Sleep a little, growing and jittered, so competing writers stop colliding in lockstep."""
    await asyncio.sleep(random.uniform(0, min(0.05, 0.001 * 2**attempt)))


def _event_id(record: Record) -> str:
    return str(record.doc["event"]["message"]["id"])


def _is_talk(message: Mapping[str, Any]) -> bool:
    """A plain line of a conversation: a user's or assistant's message that calls no tool."""
    return message.get("role") in ("user", "assistant") and not message.get("tool_calls")


def _copy_json(value: Any) -> Any:
    """A private copy of JSON data (dicts, lists, scalars): what `list` hands out, so callers cannot edit the view."""
    if isinstance(value, dict):
        return {k: _copy_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy_json(v) for v in value]
    return value


def _event_doc(event: EventDict, source: dict[str, Any] | None) -> dict[str, Any]:
    """The stored doc of a new event. What a reload needs comes first (type, summary_id, pinned, then the token
    count `with_tokens` fills in), so `view.peek` reads it without decoding the text; updates keep that order.
    An added `Message`'s text is stored once, in the event (`pack_source`)."""
    doc = {"type": "event", "summary_id": None, "pinned": False, TOKENS_KEY: None, "event": event, "source": source}
    pack_source(doc)
    return doc


_LEAD_FIELDS = ("type", "summary_id", "pinned", TOKENS_KEY)
_LEAD_DEFAULTS: dict[str, Any] = {"summary_id": None, "pinned": False, TOKENS_KEY: None}


def _lay_out(doc: dict[str, Any]) -> None:
    """Give an event doc the layout of `_event_doc` in place (the fields a reload reads first), so an event
    written before that layout gets it on its next write (compaction, restore) and reloads cheaply afterwards."""
    if doc.get("type") != "event" or tuple(doc)[: len(_LEAD_FIELDS)] == _LEAD_FIELDS:
        return
    rest = dict(doc)
    doc.clear()
    for name in _LEAD_FIELDS:
        doc[name] = rest.pop(name, _LEAD_DEFAULTS.get(name))
    doc.update(rest)


def _summary_event(summary: StructuredSummary, text: str) -> EventDict:
    return {
        "message": {
            "id": f"summary:{summary.id}",
            "role": "system",
            "content": text,
            "timestamp": summary.timestamp.isoformat(),
        },
        "state": {"__summary__": summary.model_dump(mode="json")},
    }


class BaseMemory(Generic[S]):
    """Session memory with automatic reversible compaction and structured summarization.

    ``config`` may hold the same keys as the keyword arguments (the reference passes one dict); keywords win.
    ``summarizer`` is a callable ``(events) -> StructuredSummary | dict`` (sync or async; a sync one runs in a
    worker thread), a `StructuredLLMSummarizer`, or a text `Summarizer`; by default an offline extractive one is
    used. ``summary_timeout`` bounds each summarizer call (seconds). ``summary_notes`` (on by default; False turns
    it off) fills the room the default summarizer leaves in its summary with the short messages said once
    (`with_notes`): on a chat between people the facts then outlive their summary, at the price of a fuller
    summary, which brings the next one sooner (docs/memory.md).
    """

    def __init__(
        self,
        config: Mapping[str, Any] | None = None,
        *,
        store: S | None = None,
        summarizer: object | None = None,
        thresholds: Mapping[str, Any] | Thresholds | None = None,
        enable_context_management: bool | None = None,
        counter: TokenCounter | None = None,
        namespace: str | None = None,
        max_retries: int | None = None,
        summary_max_tokens: int | None = None,
        summary_timeout: float | None = None,
        summary_notes: bool | None = None,
    ) -> None:
        options = dict(config or {})
        unknown = sorted(set(options) - set(_CONFIG_KEYS))
        if unknown:
            raise ConfigurationError(f"unknown memory config key(s) {unknown}; known keys: {', '.join(_CONFIG_KEYS)}")
        given = {
            "store": store,
            "summarizer": summarizer,
            "thresholds": thresholds,
            "enable_context_management": enable_context_management,
            "counter": counter,
            "namespace": namespace,
            "max_retries": max_retries,
            "summary_max_tokens": summary_max_tokens,
            "summary_timeout": summary_timeout,
            "summary_notes": summary_notes,
        }
        options.update({k: v for k, v in given.items() if v is not None})
        chosen_store = options.get("store")
        if chosen_store is not None and not isinstance(chosen_store, SessionStore):
            raise ConfigurationError(f"store={chosen_store!r} is not a SessionStore; pass e.g. SQLiteStore(path)")
        self._owns_store = chosen_store is None
        self.store: S = cast(S, chosen_store if chosen_store is not None else InMemoryStore())
        self.thresholds = resolve_thresholds(options.get("thresholds"))
        self.enable_context_management = bool(options.get("enable_context_management", True))
        self.counter: TokenCounter = options.get("counter") or default_counter()
        self.summarizer = as_structured_summarizer(options.get("summarizer"))
        self.namespace = str(options.get("namespace") or DEFAULT_NAMESPACE)
        retries = options.get("max_retries", 16)
        if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
            raise ConfigurationError(f"max_retries={retries!r} must be an int >= 0")
        self.max_retries = retries
        budget = options.get("summary_max_tokens")
        if budget is None:
            budget = max(32, int(self.thresholds.compaction_limit * SUMMARY_SHARE))
        if isinstance(budget, bool) or not isinstance(budget, int) or budget <= 0:
            raise ConfigurationError(f"summary_max_tokens={budget!r} must be a positive int (tokens)")
        self.summary_max_tokens = budget
        timeout = options.get("summary_timeout", DEFAULT_SUMMARY_TIMEOUT)
        self.summary_timeout = check_timeout("summary_timeout", timeout)
        notes = options.get("summary_notes", True)
        if not isinstance(notes, bool):
            raise ConfigurationError(f"summary_notes={notes!r} must be True or False")
        self.summary_notes = notes
        self._views: dict[str, LiveView] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._plans: dict[str, _SummaryPlan] = {}
        self._last_reports: dict[str, ContextReport] = {}

    @property
    def _docs(self) -> StoredDocs:
        """The store's reads, every record checked for its kind's shape (see `windowkeeper.memory.stored`)."""
        return StoredDocs(self.store)

    # -- public API -------------------------------------------------------------------------------------------

    async def add(self, event: Mapping[str, Any] | Message, *, session_id: str | None = None) -> ContextReport | None:
        """Store one event (one write), then (unless management is off) bring the view back under the triggers.

        Ids are compared as strings (``1`` and ``"1"`` are the same id). Re-adding an event already in the session
        is a no-op, so a retried add cannot duplicate history; a *different* event under a used id raises
        `FormatError` instead of being dropped. Returns the management report, or ``None`` when management is
        disabled or the event was a repeat.
        """
        normalized, source = normalize_event(event)
        sid = self._session_id(session_id, normalized)
        event_id = normalized["message"]["id"]
        key = EVENT_PREFIX + event_id
        doc = _event_doc(normalized, source)
        async with self._lock(sid):
            view = self._view(sid)
            if not view.loaded:
                await self._reload(sid, view)
            message = with_tokens(doc, self.counter)  # counted once, stored with the event for cheap reloads
            try:
                record = await self.store.add_record(self.namespace, sid, key, doc)
            except ConflictError:
                await self._check_repeat(sid, key, normalized, source)
                return None
            if not view.wrote(record, message):  # someone else added in between: read their events too
                view.catch_up(await self._records_after(sid, view))
            if not self.enable_context_management:
                return None
            return await self._manage_locked(sid, view)

    async def manage_context(self, session_id: str = DEFAULT_SESSION) -> ContextReport:
        """Apply the tiers to the session now (re-reading it if another writer changed it) and report."""
        async with self._lock(session_id):
            view = self._view(session_id)
            await self._refresh(session_id, view)
            return await self._manage_locked(session_id, view)

    _manage_context = manage_context
    """The name the reference's custom-memory example calls from its own ``add`` override; kept so it runs."""

    async def list(
        self, session_id: str = DEFAULT_SESSION, *, include_summaries: bool = True, limit: int | None = None
    ) -> EventList:
        """The working view: active summaries (as system events) first, then live events, oldest first.

        ``limit`` keeps only the newest ``limit`` live events. The events are the caller's own copies.
        """
        async with self._lock(session_id):
            view = self._view(session_id)
            await self._refresh(session_id, view)
            entries = view.events
            if limit is not None:
                entries = entries[-limit:] if limit > 0 else []
            records = await self._restore_archived(session_id, [e.record for e in entries])
            events = [_copy_json(r.doc["event"]) for r in records]
            if not include_summaries:
                return events
            heads = [_summary_event(s, s.render()) for s in view.summary_models()]
            return heads + events

    async def messages(self, session_id: str = DEFAULT_SESSION) -> builtins.list[Message]:
        """The working view as `Message` objects, ready for a model call.

        Summaries become system messages; events added as a `Message` come back as that exact object unless
        they are compacted, in which case the compacted text is sent with tool pairing kept. The messages are
        shared with the memory's view (built once per event version): treat them as read-only.
        """
        async with self._lock(session_id):
            view = self._view(session_id)
            await self._refresh(session_id, view)
            return view.messages()

    async def history(self, session_id: str = DEFAULT_SESSION) -> EventList:
        """Every event ever added, in add order, with original content.

        Events that a summary replaced carry that summary's id in ``state["__summarized_by__"]``.
        """
        out: EventList = []
        records = await self._docs.list_records(self.namespace, session_id)
        for record in _with_archived(records):
            if record.doc.get("type") != "event":
                continue
            event = original_event(record.doc["event"])
            if record.doc.get("summary_id"):
                event["state"][SUMMARY_MARK] = record.doc["summary_id"]
            out.append(event)
        return out

    async def history_messages(self, session_id: str = DEFAULT_SESSION) -> builtins.list[Message]:
        """`history` as messages; events that came in as a `Message` are restored exactly."""
        out: builtins.list[Message] = []
        records = await self._docs.list_records(self.namespace, session_id)
        for record in _with_archived(records):
            if record.doc.get("type") != "event":
                continue
            source = full_source(record.doc)
            if source is not None:
                out.append(Message.model_validate(source))
            else:
                out.append(event_to_message(original_event(record.doc["event"])))
        return out

    async def summaries(
        self, session_id: str = DEFAULT_SESSION, *, include_inactive: bool = False
    ) -> builtins.list[StructuredSummary]:
        """Summaries in creation order: the active ones, or also superseded ones with ``include_inactive``."""
        if not include_inactive:
            async with self._lock(session_id):
                view = self._view(session_id)
                await self._refresh(session_id, view)
                return view.summary_models()
        return [
            StructuredSummary.model_validate(r.doc["summary"])
            for r in await self._docs.list_records(self.namespace, session_id)
            if r.doc.get("type") == "summary" and r.doc.get("status") in ("active", "superseded")
        ]

    async def tokens(self, session_id: str = DEFAULT_SESSION) -> int:
        """Exact token count of the working view (summaries included)."""
        async with self._lock(session_id):
            view = self._view(session_id)
            await self._refresh(session_id, view)
            return view.total

    async def decompress(self, event_id: str | int, *, session_id: str = DEFAULT_SESSION) -> EventDict:
        """Undo the compaction of one event in the store and return it with its original content.

        The restored event is pinned: automatic compaction leaves it alone afterwards (a summary may still cover
        it). An event that was never compacted is returned unchanged.
        """
        key = EVENT_PREFIX + str(event_id)
        async with self._lock(session_id):
            view = self._view(session_id)
            if not view.loaded:
                await self._reload(session_id, view)
            for attempt in range(self.max_retries + 1):
                record = await self._docs.get_record(self.namespace, session_id, key)
                if record is None or record.doc.get("type") != "event":
                    raise LookupError(f"session {session_id!r} has no event with id {event_id!r}")
                version = record.version
                record = (await self._restore_archived(session_id, [record]))[0]
                event = _copy_json(record.doc["event"])
                if not decompress_in_place(event):
                    return cast(EventDict, event)
                doc = {**record.doc, "event": event, "pinned": True}
                try:
                    await self._commit(session_id, view, [(key, doc, version)])
                except ConflictError:
                    await _backoff(attempt)
                    await self._reload(session_id, view)
                    continue
                return cast(EventDict, _copy_json(event))
        raise StorageError(
            f"could not restore event {event_id!r} of session {session_id!r}: {self.max_retries + 1} conflicting "
            "writes in a row; retry later",
        )

    restore = decompress

    def last_report(self, session_id: str = DEFAULT_SESSION) -> ContextReport | None:
        """The report of the latest management run of this session by this object."""
        return self._last_reports.get(session_id)

    async def clear(self, session_id: str = DEFAULT_SESSION) -> int:
        """Delete the session from the store (events, summaries, bookkeeping); return how many records went."""
        async with self._lock(session_id):
            self._views.pop(session_id, None)
            return await self.store.delete_session(self.namespace, session_id)

    async def close(self) -> None:
        """Close the store if this memory created it."""
        if self._owns_store:
            await self.store.close()

    async def __aenter__(self) -> BaseMemory[S]:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- hooks a subclass may override ------------------------------------------------------------------------

    async def _compact_event(self, event: EventDict) -> None:
        """Compact one event in place: replace ``message.content`` and keep the original in ``state``.

        An override must store at least ``original_content`` under ``state["__compaction__"]`` (so `decompress`
        can undo it) or leave the event untouched to decline.
        """
        compact_in_place(event, self.counter)

    async def _summarize(self, events: EventList, previous: Sequence[StructuredSummary] = ()) -> StructuredSummary:
        """Summarize original events (oldest first); the configured summarizer does the work."""
        return await self.summarizer.summarize_structured(events, previous=previous)

    async def _store_summary(self, session_id: str, summary: StructuredSummary) -> None:
        """Persist a new summary. During management it stays invisible until its events are cleared."""
        doc = {"type": "summary", "status": "pending", "summary": summary.model_dump(mode="json")}
        record = await self.store.add_record(self.namespace, session_id, SUMMARY_PREFIX + summary.id, doc)
        plan = self._plans.get(session_id)
        if plan is not None and plan.summary.id == summary.id:
            plan.summary_record = record
            return
        view = self._view(session_id)
        view.wrote(record)
        await self._commit(session_id, view, [(record.key, {**doc, "status": "active"}, record.version)])

    async def _clear_summarized_events(self, session_id: str, keep_recent_count: int) -> None:
        """Take the summarized events out of the view (all but the newest ``keep_recent_count``, cut at a unit
        boundary) and make the new summary visible, in one atomic write."""
        plan = self._plans.get(session_id)
        if plan is None:
            logger.warning("_clear_summarized_events(%r) called outside manage_context; nothing to clear", session_id)
            return
        if keep_recent_count != self.thresholds.keep_recent_count:
            logger.debug("keep_recent_count=%d differs from the plan's; the plan's cut is used", keep_recent_count)
        updates: dict[str, dict[str, Any]] = dict(plan.docs)
        for record in plan.cover:
            base = updates.get(record.key) or record.doc
            updates[record.key] = {**base, "summary_id": plan.summary.id}
        batch: builtins.list[RecordUpdate] = [(k, d, plan.versions[k]) for k, d in updates.items()]
        if plan.summary_record is not None:
            batch.append(
                (plan.summary_record.key, {**plan.summary_record.doc, "status": "active"}, plan.summary_record.version)
            )
        for old in plan.superseded:
            batch.append((old.key, {**old.doc, "status": "superseded", "superseded_by": plan.summary.id}, old.version))
        view = self._view(session_id)
        if plan.summary_record is not None:
            view.wrote(plan.summary_record)  # pending: invisible, but read as far as max_seq goes
        live_from = max([view.live_from, *(r.seq + 1 for r in plan.cover)])
        await self._commit(session_id, view, batch, live_from=live_from)
        plan.committed = True

    # -- management -------------------------------------------------------------------------------------------

    async def _manage_locked(self, sid: str, view: LiveView) -> ContextReport:
        if view.total < self.thresholds.compaction_limit:  # the common case: nothing to look at
            quiet = self._new_report(sid, view.total)
            quiet.reason = "below the compaction trigger"
            self._last_reports[sid] = quiet
            return quiet
        report: ContextReport | None = None
        for attempt in range(self.max_retries + 1):
            try:
                report = await self._hold_threshold(sid, view, await self._manage_once(sid, view))
            except ConflictError as exc:
                logger.debug("session %r: management write conflicted (%s); re-reading and retrying", sid, exc)
                await _backoff(attempt)
                await self._reload(sid, view)
                continue
            report.retries = attempt
            break
        if report is None:
            report = self._new_report(sid, view.total)
            report.failure = f"gave up after {self.max_retries + 1} conflicting writes by other memory objects"
            report.retries = self.max_retries + 1
        self._last_reports[sid] = report
        if report.failure:
            logger.warning("%s", report.describe())
        elif report.tier != "none":
            logger.info("%s", report.describe())
        else:
            logger.debug("%s", report.describe())
        return report

    def _new_report(self, sid: str, tokens: int) -> ContextReport:
        return ContextReport(
            session_id=sid,
            tokens_before=tokens,
            tokens_after=tokens,
            compaction_limit=self.thresholds.compaction_limit,
            summarization_limit=self.thresholds.summarization_limit,
        )

    def _exempt(self, entry: Entry) -> bool:
        """Events compaction never touches: system events, pinned (restored) ones, already compacted ones."""
        event = entry.record.doc["event"]
        return event["message"]["role"] == "system" or bool(entry.record.doc.get("pinned")) or is_compacted(event)

    async def _manage_once(self, sid: str, view: LiveView) -> ContextReport:
        th = self.thresholds
        before = view.total
        report = self._new_report(sid, before)
        if before < th.compaction_limit:
            report.reason = "below the compaction trigger"
            return report
        events = view.events
        protected_from = max(0, len(events) - th.keep_recent_count)
        pending_from = self._pending_start(events, view.settled)
        docs: dict[str, dict[str, Any]] = {}
        now = before
        compacted: builtins.list[str] = []
        settling = True
        short: builtins.list[tuple[int, Entry, dict[str, Any], int]] = []
        for index in range(view.settled, min(protected_from, pending_from)):
            entry = events[index]
            if now <= th.compaction_goal and (entry.message.role == "user" or not compacted):
                break  # at the target: finish the turn in progress, so the next pass starts at a turn boundary
            record = entry.record
            if self._exempt(entry) or view.declined.get(record.key) == record.version:
                if settling:
                    view.settled = index + 1
                continue
            event = _copy_json(record.doc["event"])
            await self._compact_event(event)
            new_doc = {**record.doc, "event": event}
            saved = 0
            if is_compacted(event):
                with_tokens(new_doc, self.counter)
                saved = entry.tokens - int(new_doc[TOKENS_KEY]["n"])
            if saved <= 0:
                view.declined[record.key] = record.version
                if settling:
                    view.settled = index + 1
                continue
            settling = False
            if entry.tokens - saved > entry.tokens * MAX_STAND_IN_SHARE:
                short.append((index, entry, new_doc, saved))  # compacted only if the longer events do not suffice
                continue
            docs[record.key] = new_doc
            now -= saved
            compacted.append(_event_id(record))
        if short and now > th.compaction_goal:
            # the longer events did not free enough: the short ones go too, oldest first, as far as it takes
            took = False
            for _, entry, new_doc, saved in short:
                if now <= th.compaction_goal and (entry.message.role == "user" or not took):
                    break  # as above: the turn the target is reached in is finished
                docs[entry.record.key] = new_doc
                now -= saved
                took = True
            order = {e.record.key: i for i, e in enumerate(events)}
            docs = dict(sorted(docs.items(), key=lambda kv: order[kv[0]]))
            compacted = [_event_id(events[order[k]].record) for k in docs]
        freed = before - now
        report.tokens_after_compaction = now
        if compacted:
            report.tier = "compaction"
        if now >= th.summarization_limit:
            why = f"{now} tokens after compaction is at or above the summarization trigger ({th.summarization_limit:g})"
        elif freed < th.min_compaction_gain:
            why = (
                f"compaction could free only {freed} tokens (< min_compaction_gain {th.min_compaction_gain}); "
                "summarizing instead of nibbling"
            )
        else:
            if docs:
                await self._archive(sid, view, docs)
                await self._commit(sid, view, [(k, d, view.by_key[k].record.version) for k, d in docs.items()])
            report.compacted_ids = compacted
            report.tokens_after = view.total
            report.reason = f"compacted {len(compacted)} events" if compacted else "nothing compactable"
            return report
        return await self._summarize_session(sid, view, report, docs, compacted, why)

    async def _hold_threshold(self, sid: str, view: LiveView, report: ContextReport) -> ContextReport:
        """The last resort when the view is still over ``pre_rot_threshold`` after the tiers ran: compact the
        events the tiers spare (the newest ``keep_recent_count``, the turn in progress), oldest first, until the
        view fits. A tool-heavy agent turn is one unit of the conversation that no summary may split, so its
        results would otherwise keep every later prompt over the budget. Compaction is reversible (`decompress`),
        and the user message that opened the turn is never touched; when even that is not enough (the newest
        message alone is over), the view stays over and it is logged.

        The turn opens at `turn_start`: when the newest user message was sent right after tool results, the task
        before it opened the turn, and both stay whole. Only when every other event is compacted and the view is
        still over does the task's message go too (logged), as if the newest line had opened the turn."""
        limit = self.thresholds.pre_rot_threshold
        now = self._sent_total(view)
        if now <= limit or report.failure:
            return report
        events = view.events
        messages = [e.message for e in events]
        newest = newest_user_index(messages)
        start = turn_start(messages)
        spared = {i for i in (newest, start) if i is not None}
        docs: dict[str, dict[str, Any]] = {}
        compacted: builtins.list[str] = []

        async def compact(index: int) -> int:
            """Compact ``events[index]`` into ``docs``; the tokens it saved (0: left as it is)."""
            entry = events[index]
            record = entry.record
            if self._exempt(entry) or view.declined.get(record.key) == record.version:
                return 0
            event = _copy_json(record.doc["event"])
            await self._compact_event(event)
            if not is_compacted(event):
                return 0
            new_doc = {**record.doc, "event": event}
            with_tokens(new_doc, self.counter)
            saved = entry.tokens - int(new_doc[TOKENS_KEY]["n"])
            if saved <= 0:
                return 0
            docs[record.key] = new_doc
            compacted.append(_event_id(record))
            return saved

        for index in range(view.settled, len(events)):
            if now <= limit:
                break
            if index not in spared:
                now -= await compact(index)
        if now > limit and start is not None and start != newest and start >= view.settled:
            saved = await compact(start)
            if saved:
                now -= saved
                logger.info(
                    "session %r: the message that opened the turn in progress was compacted too (%d tokens saved): "
                    "every other event is compacted and the view was still over pre_rot_threshold %d",
                    sid,
                    saved,
                    limit,
                )
        if docs:
            await self._archive(sid, view, docs)
            await self._commit(sid, view, [(k, d, view.by_key[k].record.version) for k, d in docs.items()])
            report.compacted_ids = [*report.compacted_ids, *compacted]
            report.tokens_after = view.total
            if report.tier == "none":
                report.tier = "compaction"
            report.reason = f"{report.reason}; then compacted {len(compacted)} newest events to hold {limit} tokens"
        if now > limit and view.summaries:
            shrunk = await self._shrink_summaries(sid, view, now - limit)
            if shrunk:
                now = self._sent_total(view)
                report.tokens_after = view.total
                report.reason = f"{report.reason}; then shortened {shrunk} summaries to hold {limit} tokens"
        if now > limit:
            logger.info(
                "session %r: %d tokens after every tier, over pre_rot_threshold %d: the newest turn's opener and "
                "what cannot be compacted are larger than the threshold",
                sid,
                now,
                limit,
            )
        return report

    async def _shrink_summaries(self, sid: str, view: LiveView, excess: int) -> int:
        """Shorten the active summaries, oldest first, by ``excess`` tokens in all (`fit_summary`: the oldest
        measurements, errors and decisions go first, down to the summary's first line), when the turn in progress,
        compacted as far as it goes, leaves them less room than they take. Their events stay in the history, so
        what a summary gives up can still be listed and recalled; only the view's stand-in gets shorter. They are
        shortened also when the newest unit alone is over the threshold (leaving them whole then lost final
        answers on long chats at 8k and 16k: the view they come back into afterwards summarizes sooner). A summary
        is never dropped to make room: its events have no other stand-in in the view, and later summaries do not
        fold it in, so what it held would be gone from every later view (tried: the same losses). Returns how many
        summaries were rewritten."""
        updates: builtins.list[RecordUpdate] = []
        for entry in view.summaries:
            if excess <= 0:
                break
            record = entry.record
            summary = StructuredSummary.model_validate(record.doc["summary"])
            size = self.counter.count_text(summary.render())
            smaller = fit_summary(summary, self.counter.count_text, max(size - excess, 0))
            saved = size - self.counter.count_text(smaller.render())
            if saved <= 0:
                continue
            updates.append((record.key, {**record.doc, "summary": smaller.model_dump(mode="json")}, record.version))
            excess -= saved
        if updates:
            await self._commit(sid, view, updates)
        return len(updates)

    def _sent_total(self, view: LiveView) -> int:
        """The view's size as a request, in the larger of its two presentations: summaries as system messages of
        their own (`messages`, which ``view.total`` sums) or rendered under the summary header of one system text
        (what `MemoryContextManager` sends). One summary costs a few tokens more under the header, several cost
        less, so the threshold holds for both only when the larger one is checked; either way a request also
        pays the reply priming (``count_messages`` of no messages)."""
        priming = self.counter.count_messages(())
        if not view.summaries:
            return view.total + priming
        texts = "\n\n".join(e.message.text() for e in view.summaries)
        systems = [e.message.text() for e in view.events if e.message.role == "system"]
        under_header = sent_summary_tokens(texts, self.counter, systems)  # memoized per text by built-in counters
        as_messages = sum(e.tokens for e in view.summaries)
        return view.total + priming + max(under_header - as_messages, 0)

    @staticmethod
    def _pending_start(events: builtins.list[Entry], start: int) -> int:
        """Index where the trailing pending tool unit starts (``len(events)`` when there is none)."""
        units = group_units([e.message for e in events[start:]])
        if units and units[-1].kind == "pending":
            return start + units[-1].start
        return len(events)

    async def _summarize_session(
        self,
        sid: str,
        view: LiveView,
        report: ContextReport,
        docs: dict[str, dict[str, Any]],
        compacted: builtins.list[str],
        why: str,
    ) -> ContextReport:
        live = [e.record for e in view.events]
        messages = [e.message for e in view.events]
        tokens = [e.tokens for e in view.events]
        cut = self._fitting_cut(messages, tokens, self._summary_cut(messages, tokens))
        opener = turn_opener(messages, cut)
        cover = [r for i, r in enumerate(live[:cut]) if r.doc["event"]["message"]["role"] != "system" and i != opener]
        if not cover:
            if docs:
                await self._archive(sid, view, docs)
                await self._commit(sid, view, [(k, d, view.by_key[k].record.version) for k, d in docs.items()])
            report.compacted_ids = compacted
            report.tokens_after = view.total
            report.reason = (
                f"{why}; but nothing outside the newest {self.thresholds.keep_recent_count} events can be summarized"
            )
            return report
        report.tier = "summarization"
        report.reason = why
        current = [Record(r.key, r.seq, r.version, docs.get(r.key, r.doc)) for r in cover]
        originals = [original_event(r.doc["event"]) for r in await self._restore_archived(sid, current)]
        active = [e.record for e in view.summaries]
        previous = [StructuredSummary.model_validate(r.doc["summary"]) for r in active]
        try:
            summary = await self._summary_of(originals, previous)
        except Exception as exc:  # any summarizer failure must leave the session untouched
            report.failure = f"summarizer failed: {type(exc).__name__}: {exc}"
            report.reason = f"{why}; nothing was written"
            return report
        superseded = [r for r in active if r.key[len(SUMMARY_PREFIX) :] in set(summary.supersedes)]
        replaced = sum(view.by_key[r.key].tokens for r in (*cover, *superseded))
        if self.summary_notes and type(self.summarizer) is ExtractiveStructuredSummarizer:
            # the offline default's pattern fields leave most of its room unused on a chat: notes fill it, up to
            # half of its budget (a summary whose fields already say that much gets none: a fuller summary brings
            # the next one, and its changed prompt prefix, sooner) and half of what the summary replaces (a summary
            # must still shrink the view by a real margin)
            room = min(self.summary_max_tokens, replaced) // NOTES_SHARE_DIVISOR
            # and in proportion to the summarized tokens that were plain lines of talk: tool calls and results are
            # the pattern fields' (files, errors, measurements), and an agent's short lines between them are noise
            talk = sum(view.by_key[r.key].tokens for r in cover if _is_talk(r.doc["event"]["message"]))
            cover_tokens = sum(view.by_key[r.key].tokens for r in cover)
            room = room * talk // max(cover_tokens, 1)
            summary = with_notes(summary, originals, self.counter.count_text, room)
        summary_tokens = self.counter.count_text(summary.render())
        if summary_tokens >= replaced:  # tier 3 must shrink the view, never grow it
            if docs:
                await self._archive(sid, view, docs)
                await self._commit(sid, view, [(k, d, view.by_key[k].record.version) for k, d in docs.items()])
            report.tier = "compaction" if compacted else "none"
            report.compacted_ids = compacted
            report.tokens_after = view.total
            report.reason = (
                f"{why}; but the summary ({summary_tokens} tokens) would not be smaller than the "
                f"{replaced} tokens it replaces, so the events stay"
            )
            return report
        summary = summary.model_copy(update={"supersedes": [r.key[len(SUMMARY_PREFIX) :] for r in superseded]})
        plan = _SummaryPlan(
            summary=summary,
            docs=docs,
            versions={r.key: r.version for r in live},
            cover=cover,
            superseded=superseded,
        )
        self._plans[sid] = plan
        try:
            await self._archive(sid, view, docs)
            await self._store_summary(sid, summary)
            await self._clear_summarized_events(sid, self.thresholds.keep_recent_count)
        except ConflictError:
            await self._abandon(sid, plan)
            raise
        except StorageError as exc:
            await self._abandon(sid, plan)
            report.failure = f"storing the summary failed: {exc}"
            return report
        finally:
            self._plans.pop(sid, None)
        covered = {r.key for r in cover}
        report.compacted_ids = [c for c in compacted if EVENT_PREFIX + c not in covered]
        report.summarized_ids = [_event_id(r) for r in cover]
        report.summary_id = summary.id
        report.tokens_after = view.total
        return report

    async def _summary_of(
        self, originals: builtins.list[EventDict], previous: Sequence[StructuredSummary]
    ) -> StructuredSummary:
        """The one place the memory calls its summarizer: bounded by ``summary_timeout``, an empty reply rejected,
        the result fitted to ``summary_max_tokens``. Any exception means "leave the session as it is"."""
        # the library-wide fail-safe call: a real timeout (sync summarizers run in a daemon thread), logged failures
        attempt = await guarded_call(self._summarize, originals, previous, timeout=self.summary_timeout, log=logger)
        if not attempt.ok:
            raise ProviderError(f"{attempt.error} (summary_timeout={self.summary_timeout:g}s)")
        raw = attempt.value
        summary = coerce_summary(raw, originals)
        if not summary.says_something():
            raise ProviderError(
                "summarizer returned an empty structured summary (no count, time range or timestamp, and no goal, "
                "step, decision, file or context); the events stay in the view instead of vanishing",
            )
        return fit_summary(summary, self.counter.count_text, self.summary_max_tokens)

    async def _abandon(self, sid: str, plan: _SummaryPlan) -> None:
        """Mark a summary that never became active, so readers can tell it apart from a live one."""
        record = plan.summary_record
        if record is None or plan.committed:
            return
        try:
            await self.store.update_record(
                self.namespace, sid, record.key, {**record.doc, "status": "abandoned"}, expected_version=record.version
            )
        except StorageError as exc:
            logger.debug("could not mark summary %s abandoned: %s", record.key, exc)

    def _summary_cut(self, messages: builtins.list[Message], tokens: builtins.list[int]) -> int:
        """Index before which events are summarized: all but the newest ``keep_recent_count`` events, never part
        of a tool unit (the context package's `unit_cut`); with a ``summarization_target``, only the oldest whole
        turns it takes to bring the view down to the target beside a summary of ``summary_max_tokens``.

        Summarizing everything but the newest few events leaves the view at a small share of its threshold after
        each summary, so on short turns it holds less verbatim than a plain window of the same size; cutting to a
        target keeps the recent turns, and the band between the target and the trigger is what the view grows
        through untouched (its prefix cached) before the next summary.

        A user line sent right after tool results does not open a turn (`windowkeeper.context._turns`): the cut
        never falls at or after it but at the latest before the tool exchange it was sent with, so the task, its
        calls and results are not summarized while the model answers them (the task message stays as the turn's
        opener, `turn_opener`, as in any turn cut inside)."""
        cut = min(unit_cut(messages, self.thresholds.keep_recent_count), self._turn_limit(messages))
        goal = self.thresholds.summarization_goal
        if goal is None:
            return cut
        system = sum(t for m, t in zip(messages, tokens, strict=True) if m.role == "system")
        room = goal - self.summary_max_tokens - system
        kept = sum(t for m, t in zip(messages[cut:], tokens[cut:], strict=True) if m.role != "system")
        best = cut
        for index in range(cut - 1, -1, -1):
            if messages[index].role != "system":
                kept += tokens[index]
                if kept > room:
                    break
            if messages[index].role == "user":
                best = index  # a turn starts here: the kept part opens with the user's message
        return best

    @staticmethod
    def _turn_limit(messages: builtins.list[Message]) -> int:
        """The latest cut that keeps the turn in progress together: where the tool exchange starts that the newest
        user message was sent right after (`results_unit_start`), ``len(messages)`` when that message opens a
        turn of its own."""
        newest = newest_user_index(messages)
        if newest is None or turn_start(messages) == newest:
            return len(messages)
        return results_unit_start(messages, newest)

    def _fitting_cut(self, messages: builtins.list[Message], tokens: builtins.list[int], cut: int) -> int:
        """``cut`` moved to later user messages, then (inside the newest turn) to later unit starts, while the
        events kept after it and a summary of ``summary_max_tokens`` would not fit under the compaction trigger:
        ``keep_recent_count`` long events (pasted documents, long replies, an agent turn's tool results) must not
        keep the view over ``pre_rot_threshold``. A cut inside the newest turn keeps the user message that opened
        it live (`turn_opener`), and the newest unit is always kept, so it alone (with that opener and the
        summary) may stay over: the one case the threshold cannot hold. System events are never summarized, so
        wherever they stand they take their room first (an agent's instructions can be most of a small budget).

        When the newest user message was sent right after tool results, the turn in progress starts at the user
        message before them (`turn_start`), and moving user by user the cut stops there once the turn fits. When
        it does not, the cut goes on to the newest user message as before, as if that line had opened a turn
        (logged): the threshold is held and the newest user message is still never summarized. (Cutting inside
        that turn instead, keeping its task as the opener, was tried: it kept more after each summary and lost
        prefix-stable calls on the generated agent sessions.)"""
        pinned = [t if m.role == "system" else 0 for m, t in zip(messages, tokens, strict=True)]
        room = self.thresholds.compaction_limit - self.summary_max_tokens - sum(pinned[:cut])
        newest = newest_user_index(messages)
        if newest is None:
            return cut
        start = turn_start(messages)
        kept = sum(tokens[cut:])
        while kept > room and cut < newest:
            nxt = next(i for i in range(cut + 1, newest + 1) if messages[i].role == "user")
            if nxt == newest != start:
                logger.info(
                    "the turn in progress (from the user message before the tool results the newest user message "
                    "was sent with) does not fit the compaction trigger (%g) beside a summary; it starts at the "
                    "newest user message instead, and the task before it is summarized",
                    self.thresholds.compaction_limit,
                )
            kept -= sum(tokens[cut:nxt]) - sum(pinned[cut:nxt])
            cut = nxt
        if kept <= room:
            return cut
        opener = tokens[newest] if cut > newest else 0
        for nxt in (newest + u.start for u in group_units(messages[newest:])):
            if nxt <= cut:
                continue
            if kept + opener <= room:
                break
            kept -= sum(tokens[cut:nxt]) - sum(pinned[cut:nxt])
            opener = tokens[newest]
            cut = nxt
        return cut

    # -- archived originals ----------------------------------------------------------------------------------

    async def _archive(self, sid: str, view: LiveView, docs: dict[str, dict[str, Any]]) -> None:
        """Move the originals of freshly compacted events into one archive record, so the live records (what a
        reload reads) hold only the gists. The event keeps a pointer; `decompress`, `history` and summaries read
        the original back from the archive. Written before the compaction commit: if that commit never happens,
        the archive is an unreferenced record, never a lost original."""
        items: dict[str, dict[str, Any]] = {}
        for key, doc in docs.items():
            info = doc["event"].get("state", {}).get(COMPACTION_KEY)
            if not isinstance(info, dict) or "original_content" not in info or doc.get(ARCHIVE_KEY):
                continue
            items[key] = {"original_content": info["original_content"], "source": doc.get("source")}
            if doc.get(SOURCE_TEXT_KEY) is not None:
                items[key][SOURCE_TEXT_KEY] = doc[SOURCE_TEXT_KEY]
        if not items:
            return
        archive_key = ARCHIVE_PREFIX + uuid.uuid4().hex
        record = await self.store.add_record(self.namespace, sid, archive_key, {"type": "archive", "items": items})
        view.wrote(record)
        for key in items:
            doc = docs[key]
            event = doc["event"]
            info = {k: v for k, v in event["state"][COMPACTION_KEY].items() if k != "original_content"}
            event["state"] = {**event["state"], COMPACTION_KEY: {**info, "archived": True}}
            doc.pop("source", None)
            doc.pop(SOURCE_TEXT_KEY, None)
            doc[ARCHIVE_KEY] = archive_key

    async def _restore_archived(self, sid: str, records: Sequence[Record]) -> builtins.list[Record]:
        """``records`` with archived originals put back in place (the stored form before archiving)."""
        refs = {str(r.doc[ARCHIVE_KEY]) for r in records if r.doc.get(ARCHIVE_KEY)}
        if not refs:
            return builtins.list(records)
        archives = await self._docs.get_records(self.namespace, sid, sorted(refs))
        return _with_archived(records, archives)

    # -- view and store plumbing ------------------------------------------------------------------------------

    async def _check_repeat(self, sid: str, key: str, event: EventDict, source: dict[str, Any] | None) -> None:
        """An add whose id is taken: fine when it is the same event again (a retry), an error when it is not."""
        stored = await self._docs.get_record(self.namespace, sid, key)
        if stored is None or stored.doc.get("type") != "event":
            raise StorageError(f"session {sid!r}: key {key!r} is taken by a record that is not an event")
        stored = (await self._restore_archived(sid, [stored]))[0]
        if same_event(original_event(stored.doc["event"]), event, full_source(stored.doc), source):
            logger.debug("session %r already holds event %r; add ignored", sid, event["message"]["id"])
            return
        raise FormatError(
            f"session {sid!r} already holds a different event with id {event['message']['id']!r}; ids are compared "
            "as strings (1 and '1' are the same id): give the new event its own id",
            key="message.id",
        )

    def _session_id(self, session_id: str | None, event: Mapping[str, Any]) -> str:
        sid = session_id if session_id is not None else event.get("state", {}).get("session_id", DEFAULT_SESSION)
        if not isinstance(sid, str) or not sid:
            raise ConfigurationError(f"session_id must be a non-empty string, got {sid!r}")
        return sid

    def _lock(self, sid: str) -> asyncio.Lock:
        lock = self._locks.get(sid)
        if lock is None:
            lock = self._locks[sid] = asyncio.Lock()
        return lock

    def _view(self, sid: str) -> LiveView:
        view = self._views.get(sid)
        if view is None:
            view = self._views[sid] = LiveView(self.counter)
        return view

    async def _reload(self, sid: str, view: LiveView) -> None:
        """Read the session's live records only: from the head's ``live_from`` on, plus the older ones it names."""
        for _ in range(self.max_retries + 1):
            head = await self._docs.get_record(self.namespace, sid, HEAD_KEY)
            if head is None:
                try:
                    head = await self.store.add_record(self.namespace, sid, HEAD_KEY, {"type": "head", "live_from": 1})
                except ConflictError:
                    continue
            live_from = head.doc.get("live_from", 1)  # checked: an int within the stores' range
            # archived originals sit between the live records; they are read only when asked for
            records = await self._docs.list_records_since_skipping(self.namespace, sid, live_from, ARCHIVE_PREFIX)
            older = list(head.doc.get("keep", ()))
            if older:
                records = [*await self._docs.get_records(self.namespace, sid, older), *records]
            view.rebuild(records)
            view.head_version = head.version
            view.live_from = live_from
            view.loaded = True
            return
        raise StorageError(f"session {sid!r}: could not create its head record; the store keeps refusing it")

    async def _refresh(self, sid: str, view: LiveView) -> None:
        """Catch up with other writers: re-read the live records if the head moved, else read new adds only."""
        if not view.loaded:
            await self._reload(sid, view)
            return
        head = await self._docs.get_record(self.namespace, sid, HEAD_KEY)
        if head is None or head.version != view.head_version:
            await self._reload(sid, view)
            return
        view.catch_up(await self._records_after(sid, view))

    async def _records_after(self, sid: str, view: LiveView) -> builtins.list[Record]:
        """Records added since the view's last read, archives (never visible) left unread."""
        return await self._docs.list_records_since_skipping(self.namespace, sid, view.max_seq + 1, ARCHIVE_PREFIX)

    async def _commit(
        self, sid: str, view: LiveView, updates: Sequence[RecordUpdate], *, live_from: int | None = None
    ) -> None:
        """Write ``updates`` and bump the head atomically; `ConflictError` if anyone wrote since we read.

        The head also records where the live records start (``live_from``) and the older ones still live
        (``keep``), so the next reload reads only those.
        """
        start = view.live_from if live_from is None else live_from
        leaving = {key for key, doc, _ in updates if not is_visible(doc)}
        keep = [k for k in view.keep_keys(start) if k not in leaving]
        for _, doc, _ in updates:
            _lay_out(doc)
            if is_visible(doc):
                with_tokens(doc, self.counter)  # the stored count always matches the doc it is stored with
        head_doc = {"type": "head", "live_from": start, "keep": keep}
        batch = [*updates, (HEAD_KEY, head_doc, view.head_version)]
        written = await self.store.update_records(self.namespace, sid, batch)
        for record in written:
            if record.key == HEAD_KEY:
                view.head_version = record.version
        view.live_from = start
        view.apply(r for r in written if r.key != HEAD_KEY)


def _with_archived(records: Sequence[Record], archives: Sequence[Record] = ()) -> builtins.list[Record]:
    """Records with their archived originals restored, from ``archives`` (or from ``records`` themselves, when
    they are a whole session's listing)."""
    items: dict[str, Any] = {}
    for record in (*archives, *records):
        if record.doc.get("type") == "archive":
            items[record.key] = record.doc.get("items") or {}
    out: builtins.list[Record] = []
    for record in records:
        ref = record.doc.get(ARCHIVE_KEY)
        item = items.get(str(ref), {}).get(record.key) if ref else None
        if item is None:
            if ref:
                raise StorageError(
                    f"event record {record.key!r} points at archive {ref!r}, which does not hold its original",
                )
            out.append(record)
            continue
        event = _copy_json(record.doc["event"])
        info = {k: v for k, v in event["state"][COMPACTION_KEY].items() if k != "archived"}
        event["state"][COMPACTION_KEY] = {**info, "original_content": item["original_content"]}
        doc = {k: v for k, v in record.doc.items() if k != ARCHIVE_KEY}
        doc["event"] = event
        doc["source"] = item.get("source")
        if item.get(SOURCE_TEXT_KEY) is not None:
            doc[SOURCE_TEXT_KEY] = item[SOURCE_TEXT_KEY]
        out.append(Record(record.key, record.seq, record.version, doc))
    return out
