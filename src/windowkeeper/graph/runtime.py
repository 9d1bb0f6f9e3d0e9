"""What a running node can see of its graph, the protocol built-in nodes (Agent, ToolNode) implement, and the
compiled forms of nodes and edges that the builder (`StateGraph`) hands to the runner (`CompiledGraph`).

Plain functions are called through their compiled parameter plan; built-in nodes instead get a `RunContext`, so
they can reach the graph's context manager and resolver without a global registry. The compiled forms live here,
below both the builder and the runner, so neither of those two modules needs the other's.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from ..state import AgentState
    from .injection import ParamPlan, Resolver


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


NodeAction = Callable[..., Any] | GraphComponent


@dataclass(frozen=True)
class ConditionalEdge:
    """A routing function and, optionally, the map from its return values to node names."""

    condition: Callable[..., Any]
    path_map: dict[Hashable, str] | None


@dataclass(frozen=True)
class CompiledNode:
    """A node ready to run: either a built-in component or a function with its parameter plan."""

    name: str
    action: NodeAction
    plans: tuple[ParamPlan, ...]
    is_async: bool
    component: GraphComponent | None
