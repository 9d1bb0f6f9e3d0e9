"""Reading the memory's stored documents: the shape every record must have before the memory gives it a meaning.

A store hands back JSON that anyone with database access could have edited, copied from another session or
truncated. The memory indexes straight into its documents (``doc["event"]["message"]["id"]``,
``int(doc["live_from"])``), so an unchecked bad record used to surface as a bare ``KeyError`` or
``OverflowError`` from deep inside a reload, naming nothing, on every call of the session. Each record read for
the memory is checked here instead (`check_doc`, attached with `Record.checked`, so a body the memory never
decodes is never checked either): a record that does not have its kind's shape raises `StorageError` naming the
store, prefix, session and key, only when something needs that record, and other sessions never notice.
``windowkeeper store check URL --remove`` lists such records and removes them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from ..errors import StorageError
from ..messages import ROLES
from ..storage import Record, SessionStore
from ..storage.base import MAX_COUNTER
from .events import COMPACTION_KEY, SOURCE_TEXT_KEY
from .structured import StructuredSummary
from .view import ARCHIVE_KEY, ARCHIVE_PREFIX, EVENT_PREFIX, HEAD_KEY, SUMMARY_PREFIX, TOKENS_KEY

SUMMARY_STATUSES = ("pending", "active", "superseded", "abandoned")


def _is_int(value: object, low: int = 0) -> bool:
    return type(value) is int and low <= value <= MAX_COUNTER


def _head_problem(doc: dict[str, Any]) -> str | None:
    if doc.get("type") != "head":
        return f"type is {doc.get('type')!r}, expected 'head'"
    if not _is_int(doc.get("live_from", 1), 1):  # a head without it reads everything (live_from 1)
        return f"live_from is {doc.get('live_from')!r}, not an integer from 1 to {MAX_COUNTER}"
    keep = doc.get("keep", [])
    if not isinstance(keep, list) or not all(isinstance(k, str) and k for k in keep):
        return f"keep is {keep!r}, not a list of record keys"
    return None


def _source_problem(source: object, ref: object) -> str | None:
    if source is None:
        return None if ref is None else f"{SOURCE_TEXT_KEY} is {ref!r} but the event has no source"
    if not isinstance(source, dict) or source.get("role") not in ROLES or not isinstance(source.get("content"), list):
        return "source is not a stored Message (a role and a content list)"
    if ref is None:
        return None
    blocks = source["content"]
    if (
        not isinstance(ref, list)
        or len(ref) != 2
        or not _is_int(ref[0])
        or not isinstance(ref[1], str)
        or ref[0] >= len(blocks)
        or not isinstance(blocks[ref[0]], dict)
    ):
        return f"{SOURCE_TEXT_KEY} is {ref!r}, not [block index, field] of the source's content"
    return None


def _event_problem(key: str, doc: dict[str, Any]) -> str | None:
    if doc.get("type") != "event":
        return f"type is {doc.get('type')!r}, expected 'event'"
    event = doc.get("event")
    message = event.get("message") if isinstance(event, dict) else None
    if not isinstance(event, dict) or not isinstance(message, dict):
        return "event is not a dict with a 'message' dict"
    event_id = message.get("id")
    if type(event_id) not in (str, int) or EVENT_PREFIX + str(event_id) != key:
        return f"message id {event_id!r} does not match the record key (a record of another event?)"
    if message.get("role") not in ROLES:
        return f"message role is {message.get('role')!r}, not one of {', '.join(ROLES)}"
    if not isinstance(message.get("content", ""), str | None):
        return f"message content is a {type(message.get('content')).__name__}, not text"
    if not isinstance(message.get("tool_calls") or [], list):
        return "message tool_calls is not a list"
    if not isinstance(message.get("tool_call_ids") or [], list):
        return "message tool_call_ids is not a list"
    state = event.get("state", {})
    if not isinstance(state, dict):
        return f"event state is a {type(state).__name__}, not a dict"
    info = state.get(COMPACTION_KEY)
    if info is not None:
        archived = isinstance(info, dict) and info.get("archived") is True
        if not isinstance(info, dict) or not (isinstance(info.get("original_content"), str) or archived):
            return f"state[{COMPACTION_KEY!r}] holds neither the original content nor an archive mark"
        if archived and not isinstance(doc.get(ARCHIVE_KEY), str):
            return f"the event is marked archived but {ARCHIVE_KEY!r} names no archive record"
    if not isinstance(doc.get("summary_id"), str | None):
        return f"summary_id is {doc.get('summary_id')!r}, not a summary id or null"
    if not isinstance(doc.get("pinned", False), bool):
        return f"pinned is {doc.get('pinned')!r}, not true or false"
    tokens = doc.get(TOKENS_KEY)
    if tokens is not None and not (
        isinstance(tokens, dict) and isinstance(tokens.get("counter"), str) and _is_int(tokens.get("n"))
    ):
        return f"{TOKENS_KEY} is {tokens!r}, not {{'counter': name, 'n': count}}"
    if not isinstance(doc.get(ARCHIVE_KEY), str | None):
        return f"{ARCHIVE_KEY} is {doc.get(ARCHIVE_KEY)!r}, not an archive key"
    return _source_problem(doc.get("source"), doc.get(SOURCE_TEXT_KEY))


def _summary_problem(key: str, doc: dict[str, Any]) -> str | None:
    if doc.get("type") != "summary":
        return f"type is {doc.get('type')!r}, expected 'summary'"
    if doc.get("status") not in SUMMARY_STATUSES:
        return f"status is {doc.get('status')!r}, not one of {', '.join(SUMMARY_STATUSES)}"
    try:
        summary = StructuredSummary.model_validate(doc.get("summary"))
    except ValidationError as exc:
        return f"summary does not validate: {exc.errors()[0]['msg']} at {exc.errors()[0]['loc']}"
    if SUMMARY_PREFIX + summary.id != key:
        return f"summary id {summary.id!r} does not match the record key (a record of another summary?)"
    return None


def _archive_problem(doc: dict[str, Any]) -> str | None:
    if doc.get("type") != "archive":
        return f"type is {doc.get('type')!r}, expected 'archive'"
    items = doc.get("items")
    if not isinstance(items, dict):
        return "items is not a dict of archived originals"
    for name, item in items.items():
        if not isinstance(item, dict) or not isinstance(item.get("original_content"), str):
            return f"archived item {name!r} holds no original content"
        problem = _source_problem(item.get("source"), item.get(SOURCE_TEXT_KEY))
        if problem is not None:
            return f"archived item {name!r}: {problem}"
    return None


def doc_problem(key: str, doc: dict[str, Any]) -> str | None:
    """What makes ``doc`` unusable as the memory record ``key``, or ``None`` when it has its kind's shape.

    The kind comes from the key (the memory names every record by kind); keys of no known kind are left alone
    (the memory never reads them as anything).
    """
    if key == HEAD_KEY:
        return _head_problem(doc)
    if key.startswith(EVENT_PREFIX):
        return _event_problem(key, doc)
    if key.startswith(SUMMARY_PREFIX):
        return _summary_problem(key, doc)
    if key.startswith(ARCHIVE_PREFIX):
        return _archive_problem(doc)
    return None


def bad_record(record: Record, problem: str) -> StorageError:
    where = f"{record.origin}: " if record.origin else ""
    return StorageError(
        f"{where}memory record {record.key!r} is unusable: {problem} (edited or foreign data); list and remove "
        "bad records with `windowkeeper store check URL --remove`",
    )


def check_doc(record: Record, doc: dict[str, Any]) -> None:
    """`Record.checked` hook: `StorageError` naming the record when its doc lacks its kind's shape."""
    problem = doc_problem(record.key, doc)
    if problem is not None:
        raise bad_record(record, problem)


def checked(records: Sequence[Record]) -> list[Record]:
    return [r.checked(check_doc) for r in records]


class StoredDocs:
    """The memory's reads of its store, each record checked by `check_doc` (on decode, for undecoded ones)."""

    __slots__ = ("store",)

    def __init__(self, store: SessionStore) -> None:
        self.store = store

    async def get_record(self, namespace: str, session_id: str, key: str) -> Record | None:
        record = await self.store.get_record(namespace, session_id, key)
        return None if record is None else record.checked(check_doc)

    async def get_records(self, namespace: str, session_id: str, keys: Sequence[str]) -> list[Record]:
        return checked(await self.store.get_records(namespace, session_id, keys))

    async def list_records(self, namespace: str, session_id: str) -> list[Record]:
        return checked(await self.store.list_records(namespace, session_id))

    async def list_records_since_skipping(
        self, namespace: str, session_id: str, seq: int, skip_prefix: str
    ) -> list[Record]:
        return checked(await self.store.list_records_since_skipping(namespace, session_id, seq, skip_prefix))


__all__ = ["StoredDocs", "check_doc", "doc_problem"]
