"""Gateway thread data no recognition index record leads to: found and deleted (``windowkeeper store prune``).

A gateway now deletes a thread's data when it evicts the last index record that leads to it (`Recognizer`), but
a store that a gateway filled before that keeps the data of every conversation it ever served, and so does one
whose process was killed with orphans pending. `find_orphans` reads the whole store once (`SessionStore.raw_rows`,
as ``store check`` does), collects the threads the index's head records list, and reports every other gateway
thread (store id ``wk-<scope>-<name>``) that holds data, with its row count and bytes. `prune` deletes them after
reading the store a second time: a thread whose index record appeared meanwhile (a conversation that just began
on a running gateway) is kept.

A thread a client names itself (``X-Windowkeeper-Thread`` with a name the gateway did not make) never has an index
record; such threads are kept unless ``named`` is set. Only the gateway's threads are looked at: data a library
user stores under other thread ids is never touched.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from ..errors import StorageError
from ..storage import SessionStore
from ..storage.base import RawRow, decode_doc
from .identity import INDEX_NAMESPACE, internal_id, is_head_key, scope_of_session
from .threads import THREAD_NAMESPACES, delete_thread_data

GATEWAY_PREFIX = "wk-"
_GENERATED = re.compile(r"t[0-9a-f]{20}")
"""The names `Recognizer.new_name` makes; any other name was chosen by a client."""


@dataclass(frozen=True)
class Orphan:
    """One gateway thread's data that no index record leads to."""

    thread: str
    """The thread's store id (``wk-<scope>-<name>``)."""
    name: str
    rows: int
    bytes: int
    named: bool
    """Whether a client chose the name (``X-Windowkeeper-Thread``): kept unless asked for."""


def _size(body: object) -> int:
    if isinstance(body, bytes):
        return len(body)
    if isinstance(body, str):
        return len(body.encode("utf-8", "surrogatepass"))
    return 0


def _name_of(thread: str) -> str:
    # wk-<scope>-<name>: a scope is hex digits or "anonymous", never a dash
    return thread.split("-", 2)[2] if thread.count("-") >= 2 else thread


def _scan(rows: Iterable[RawRow]) -> tuple[set[str], dict[str, list[RawRow]]]:
    """The threads the index's head records list, and every gateway thread's rows."""
    led: set[str] = set()
    data: dict[str, list[RawRow]] = {}
    for row in rows:
        if row.kind == "record" and len(row.scope) == 2:
            namespace, session = row.scope
            if namespace == INDEX_NAMESPACE:
                if is_head_key(session, row.key):
                    if not isinstance(row.body, str | bytes):
                        raise StorageError(
                            f"index record {row.key!r} of session {session!r} is not JSON text; run "
                            "`windowkeeper store check URL --remove` first, then prune"
                        )
                    doc = decode_doc(row.body, key=row.key, what=f"index session {session!r}: record")
                    scope = scope_of_session(session)
                    led.update(internal_id(scope, str(name)) for name in doc.get("threads", {}))
                continue
            if namespace in THREAD_NAMESPACES and session.startswith(GATEWAY_PREFIX):
                data.setdefault(session, []).append(row)
        elif row.kind in ("message", "state") and row.scope and row.scope[0].startswith(GATEWAY_PREFIX):
            data.setdefault(row.scope[0], []).append(row)
    return led, data


async def find_orphans(store: SessionStore, *, named: bool = False) -> list[Orphan]:
    """Every gateway thread holding data that no index record leads to, largest first; threads a client named
    are listed only with ``named``. An unreadable index record raises `StorageError` (the index could not be
    read whole, so nothing can be called an orphan)."""
    led, data = _scan(await store.raw_rows())
    out: list[Orphan] = []
    for thread, rows in data.items():
        if thread in led:
            continue
        name = _name_of(thread)
        chosen = _GENERATED.fullmatch(name) is None
        if chosen and not named:
            continue
        out.append(Orphan(thread, name, len(rows), sum(_size(r.body) for r in rows), chosen))
    out.sort(key=lambda o: (-o.bytes, o.thread))
    return out


async def prune(store: SessionStore, orphans: Iterable[Orphan]) -> list[Orphan]:
    """Delete the data of ``orphans`` that are still orphans on a second read of the store; return those deleted."""
    led, _ = _scan(await store.raw_rows())
    deleted: list[Orphan] = []
    for orphan in orphans:
        if orphan.thread in led:
            continue
        await delete_thread_data(store, orphan.thread)
        deleted.append(orphan)
    return deleted
