"""What a session's call writes to its store: what is new, and nothing the next call or a reload will not read."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from windowkeeper import SQLiteStore
from windowkeeper.integrations import Window
from windowkeeper.integrations._threads import HEAD_KEY, HEAD_NAMESPACE
from windowkeeper.llm.formats import to_anthropic, to_responses_input
from windowkeeper.testing.sessiongen import generate_session

SESSION = generate_session(40, seed=2).messages
BUDGET = 8000


async def _head(store: SQLiteStore, thread_id: str) -> dict[str, Any]:
    record = await store.get_record(HEAD_NAMESPACE, thread_id, HEAD_KEY)
    assert record is not None
    return record.doc


def _user_points(items: list[dict[str, Any]]) -> list[int]:
    """Lengths of the list after each user message past the first: where a run adds its items and reads again."""
    return [k + 1 for k, item in enumerate(items) if item.get("role") == "user"][1:]


async def test_a_session_head_does_not_carry_the_system_text(tmp_path: Path) -> None:
    """The head of a Responses thread held the whole system text (the caller's prompt and the running summary,
    several kilobytes) on every save, though only Anthropic's cache breakpoints ever read it."""
    pytest.importorskip("agents")
    from windowkeeper.integrations.openai_agents import WindowkeeperSession

    _, items = to_responses_input(SESSION)  # the system prompt is the first item
    assert items[0]["role"] == "system"
    store = SQLiteStore(tmp_path / "s.db")
    session = WindowkeeperSession("conv", store, manager_or_budget=BUDGET)
    try:
        done = 0
        for k in _user_points(items):
            await session.add_items(items[done:k])
            done = k
            view = await session.get_items()
        assert session.last_result is not None and session.last_result.summary  # the view was cut
        assert items[0] in view  # the caller's system item is served, so the window's system text holds it
        head = await _head(store, "conv")
        assert head["sent_system"] is None and head["sent"] == []
    finally:
        await session.aclose()
        await store.close()


def test_anthropic_breakpoints_after_a_reload_match_an_uninterrupted_window(tmp_path: Path) -> None:
    """Anthropic's head keeps the system text beside the sent fingerprints: a window that reads the thread back
    before every call marks the same cache breakpoints as one that never stopped."""
    system, items = to_anthropic(SESSION)
    text = system if isinstance(system, str) else None
    points = [k for k, m in enumerate(items) if m["role"] == "assistant"]
    live = Window(budget=BUDGET, format="anthropic", thread_id="t")
    path = tmp_path / "a.db"
    heads_with_system = 0
    for k in points:
        expected = live.fit(items[:k], system=text)
        reloaded = Window(budget=BUDGET, format="anthropic", thread_id="t", store=str(path))
        try:
            result = reloaded.fit(items[:k], system=text)
        finally:
            reloaded.close()
        assert (result.system, result.messages) == (expected.system, expected.messages)
        store = SQLiteStore(path)
        try:
            head = asyncio.run(_head(store, "t"))
        finally:
            asyncio.run(store.close())
        heads_with_system += head["sent_system"] is not None and bool(head["sent"])
    assert heads_with_system == len(points)
