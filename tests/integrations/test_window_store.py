"""`Window(store=...)`: a new process (or a new Window) continues the thread, restore included."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

from windowkeeper import SQLiteStore
from windowkeeper.llm.formats import from_openai_chat
from windowkeeper.storage.url import with_prefix

from .window_child import conversation, run

ROOT = Path(__file__).resolve().parents[2]


def _child(store: str, first: int, last: int, pointers: list[Any] | None = None) -> dict[str, Any]:
    args = [sys.executable, "-m", "tests.integrations.window_child", store, str(first), str(last)]
    if pointers is not None:
        args.append(json.dumps(pointers))
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"}
    done = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=240, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    out: dict[str, Any] = json.loads(done.stdout)
    return out


def _pointers(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    seen: dict[str, dict[str, Any]] = {}
    for call in calls:
        for m in call["messages"]:
            if m["role"] == "tool" and "cleared from context" in m["content"]:
                seen.setdefault(m["tool_call_id"], m)
    return list(seen.values())


def test_a_new_process_continues_the_thread_from_a_sqlite_file(tmp_path: Path) -> None:
    _, points = conversation()
    split = len(points) // 2
    uninterrupted = run(None, 0, len(points), [])["calls"]
    store = str(tmp_path / "window.db")
    first = _child(store, 0, split)["calls"]
    assert first == uninterrupted[:split]
    pointers = _pointers(first)
    summary = first[-1]["summary"]
    assert pointers and summary
    second = _child(store, split, len(points), pointers)
    # the new process continues where the first stopped: its first call is the call an uninterrupted process makes
    # (same view, same summary) and keeps the prefix of the last call before the restart
    resumed, expected = second["calls"][0], uninterrupted[split]
    assert (resumed["messages"], resumed["summary"]) == (expected["messages"], expected["summary"])
    assert resumed["summary"].startswith(summary) or resumed["summary"] == summary
    before, after = first[-1]["messages"], resumed["messages"]
    if resumed["summary"] == summary:
        assert after[: len(before)] == before
    # later calls go on summarizing the same thread (recall passages may be chosen differently after a restart:
    # the recall index is rebuilt in another order)
    # (the caller's own system message leaves unchanged; the summary is a system message of its own after it)
    assert all(
        c["summary"] and any(c["summary"] in m["content"] for m in c["messages"] if m["role"] == "system")
        for c in second["calls"]
    )
    items, _ = conversation()
    originals = {m["tool_call_id"]: m for m in items if m["role"] == "tool"}
    for pointer, restored in zip(pointers, second["restored"], strict=True):
        assert json.dumps(restored) == json.dumps(originals[pointer["tool_call_id"]])


def _continues_in_a_new_window(url: str) -> None:
    _, points = conversation()
    split = len(points) // 2
    uninterrupted = run(None, 0, len(points), [])["calls"]
    first = run(url, 0, split, [])["calls"]
    second = run(url, split, len(points), _pointers(first))
    resumed, expected = second["calls"][0], uninterrupted[split]
    assert (resumed["messages"], resumed["summary"]) == (expected["messages"], expected["summary"])
    # (the caller's own system message leaves unchanged; the summary is a system message of its own after it)
    assert all(
        c["summary"] and any(c["summary"] in m["content"] for m in c["messages"] if m["role"] == "system")
        for c in second["calls"]
    )
    items, _ = conversation()
    originals = {m["tool_call_id"]: m for m in items if m["role"] == "tool"}
    assert second["restored"]
    for restored in second["restored"]:
        assert restored == originals[restored["tool_call_id"]]


def _head(store: SQLiteStore, thread_id: str) -> dict[str, Any] | None:
    """The thread's committed head (a versioned record of its own; older windowkeepers kept it as the state)."""
    from windowkeeper.integrations._threads import HEAD_KEY, HEAD_NAMESPACE

    record = asyncio.run(store.get_record(HEAD_NAMESPACE, thread_id, HEAD_KEY))
    return record.doc if record is not None else None


def _put_head(store: SQLiteStore, thread_id: str, head: dict[str, Any]) -> None:
    from windowkeeper.integrations._threads import HEAD_KEY, HEAD_NAMESPACE

    asyncio.run(store.update_record(HEAD_NAMESPACE, thread_id, HEAD_KEY, head))


def _cleanup(url: str) -> None:
    from windowkeeper.integrations import Window

    window = Window(budget=6000, store=url, thread_id="t-restart")
    try:
        window.delete_thread()
    finally:
        window.close()


