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
from ..messages import Message
from ..state import AgentState, add_messages


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


__all__ = ["FullHistory", "ManagedStrategy", "Strategy", "View"]
