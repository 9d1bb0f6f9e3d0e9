"""Probes the Window carry tests share: a thread's in-memory record, and the states a manager's trims return."""

from __future__ import annotations

from typing import Any

from windowkeeper import Window


def thread_memory(window: Window[Any, Any]) -> Any:
    """The default thread's `ThreadMemory` (what a Window carries between calls)."""
    memory = window._threads.peek(window._thread_id(None))
    assert memory is not None
    return memory


def recording_trims(manager: Any) -> list[Any]:
    """The states ``manager.atrim_context`` returns, recorded in order (a view is a state's context less the head)."""
    seen: list[Any] = []
    original = manager.atrim_context

    async def atrim(state: Any) -> Any:
        out = await original(state)
        seen.append(out)
        return out

    manager.atrim_context = atrim
    return seen