def test_postgres_store_continues_the_thread(postgres_server: str) -> None:
    url = with_prefix(postgres_server, f"wkwin_{uuid.uuid4().hex[:10]}")
    try:
        _continues_in_a_new_window(url)
    finally:
        _cleanup(url)


def test_redis_store_continues_the_thread(redis_server: str) -> None:
    url = with_prefix(redis_server, f"wkwin_{uuid.uuid4().hex[:10]}")
    try:
        _continues_in_a_new_window(url)
    finally:
        _cleanup(url)


def test_the_store_keeps_the_full_history(tmp_path: Path) -> None:
    items, points = conversation()
    run(str(tmp_path / "h.db"), 0, len(points), [])

    async def load() -> list[Any]:
        store = SQLiteStore(tmp_path / "h.db")
        try:
            return await store.load_messages("t-restart")
        finally:
            await store.close()

    logged = asyncio.run(load())
    assert len(logged) == points[-1]
    assert [m.text() for m in logged] == [m.text() for m in from_openai_chat(items[: points[-1]])]


def test_originals_in_memory_are_only_those_the_view_points_to_and_old_ones_come_from_the_store(
    tmp_path: Path,
) -> None:
    from windowkeeper.integrations import Window
    from windowkeeper.integrations._threads import view_restore_keys

    items, points = conversation()
    window = Window(budget=6000, store=str(tmp_path / "w.db"), thread_id="bounded")
    try:
        seen: dict[str, dict[str, Any]] = {}
        for k in points:
            result = window.fit(items[:k])
            for m in result.messages:
                if m["role"] == "tool" and "cleared from context" in m["content"]:
                    seen.setdefault(m["tool_call_id"], m)
            memory = window._threads["bounded"]
            assert set(memory.originals) <= view_restore_keys(memory.view)
            assert set(memory.original_bytes) == set(memory.originals)
        originals = {m["tool_call_id"]: m for m in items if m["role"] == "tool"}
        gone = [p for p in seen.values() if f"call:{p['tool_call_id']}" not in window._threads["bounded"].originals]
        assert gone, "some pointers should have left the view"
        for pointer in gone:
            assert window.restore(pointer) == originals[pointer["tool_call_id"]]
    finally:
        window.close()


def test_without_a_store_the_originals_kept_in_memory_are_bounded(monkeypatch: Any) -> None:
    from windowkeeper.integrations import Window, _threads

    monkeypatch.setattr(_threads, "DEFAULT_OFFLOAD_CACHE_BYTES", 4000)
    items, points = conversation()
    window = Window(budget=6000, thread_id="bounded")
    try:
        for k in points:
            window.fit(items[:k])
            memory = window._threads["bounded"]
            live = _threads.view_restore_keys(memory.view)
            assert sum(b for key, b in memory.original_bytes.items() if key not in live) <= 4000
            assert set(memory.original_bytes) == set(memory.originals)
    finally:
        window.close()


def test_each_call_saves_what_is_new_not_the_view(tmp_path: Path) -> None:
    """The state is a delta: each call writes at most one view record, holding only the messages that entered the
    view; the head refers to them; spare records are reused, so the record count stays about the view's size."""
    from windowkeeper.integrations import Window
    from windowkeeper.integrations._threads import VIEW_NAMESPACE

    store = SQLiteStore(tmp_path / "delta.db")
    writes: list[int] = []
    add, update = store.add_record, store.update_records

    async def counted_add(namespace: str, session_id: str, key: str, doc: dict[str, Any]) -> Any:
        if namespace == VIEW_NAMESPACE:
            writes.append(len(doc["json"]))
        return await add(namespace, session_id, key, doc)

    async def counted_update(namespace: str, session_id: str, updates: Any) -> Any:
        if namespace == VIEW_NAMESPACE:
            writes.extend(len(doc["json"]) for _, doc, _ in updates)
        return await update(namespace, session_id, updates)

    store.add_record = counted_add  # type: ignore[method-assign]
    store.update_records = counted_update  # type: ignore[method-assign]
    items, points = conversation()
    window = Window(budget=6000, store=store, thread_id="delta")
    try:
        viewed = 0
        longest = 0
        for k in points:
            before = len(writes)
            window.fit(items[:k])
            assert len(writes) - before <= 1
            view = window._threads["delta"].view
            viewed += len(view)
            longest = max(longest, len(view))
        # a snapshot per call would have written every view message every call
        assert sum(writes) < viewed / 3
        head = _head(store, "delta")
        assert head is not None and head["version"] == 3
        # runs of refs, [record key, version, start, count]: about one per call that added to the view
        assert all(isinstance(ref, list) and len(ref) == 4 for ref in head["view"])
        assert sum(ref[3] for ref in head["view"]) == len(window._threads["delta"].view)
        assert len(head["view"]) <= len(points)
        # the summary is stored once as such and once inside the system text last sent
        assert len(json.dumps(head)) < 200 * len(head["view"]) + 2 * len(head["summary"] or "") + 2000
        records = asyncio.run(store.list_records(VIEW_NAMESPACE, "delta"))
        assert len(records) <= longest
    finally:
        window.close()


