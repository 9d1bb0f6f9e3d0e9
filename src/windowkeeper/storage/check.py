"""Find (and optionally remove) the stored rows a store cannot give back: the repair path for edited data.

Reads never guess around a bad row: they raise `StorageError` naming it, and only what depends on that row
(its thread's log, its session's view) is unreadable. `check_store` is how an operator gets such a thread or
session back: it reads every row undecoded (`SessionStore.raw_rows`), decodes each the way a read would (plus
the memory's document check, passed as ``doc_check``), lists what fails and, with ``remove=True``, deletes
exactly those rows. The CLI front end is ``windowkeeper store check URL [--remove]``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from ..errors import StorageError
from .base import (
    DocCheck,
    RawRow,
    SessionStore,
    decode_message,
    decode_state,
    message_key,
    session_origin,
    stored_record,
)

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Finding:
    """One unusable row: what it is, where it lives, why a read refuses it, and whether it was removed."""

    kind: str
    scope: tuple[str, ...]
    key: str
    position: int
    problem: str
    removed: bool = False

    @property
    def where(self) -> str:
        """``thread 't1' message #3``, ``state of thread 't1'`` or ``record 'e:7' of session 'ns'/'s1'``."""
        if self.kind == "message":
            return f"thread {self.scope[0]!r} message #{self.position}"
        if self.kind == "state":
            return f"state of thread {self.scope[0]!r}"
        if self.kind == "record":
            return f"record {self.key!r} of session {self.scope[0]!r}/{self.scope[1]!r}"
        return f"key {self.key!r}"


def row_problem(store: SessionStore, row: RawRow, doc_check: DocCheck | None = None) -> str | None:
    """Why a read of ``row`` would fail (the `StorageError` text it would raise), or ``None`` when it reads back."""
    if row.problem is not None:
        return row.problem
    origin = store.describe()
    try:
        if row.kind == "message":
            message = decode_message(row.scope[0], row.body, row.position, origin=origin)  # type: ignore[arg-type]
            if row.key and row.key != message_key(message.message_id):
                return f"the row's key {row.key} does not match its message id {message.message_id!r}"
        elif row.kind == "state":
            decode_state(row.scope[0], row.body, origin=origin)  # type: ignore[arg-type]
        elif row.kind == "record":
            where = session_origin(origin, row.scope[0], row.scope[1])
            record = stored_record(row.key, row.seq, row.version, row.body, origin=where)  # type: ignore[arg-type]
            if doc_check is not None:
                record.checked(doc_check)
            record.decoded()
    except StorageError as exc:
        return str(exc)
    return None


async def check_store(
    store: SessionStore,
    *,
    doc_check: DocCheck | None = None,
    remove: bool = False,
) -> list[Finding]:
    """Every row of ``store`` a read would refuse, in store order; with ``remove`` each is deleted (and logged)."""
    findings: list[Finding] = []
    for row in await store.raw_rows():
        problem = row_problem(store, row, doc_check)
        if problem is None:
            continue
        removed = False
        if remove:
            removed = await store.remove_raw(row)
        finding = Finding(row.kind, row.scope, row.key, row.position, problem, removed)
        if removed:
            logger.warning("removed an unreadable row: %s", problem)
        findings.append(finding)
    return findings


__all__ = ["Finding", "check_store", "row_problem"]
