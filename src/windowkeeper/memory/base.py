"""`BaseMemory`: three-tier session memory over any `SessionStore`.

Every event is one versioned record; the working view is the records not yet covered by a summary. After each
add (or on `manage_context`) the view is measured with the exact token counter and, past the triggers, old events
are compacted reversibly (tier 2) and then summarized into a `StructuredSummary` (tier 3). Nothing is deleted:
compacted text lives in the event's state, summarized events stay in the store marked with the summary's id.

Consistency. Inside one memory object a per-session asyncio lock serializes add and management. Across objects
(several processes on one durable store) every write also bumps a per-session ``head`` record with an expected
version. A writer whose head version is stale gets `ConflictError`, re-reads the session and retries, so a
newer write is never overwritten and each object's cached view notices other writers' events.
"""

from __future__ import annotations

import asyncio
import builtins
import copy
import json
import logging
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, cast

from ..errors import ConfigurationError, StorageError
from ..messages import Message
from ..storage import ConflictError, InMemoryStore, Record, RecordUpdate, SessionStore
from ..tokens import TokenCounter, default_counter
from ..units import group_units
from .compaction import compact_in_place, decompress_in_place, is_compacted
from .config import Thresholds, resolve_thresholds
from .events import SUMMARY_MARK, event_to_message, normalize_event, original_event
from .report import ContextReport
from .structured import StructuredSummary, as_structured_summarizer, coerce_summary, fit_summary

logger = logging.getLogger(__name__)

S = TypeVar("S", bound=SessionStore)

HEAD_KEY = "head"
EVENT_PREFIX = "e:"
SUMMARY_PREFIX = "s:"
DEFAULT_NAMESPACE = "memory"
DEFAULT_SESSION = "default"

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
)
SUMMARY_SHARE = 0.25
"""Default summary budget as a share of the compaction limit: a summary must leave room for live events."""