def test_a_version_1_snapshot_is_read_and_continued(tmp_path: Path) -> None:
    from windowkeeper.integrations import Window

    items, points = conversation()
    split = len(points) // 2
    plain = Window(budget=6000, thread_id="old")
    for k in points[: split + 1]:
        expected = plain.fit(items[:k])
    memory = plain._threads["old"]
    store = SQLiteStore(tmp_path / "v1.db")
    snapshot = {
        "version": 1,
        "format": "openai_chat",
        "source_count": memory.source_count,
        "source_digest": memory.source_digest,
        "summary": memory.summary,
        "scratchpad": memory.scratchpad,
        "view": [m.model_dump(mode="json") for m in memory.view],
        "sent": list(memory.sent),
        "sent_system": memory.sent_system,
        "recall_served": memory.recall_served,
    }
    # the plain window goes one call further; one reading the snapshot written before that call must match it
    expected = plain.fit(items[: points[split + 1]])
    asyncio.run(store.put_state("old", snapshot))
    window = Window(budget=6000, store=store, thread_id="old")
    try:
        resumed = window.fit(items[: points[split + 1]])
        assert resumed.summary == expected.summary
        assert len(resumed.messages) == len(expected.messages)
    finally:
        window.close()


def test_a_version_2_head_of_one_ref_per_message_is_read_and_continued(tmp_path: Path) -> None:
    from windowkeeper.integrations import Window

    items, points = conversation()
    store = SQLiteStore(tmp_path / "v2.db")
    first = Window(budget=6000, store=store, thread_id="v2")
    for k in points[:6]:
        first.fit(items[:k])
    first.close()
    head = _head(store, "v2")
    assert head is not None and head["version"] == 3
    singles = [[key, version, start + i] for key, version, start, count in head["view"] for i in range(count)]
    _put_head(store, "v2", {**head, "version": 2, "view": singles})
    plain = Window(budget=6000, thread_id="v2")
    for k in points[:6]:
        plain.fit(items[:k])
    window = Window(budget=6000, store=store, thread_id="v2")
    try:
        resumed = window.fit(items[: points[6]])
        reference = plain.fit(items[: points[6]])
        assert resumed.messages == reference.messages and resumed.summary == reference.summary
        rewritten = _head(store, "v2")
        assert rewritten is not None and rewritten["version"] == 3  # the next head is written in runs
    finally:
        window.close()


def test_a_head_whose_view_records_were_replaced_starts_the_thread_over(tmp_path: Path, caplog: Any) -> None:
    """A head whose view records another write replaced (a head an older windowkeeper saved without a
    compare-and-set while a second window wrote the thread): a reader sees the versions differ and manages the
    thread afresh, with a warning."""
    import logging

    from windowkeeper.integrations import Window
    from windowkeeper.integrations._threads import VIEW_NAMESPACE

    items, points = conversation()
    store = SQLiteStore(tmp_path / "stale.db")
    first = Window(budget=6000, store=store, thread_id="s")
    for k in points[:6]:
        first.fit(items[:k])
    head = _head(store, "s")
    assert head is not None
    key = head["view"][0][0]
    record = asyncio.run(store.get_record(VIEW_NAMESPACE, "s", key))
    assert record is not None
    asyncio.run(store.update_record(VIEW_NAMESPACE, "s", key, record.doc, expected_version=record.version))
    reader = Window(budget=6000, store=store, thread_id="s")
    try:
        with caplog.at_level(logging.WARNING, logger="windowkeeper.integrations._threads"):
            result = reader.fit(items[: points[6]])
        assert "another write replaced" in caplog.text
        assert result.messages and result.summary == Window(budget=6000).fit(items[: points[6]]).summary
    finally:
        reader.close()
        first.close()
