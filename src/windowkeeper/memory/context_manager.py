"""`MemoryContextManager`: the three-tier memory as the context manager of a `StateGraph` / `Agent`.

The graph hands a manager the state before each model call (and when it persists a run). This adapter adds the
messages of ``state.context`` the memory has not seen yet as events of the thread's session, lets the memory's
tiers run, and puts the memory's view back: live events into ``state.context``, the structured summary (rendered
once) into ``state.context_summary``, which the `Agent` sends in the system zone. History stays in the memory's
store, so a durable memory (`SQLiteMemory`, `TDAIMemory`) carries a thread across processes.
"""

from __future__ import annotations

import logging
from typing import Any

from .._bridge import run_sync
from ..context.base import BaseContextManager
from ..errors import ConfigurationError
from ..state import AgentState
from .backends import InMemoryMemory
from .base import DEFAULT_SESSION, BaseMemory

logger = logging.getLogger(__name__)

SUMMARY_ID_PREFIX = "summary:"


class MemoryContextManager(BaseContextManager[AgentState]):
    """Runs a `BaseMemory` as a graph's context manager (``StateGraph(context_manager=MemoryContextManager(...))``).

    ``memory`` defaults to an `InMemoryMemory` built from ``memory_options`` (e.g. ``thresholds=``). The session
    is ``session_id`` when given, else the run's ``thread_id``, so each thread has its own session.
    """

    def __init__(
        self, memory: BaseMemory[Any] | None = None, *, session_id: str | None = None, **memory_options: Any
    ) -> None:
        if memory is not None and memory_options:
            raise ConfigurationError(
                f"pass either a memory or options to build one, not both (got {sorted(memory_options)})",
            )
        if memory is not None and not isinstance(memory, BaseMemory):
            raise ConfigurationError(f"memory must be a BaseMemory (e.g. SQLiteMemory(path)), got {memory!r}")
        if session_id is not None and (not isinstance(session_id, str) or not session_id):
            raise ConfigurationError(f"session_id must be a non-empty string or None, got {session_id!r}")
        self.memory: BaseMemory[Any] = memory if memory is not None else InMemoryMemory(**memory_options)
        self.session_id = session_id

    def _session(self, state: AgentState) -> str:
        return self.session_id or state.execution_meta.thread_id or DEFAULT_SESSION

    def trim_context(self, state: AgentState) -> AgentState:
        return run_sync(
            lambda: self.atrim_context(state),
            caller="MemoryContextManager.trim_context()",
            instead="await manager.atrim_context(state)",
        )

    async def atrim_context(self, state: AgentState) -> AgentState:
        before = self._begin_trim(state)
        sid = self._session(state)
        known = {str(m.message_id) for m in await self.memory.messages(sid)}
        summaries_before = len(await self.memory.summaries(sid))
        for message in state.context:
            mid = str(message.message_id)
            if mid in known or mid.startswith(SUMMARY_ID_PREFIX):
                continue
            await self.memory.add(message, session_id=sid)
            known.add(mid)
        view = await self.memory.messages(sid)
        summaries = await self.memory.summaries(sid)
        state.context = [m for m in view if not str(m.message_id).startswith(SUMMARY_ID_PREFIX)]
        if summaries:
            state.context_summary = "\n\n".join(s.render() for s in summaries)
        self._finish_trim(before, state, summaries_made=max(0, len(summaries) - summaries_before))
        return state

    async def aclose(self) -> None:
        """Close the memory (and its store, if the memory opened it)."""
        await self.memory.close()


__all__ = ["MemoryContextManager"]