@dataclass
class _SessionCache:
    """What this object knows of a session: live events and active summaries, as of ``head_version``."""

    loaded: bool = False
    head_version: int = 0
    records: dict[str, Record] = field(default_factory=dict)
    tokens: dict[str, tuple[int, int]] = field(default_factory=dict)
    messages: dict[str, tuple[int, Message]] = field(default_factory=dict)


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
    ``summarizer`` is a callable ``(events) -> StructuredSummary | dict`` (sync or async), a
    `StructuredLLMSummarizer`, or a text `Summarizer`; by default an offline extractive one is used.
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
        self._caches: dict[str, _SessionCache] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._plans: dict[str, _SummaryPlan] = {}
        self._last_reports: dict[str, ContextReport] = {}

    # -- public API -------------------------------------------------------------------------------------------

    async def add(self, event: Mapping[str, Any] | Message, *, session_id: str | None = None) -> ContextReport | None:
        """Store one event, then (unless management is off) bring the view back under the triggers.

        Re-adding an id already in the session is a no-op, so a retried add cannot duplicate history. Returns the
        management report, or ``None`` when management is disabled or the event was a duplicate.
        """
        normalized, source = normalize_event(event)
        sid = self._session_id(session_id, normalized)
        key = EVENT_PREFIX + normalized["message"]["id"]
        doc = {"type": "event", "event": normalized, "summary_id": None, "pinned": False, "source": source}
        async with self._lock(sid):
            cache = self._cache(sid)
            if not cache.loaded:
                await self._reload(sid, cache)
            try:
                record = await self.store.add_record(self.namespace, sid, key, doc)
            except ConflictError:
                logger.debug("session %r already holds event %r; add ignored", sid, normalized["message"]["id"])
                return None
            self._put(cache, record)
            await self._announce_write(sid, cache)
            if not self.enable_context_management:
                return None
            return await self._manage_locked(sid, cache)

    async def manage_context(self, session_id: str = DEFAULT_SESSION) -> ContextReport:
        """Apply the tiers to the session now (re-reading it if another writer changed it) and report."""
        async with self._lock(session_id):
            cache = self._cache(session_id)
            await self._refresh(session_id, cache)
            return await self._manage_locked(session_id, cache)

    _manage_context = manage_context

    async def list(
        self, session_id: str = DEFAULT_SESSION, *, include_summaries: bool = True, limit: int | None = None
    ) -> EventList:
        """The working view: active summaries (as system events) first, then live events, oldest first.

        ``limit`` keeps only the newest ``limit`` live events.
        """
        async with self._lock(session_id):
            cache = self._cache(session_id)
            await self._refresh(session_id, cache)
            events = [copy.deepcopy(r.doc["event"]) for r in self._live(cache)]
            if limit is not None:
                events = events[-limit:] if limit > 0 else []
            if not include_summaries:
                return events
            heads = [_summary_event(s, s.render()) for s in self._summaries(cache)]
            return heads + events

    async def messages(self, session_id: str = DEFAULT_SESSION) -> builtins.list[Message]:
        """The working view as `Message` objects, ready for a model call.

        Summaries become system messages; events added as a `Message` come back as that exact object unless
        they are compacted, in which case the compacted text is sent with tool pairing kept.
        """
        async with self._lock(session_id):
            cache = self._cache(session_id)
            await self._refresh(session_id, cache)
            out = [
                Message.text_message(s.render(), role="system", message_id=f"summary:{s.id}")
                for s in self._summaries(cache)
            ]
            out.extend(_view_message(record.doc) for record in self._live(cache))
            return out

    async def history(self, session_id: str = DEFAULT_SESSION) -> EventList:
        """Every event ever added, in add order, with original content.

        Events that a summary replaced carry that summary's id in ``state["__summarized_by__"]``.
        """
        out: EventList = []
        for record in await self.store.list_records(self.namespace, session_id):
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
        for record in await self.store.list_records(self.namespace, session_id):
            if record.doc.get("type") != "event":
                continue
            source = record.doc.get("source")
            if source is not None:
                out.append(Message.model_validate(source))
            else:
                out.append(event_to_message(original_event(record.doc["event"])))
        return out

    async def summaries(
        self, session_id: str = DEFAULT_SESSION, *, include_inactive: bool = False
    ) -> builtins.list[StructuredSummary]:
        """Summaries in creation order: the active ones, or also superseded ones with ``include_inactive``."""
        wanted = {"active", "superseded"} if include_inactive else {"active"}
        return [
            StructuredSummary.model_validate(r.doc["summary"])
            for r in await self.store.list_records(self.namespace, session_id)
            if r.doc.get("type") == "summary" and r.doc.get("status") in wanted
        ]

    async def tokens(self, session_id: str = DEFAULT_SESSION) -> int:
        """Exact token count of the working view (summaries included)."""
        async with self._lock(session_id):
            cache = self._cache(session_id)
            await self._refresh(session_id, cache)
            return self._view_tokens(cache)

    async def decompress(self, event_id: str | int, *, session_id: str = DEFAULT_SESSION) -> EventDict:
        """Undo the compaction of one event in the store and return it with its original content.

        The restored event is pinned: automatic compaction leaves it alone afterwards (a summary may still cover
        it). An event that was never compacted is returned unchanged.
        """
        key = EVENT_PREFIX + str(event_id)
        async with self._lock(session_id):
            cache = self._cache(session_id)
            if not cache.loaded:
                await self._reload(session_id, cache)
            for attempt in range(self.max_retries + 1):
                record = await self.store.get_record(self.namespace, session_id, key)
                if record is None or record.doc.get("type") != "event":
                    raise LookupError(f"session {session_id!r} has no event with id {event_id!r}")
                event = copy.deepcopy(record.doc["event"])
                if not decompress_in_place(event):
                    return cast(EventDict, event)
                doc = {**record.doc, "event": event, "pinned": True}
                try:
                    await self._commit(session_id, cache, [(key, doc, record.version)])
                except ConflictError:
                    await _backoff(attempt)
                    await self._reload(session_id, cache)
                    continue
                return copy.deepcopy(event)
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
            self._caches.pop(session_id, None)
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
        cache = self._cache(session_id)
        await self._commit(session_id, cache, [(record.key, {**doc, "status": "active"}, record.version)])

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
            doc = updates.get(record.key) or copy.deepcopy(record.doc)
            doc["summary_id"] = plan.summary.id
            updates[record.key] = doc
        batch: builtins.list[RecordUpdate] = [(k, d, plan.versions[k]) for k, d in updates.items()]
        if plan.summary_record is not None:
            batch.append(
                (plan.summary_record.key, {**plan.summary_record.doc, "status": "active"}, plan.summary_record.version)
            )
        for old in plan.superseded:
            batch.append((old.key, {**old.doc, "status": "superseded", "superseded_by": plan.summary.id}, old.version))
        await self._commit(session_id, self._cache(session_id), batch)
        plan.committed = True

    # -- management -------------------------------------------------------------------------------------------

    async def _manage_locked(self, sid: str, cache: _SessionCache) -> ContextReport:
        report: ContextReport | None = None
        for attempt in range(self.max_retries + 1):
            try:
                report = await self._manage_once(sid, cache)
            except ConflictError as exc:
                logger.debug("session %r: management write conflicted (%s); re-reading and retrying", sid, exc)
                await _backoff(attempt)
                await self._reload(sid, cache)
                continue
            report.retries = attempt
            break
        if report is None:
            tokens = self._view_tokens(cache)
            report = self._new_report(sid, tokens)
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

    async def _manage_once(self, sid: str, cache: _SessionCache) -> ContextReport:
        th = self.thresholds
        before = self._view_tokens(cache)
        report = self._new_report(sid, before)
        if before < th.compaction_limit:
            report.reason = "below the compaction trigger"
            return report
        live = self._live(cache)
        structural = [self._message_of(cache, r) for r in live]
        unit_of = self._unit_kinds(structural)
        docs: dict[str, dict[str, Any]] = {}
        now = before
        compacted: builtins.list[str] = []
        for index, record in enumerate(live[: max(0, len(live) - th.keep_recent_count)]):
            if now < th.compaction_limit:
                break
            event = record.doc["event"]
            if (
                event["message"]["role"] == "system"
                or unit_of[index] == "pending"
                or record.doc.get("pinned")
                or is_compacted(event)
            ):
                continue
            doc = copy.deepcopy(record.doc)
            await self._compact_event(doc["event"])
            if not is_compacted(doc["event"]):
                continue
            old_tokens, new_tokens = self._tokens_of(cache, record), self._doc_tokens(doc)
            if new_tokens >= old_tokens:
                continue
            docs[record.key] = doc
            now -= old_tokens - new_tokens
            compacted.append(_event_id(record))
        freed = before - now
        report.tokens_after_compaction = now
        if compacted:
            report.tier = "compaction"
        if now >= th.summarization_limit:
            why = f"{now} tokens after compaction is at or above the summarization trigger ({th.summarization_limit:g})"
        elif now >= th.compaction_limit and freed < th.min_compaction_gain:
            why = f"compaction freed {freed} tokens (< min gain {th.min_compaction_gain}) and the view is still over"
        else:
            if docs:
                await self._commit(sid, cache, [(k, d, cache.records[k].version) for k, d in docs.items()])
            report.compacted_ids = compacted
            report.tokens_after = self._view_tokens(cache)
            report.reason = f"compacted {len(compacted)} events" if compacted else "nothing compactable"
            return report
        return await self._summarize_session(sid, cache, report, live, structural, docs, compacted, why)

    async def _summarize_session(
        self,
        sid: str,
        cache: _SessionCache,
        report: ContextReport,
        live: builtins.list[Record],
        structural: builtins.list[Message],
        docs: dict[str, dict[str, Any]],
        compacted: builtins.list[str],
        why: str,
    ) -> ContextReport:
        cut = self._summary_cut(structural)
        pinned = self._turn_opener(structural, cut)
        cover = [r for i, r in enumerate(live[:cut]) if r.doc["event"]["message"]["role"] != "system" and i != pinned]
        if not cover:
            if docs:
                await self._commit(sid, cache, [(k, d, cache.records[k].version) for k, d in docs.items()])
            report.compacted_ids = compacted
            report.tokens_after = self._view_tokens(cache)
            report.reason = (
                f"{why}; but nothing outside the newest {self.thresholds.keep_recent_count} events can be summarized"
            )
            return report
        report.tier = "summarization"
        report.reason = why
        originals = [original_event(docs.get(r.key, r.doc)["event"]) for r in cover]
        active = self._summary_records(cache)
        previous = [StructuredSummary.model_validate(r.doc["summary"]) for r in active]
        try:
            raw = await self._summarize(originals, previous)
            summary = fit_summary(coerce_summary(raw, originals), self.counter.count_text, self.summary_max_tokens)
        except Exception as exc:  # any summarizer failure must leave the session untouched
            report.tier = "summarization"
            report.failure = f"summarizer failed: {type(exc).__name__}: {exc}"
            report.reason = f"{why}; nothing was written"
            return report
        superseded = [r for r in active if r.key[len(SUMMARY_PREFIX) :] in set(summary.supersedes)]
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
        report.compacted_ids = [c for c in compacted if EVENT_PREFIX + c not in {r.key for r in cover}]
        report.summarized_ids = [_event_id(r) for r in cover]
        report.summary_id = summary.id
        report.tokens_after = self._view_tokens(cache)
        return report

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

    def _summary_cut(self, messages: builtins.list[Message]) -> int:
        """Index before which events may be summarized: keep the newest events, never split a tool unit."""
        cut = max(0, len(messages) - self.thresholds.keep_recent_count)
        for unit in group_units(messages):
            if unit.start < cut < unit.end or (unit.kind == "pending" and unit.start < cut):
                cut = unit.start
        return cut

    @staticmethod
    def _turn_opener(messages: builtins.list[Message], cut: int) -> int | None:
        """Index of the user message to keep live when the events kept after ``cut`` do not start with one.

        Anthropic and Gemini reject a conversation whose first non-system message is not from the user, and no
        message may be invented, so the user request that opened the current turn stays in the view.
        """
        first_kept = next((m for m in messages[cut:] if m.role != "system"), None)
        if first_kept is None or first_kept.role == "user":
            return None
        return next((i for i in range(cut - 1, -1, -1) if messages[i].role == "user"), None)

    def _unit_kinds(self, messages: builtins.list[Message]) -> builtins.list[str]:
        kinds = [""] * len(messages)
        for unit in group_units(messages):
            for i in range(unit.start, unit.end):
                kinds[i] = unit.kind
        return kinds

    # -- cache and store plumbing -----------------------------------------------------------------------------

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

    def _cache(self, sid: str) -> _SessionCache:
        cache = self._caches.get(sid)
        if cache is None:
            cache = self._caches[sid] = _SessionCache()
        return cache

    async def _reload(self, sid: str, cache: _SessionCache) -> None:
        for _ in range(self.max_retries + 1):
            records = await self.store.list_records(self.namespace, sid)
            cache.records = {}
            head: Record | None = None
            for record in records:
                if record.key == HEAD_KEY:
                    head = record
                else:
                    self._put(cache, record)
            if head is None:
                try:
                    head = await self.store.add_record(self.namespace, sid, HEAD_KEY, {"type": "head"})
                except ConflictError:
                    continue
            cache.head_version = head.version
            cache.loaded = True
            cache.tokens = {k: v for k, v in cache.tokens.items() if k in cache.records}
            cache.messages = {k: v for k, v in cache.messages.items() if k in cache.records}
            return
        raise StorageError(f"session {sid!r}: could not create its head record; the store keeps refusing it")

    async def _refresh(self, sid: str, cache: _SessionCache) -> None:
        """Re-read the session if it was never read or another writer moved its head since."""
        if not cache.loaded:
            await self._reload(sid, cache)
            return
        head = await self.store.get_record(self.namespace, sid, HEAD_KEY)
        if head is None or head.version != cache.head_version:
            await self._reload(sid, cache)

    async def _commit(self, sid: str, cache: _SessionCache, updates: Sequence[RecordUpdate]) -> None:
        """Write ``updates`` and bump the head atomically; `ConflictError` if anyone wrote since we read."""
        batch = [*updates, (HEAD_KEY, {"type": "head"}, cache.head_version)]
        for record in await self.store.update_records(self.namespace, sid, batch):
            if record.key == HEAD_KEY:
                cache.head_version = record.version
            else:
                self._put(cache, record)

    async def _announce_write(self, sid: str, cache: _SessionCache) -> None:
        """Bump the head after an add so other objects notice it; re-read first if someone else wrote."""
        for attempt in range(self.max_retries + 1):
            try:
                await self._commit(sid, cache, [])
                return
            except ConflictError:
                await _backoff(attempt)
                await self._reload(sid, cache)
        logger.warning("session %r: head bump kept conflicting; other writers will see the event on re-read", sid)

    def _put(self, cache: _SessionCache, record: Record) -> None:
        kind = record.doc.get("type")
        visible = (kind == "event" and not record.doc.get("summary_id")) or (
            kind == "summary" and record.doc.get("status") == "active"
        )
        if visible:
            cache.records[record.key] = record
        else:
            cache.records.pop(record.key, None)
            cache.tokens.pop(record.key, None)
            cache.messages.pop(record.key, None)

    def _live(self, cache: _SessionCache) -> builtins.list[Record]:
        return sorted((r for r in cache.records.values() if r.doc.get("type") == "event"), key=lambda r: r.seq)

    def _summary_records(self, cache: _SessionCache) -> builtins.list[Record]:
        return sorted((r for r in cache.records.values() if r.doc.get("type") == "summary"), key=lambda r: r.seq)

    def _summaries(self, cache: _SessionCache) -> builtins.list[StructuredSummary]:
        return [StructuredSummary.model_validate(r.doc["summary"]) for r in self._summary_records(cache)]

    def _doc_tokens(self, doc: Mapping[str, Any]) -> int:
        if doc.get("type") == "summary":
            text = StructuredSummary.model_validate(doc["summary"]).render()
            return self.counter.count_message(Message.text_message(text, role="system", timestamp=None))
        # Count exactly what `messages()` sends for this event, so the thresholds judge the real prompt.
        return self.counter.count_message(_view_message(doc))

    def _tokens_of(self, cache: _SessionCache, record: Record) -> int:
        cached = cache.tokens.get(record.key)
        if cached is not None and cached[0] == record.version:
            return cached[1]
        count = self._doc_tokens(record.doc)
        cache.tokens[record.key] = (record.version, count)
        return count

    def _message_of(self, cache: _SessionCache, record: Record) -> Message:
        """The event's structural message (for tool-unit grouping), cached per record version."""
        cached = cache.messages.get(record.key)
        if cached is not None and cached[0] == record.version:
            return cached[1]
        message = event_to_message(record.doc["event"])
        cache.messages[record.key] = (record.version, message)
        return message

    def _view_tokens(self, cache: _SessionCache) -> int:
        return sum(self._tokens_of(cache, r) for r in cache.records.values())


def _view_message(doc: Mapping[str, Any]) -> Message:
    """The message sent for a stored event: the original `Message` while uncompacted, else the compacted form."""
    source = doc.get("source")
    if source is not None and not is_compacted(doc["event"]):
        return Message.model_validate(source)
    return event_to_message(doc["event"])


def event_json(event: Mapping[str, Any]) -> str:
    """Canonical JSON of an event, for comparing what was stored with what was added."""
    return json.dumps(event, ensure_ascii=False, sort_keys=True)


__all__ = ["DEFAULT_NAMESPACE", "DEFAULT_SESSION", "BaseMemory", "EventDict", "EventList", "event_json"]
