"""Adapters that let the replay drive every kind of context strategy the same way.

A strategy receives the messages produced since the previous model call and answers with the view it would send
now. Managers keep their trimmed state between calls, exactly as a graph persists it, so their cache behaviour is
measured as it would happen in production.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..context.base import BaseContextManager
from ..context.baselines import window_of
from ..memory.base import BaseMemory
from ..messages import Message
from ..state import AgentState, add_messages
from ..tokens import TokenCounter, default_counter
from ..units import group_units


@dataclass(frozen=True)
class View:
    """What one model call receives: messages in order, plus a summary placed in the system zone."""

    messages: list[Message]
    summary: str | None = None


class Strategy(Protocol):
    name: str

    async def step(self, new_messages: Sequence[Message]) -> View: ...


@dataclass
class FullHistory:
    """No management: every message ever produced is sent again."""

    name: str = "no management"
    _history: list[Message] = field(default_factory=list)

    async def step(self, new_messages: Sequence[Message]) -> View:
        self._history.extend(new_messages)
        return View(list(self._history))


@dataclass
class SlidingWindow:
    """The per-turn sliding window most agents use: the newest units that fit, recomputed before every call.

    The view is the one `sliding_window` gives for the whole history, but computed from the newest user unit at
    or before the previous window's start (plus the system messages before it): a longer history never keeps
    anything older, so the replay of a long session stays linear while the view is unchanged.
    """

    budget: int
    counter: TokenCounter | None = None
    name: str = "sliding window"
    _history: list[Message] = field(default_factory=list)
    _systems: list[Message] = field(default_factory=list)
    _start: int = 0
    _tokens: int = 0

    async def step(self, new_messages: Sequence[Message]) -> View:
        tc = self.counter if self.counter is not None else default_counter()
        self._history.extend(new_messages)
        self._tokens += sum(tc.count_message(m) for m in new_messages)
        if self._tokens + tc.count_messages([]) <= self.budget:
            return View(list(self._history))
        part = [*self._systems, *self._history[self._start :]]
        units = group_units(part)
        sizes = [sum(tc.count_message(m) for m in u.messages) for u in units]
        view, anchor = window_of(units, sizes, sum(sizes) + tc.count_messages([]), self.budget)
        moved = units[anchor].start - len(self._systems) if units else 0
        if moved > 0:
            self._systems.extend(m for m in self._history[self._start : self._start + moved] if m.role == "system")
            self._start += moved
        return View(view)


class ManagedStrategy:
    """Any `BaseContextManager`, fed like an agent node: append what is new, trim, send the result."""

    def __init__(self, name: str, manager: BaseContextManager[Any], state: AgentState | None = None) -> None:
        self.name = name
        self.manager = manager
        self.state = state if state is not None else AgentState()
        self.state.execution_meta.thread_id = f"replay-{name}"

    async def step(self, new_messages: Sequence[Message]) -> View:
        self.state.context = add_messages(self.state.context, list(new_messages))
        self.state = await self.manager.atrim_context(self.state)
        return View(list(self.state.context), self.state.context_summary)


class MemoryStrategy:
    """The three-tier session memory: every message is added (management runs after each add), the view is read."""

    def __init__(self, name: str, memory: BaseMemory[Any], session_id: str = "replay") -> None:
        self.name = name
        self.memory = memory
        self.session_id = session_id

    async def step(self, new_messages: Sequence[Message]) -> View:
        for msg in new_messages:
            await self.memory.add(msg, session_id=self.session_id)
        return View(await self.memory.messages(self.session_id))
