"""What a running node can see of its graph, and the protocol built-in nodes (Agent, ToolNode) implement.

Plain functions are called through their compiled parameter plan; built-in nodes instead get a `RunContext`, so
they can reach the graph's context manager and resolver without a global registry.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from ..state import AgentState
    from .injection import Resolver


@runtime_checkable
class ContextManagerLike(Protocol):
    """The part of `BaseContextManager` the runtime calls; checked structurally so any manager works."""

    async def atrim_context(self, state: Any) -> Any: ...


@dataclass(frozen=True)
class RunContext:
    """Per-call view of the graph for a built-in node."""

    node: str
    config: dict[str, Any]
    resolver: Resolver
    context_manager: ContextManagerLike | None
    state_cls: type[AgentState]


@runtime_checkable
class GraphComponent(Protocol):
    """A node object that the runtime drives directly instead of inspecting its signature."""

    async def arun_node(self, state: AgentState, run: RunContext) -> object: ...

    def check_graph(self, resolver: Resolver, *, owner: str, state_cls: type[AgentState]) -> None: ...


__all__ = ["ContextManagerLike", "GraphComponent", "RunContext"]
