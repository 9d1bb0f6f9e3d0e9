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
    assert all(c["summary"] and c["summary"] in c["messages"][0]["content"] for c in second["calls"])
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
    assert all(c["summary"] and c["summary"] in c["messages"][0]["content"] for c in second["calls"])
    items, _ = conversation()
    originals = {m["tool_call_id"]: m for m in items if m["role"] == "tool"}
    assert second["restored"]
    for restored in second["restored"]:
        assert restored == originals[restored["tool_call_id"]]


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
