"""`StateGraph`: the builder. It records nodes and edges and checks the whole definition in `compile`.

All structural mistakes (no entry point, an edge to a node that does not exist, a node nothing can reach, an
interrupt on an unknown node) are reported at compile time with the node names, so a bad graph never starts a run.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any

from .._bridge import is_async_callable
from ..constants import END, START
from ..errors import ConfigurationError, GraphCompileError
from ..state import AgentState
from .checkpointer import InMemoryCheckpointer
from .compiled import CompiledGraph
from .injection import ParamPlan, Resolver, check_injectable, plan_call
from .runtime import (
    CompiledNode,
    ConditionalEdge,
    ContextManagerLike,
    GraphComponent,
    NodeAction,
)


class StateGraph:
    """Build a graph over an `AgentState` (or subclass) and an optional context manager.

    ``state`` may be a class or an instance; an instance is the template each new thread starts from.
    """

    def __init__(
        self,
        state: type[AgentState] | AgentState | None = None,
        context_manager: ContextManagerLike | None = None,
    ) -> None:
        if state is None:
            state = AgentState
        if isinstance(state, AgentState):
            self.state_cls: type[AgentState] = type(state)
            self.state_template: AgentState | None = state
        elif isinstance(state, type) and issubclass(state, AgentState):
            self.state_cls = state
            self.state_template = None
        else:
            raise ConfigurationError(
                f"StateGraph(state=...) must be AgentState, a subclass or an instance of one; got {state!r}",
            )
        if context_manager is not None and not isinstance(context_manager, ContextManagerLike):
            raise ConfigurationError(
                f"context_manager must provide 'async atrim_context(state)'; {type(context_manager).__name__} does "
                "not (subclass BaseContextManager and implement both trim_context and atrim_context)",
            )
        self.context_manager = context_manager
        self.nodes: dict[str, NodeAction] = {}
        self.edges: dict[str, str] = {}
        self.conditional: dict[str, ConditionalEdge] = {}
        self.entry_point: str | None = None

    # -- building -----------------------------------------------------------------------------------------

    def add_node(self, name: str | NodeAction, action: NodeAction | None = None) -> StateGraph:
        """Add a node: a function (sync or async), an `Agent` or a `ToolNode`. ``add_node(fn)`` uses its name."""
        if action is None:
            if isinstance(name, str):
                raise ConfigurationError(f"add_node({name!r}) needs an action: a function, Agent or ToolNode")
            action = name
            name = getattr(action, "__name__", None) or type(action).__name__
        if not isinstance(name, str) or not name:
            raise ConfigurationError(f"node name must be a non-empty string, got {name!r}")
        if name in (START, END):
            raise ConfigurationError(f"{name!r} is reserved for the graph's start/end; choose another node name")
        if name in self.nodes:
            raise ConfigurationError(f"node {name!r} is already in the graph; node names must be unique")
        if not isinstance(action, GraphComponent) and not callable(action):
            raise ConfigurationError(f"node {name!r}: {action!r} is not callable; pass a function, Agent or ToolNode")
        self.nodes[name] = action
        return self

    def add_edge(self, source: str, target: str) -> StateGraph:
        """Always go from ``source`` to ``target`` (``add_edge(START, x)`` sets the entry point)."""
        if source == END:
            raise ConfigurationError("an edge cannot leave END")
        if target == START:
            raise ConfigurationError(f"edge {source!r} -> START: START cannot be a target")
        if source == START:
            return self.set_entry_point(target)
        if source in self.edges and self.edges[source] != target:
            raise ConfigurationError(
                f"node {source!r} already has an edge to {self.edges[source]!r}; a node has one next step, "
                "use add_conditional_edges to branch",
            )
        self.edges[source] = target
        return self

    def add_conditional_edges(
        self,
        source: str,
        condition: Callable[..., Any],
        path_map: Mapping[Hashable, str] | Sequence[str] | None = None,
    ) -> StateGraph:
        """Route from ``source`` by ``condition(state)``: its return value is a node name, or a key of ``path_map``."""
        if not callable(condition):
            raise ConfigurationError(f"condition for {source!r} must be callable, got {condition!r}")
        if source in self.conditional:
            raise ConfigurationError(f"node {source!r} already has conditional edges")
        mapping: dict[Hashable, str] | None
        if path_map is None:
            mapping = None
        elif isinstance(path_map, Mapping):
            mapping = dict(path_map)
        else:
            mapping = {name: name for name in path_map}
        self.conditional[source] = ConditionalEdge(condition, mapping)
        return self

    def set_entry_point(self, name: str) -> StateGraph:
        if self.entry_point is not None and self.entry_point != name:
            raise ConfigurationError(f"entry point is already {self.entry_point!r}; a graph has one entry point")
        self.entry_point = name
        return self

    def set_finish_point(self, name: str) -> StateGraph:
        return self.add_edge(name, END)

    # -- compiling ----------------------------------------------------------------------------------------

    def _check_structure(self, interrupts: Sequence[str]) -> None:
        nodes = set(self.nodes)
        if not nodes:
            raise GraphCompileError("the graph has no nodes; add one with add_node(name, fn)")
        if self.entry_point is None:
            raise GraphCompileError(
                f"no entry point; call set_entry_point(name) or add_edge(START, name) with one of: {sorted(nodes)}",
            )
        if self.entry_point not in nodes:
            raise GraphCompileError(f"entry point {self.entry_point!r} is not a node; nodes: {sorted(nodes)}")
        for source, target in self.edges.items():
            if source not in nodes:
                raise GraphCompileError(f"edge {source!r} -> {target!r}: unknown source node {source!r}")
            if target != END and target not in nodes:
                raise GraphCompileError(
                    f"edge {source!r} -> {target!r}: unknown target node {target!r}; nodes: {sorted(nodes)}",
                )
        for source, edge in self.conditional.items():
            if source not in nodes:
                raise GraphCompileError(f"conditional edges from unknown node {source!r}; nodes: {sorted(nodes)}")
            if source in self.edges:
                raise GraphCompileError(
                    f"node {source!r} has both an edge to {self.edges[source]!r} and conditional edges; keep one",
                )
            for key, target in (edge.path_map or {}).items():
                if target != END and target not in nodes:
                    raise GraphCompileError(
                        f"conditional edge {source!r} -[{key!r}]-> {target!r}: unknown target node {target!r}; "
                        f"nodes: {sorted(nodes)}",
                    )
        for name in interrupts:
            if name not in nodes:
                raise GraphCompileError(f"interrupt on unknown node {name!r}; nodes: {sorted(nodes)}")
        reachable = self._reachable()
        unreachable = sorted(nodes - reachable)
        if unreachable:
            raise GraphCompileError(
                f"unreachable node(s) {unreachable}: no edge leads to them from the entry point {self.entry_point!r}",
            )

    def _reachable(self) -> set[str]:
        seen: set[str] = set()
        todo = [self.entry_point] if self.entry_point else []
        while todo:
            node = todo.pop()
            if node in seen or node == END:
                continue
            seen.add(node)
            if node in self.edges:
                todo.append(self.edges[node])
            edge = self.conditional.get(node)
            if edge is not None:
                # without a path map the condition may name any node, so everything counts as reachable
                todo.extend(edge.path_map.values() if edge.path_map is not None else self.nodes)
        return seen

    def compile(
        self,
        checkpointer: Any = None,
        interrupt_before: Sequence[str] | None = None,
        interrupt_after: Sequence[str] | None = None,
    ) -> CompiledGraph:
        """Check the definition and return a runnable `CompiledGraph`.

        Without a ``checkpointer`` the graph keeps its threads in memory (an `InMemoryCheckpointer` of its own),
        as the reference's ``compile()`` does: calls with the same ``thread_id`` continue one conversation, so
        token triggers and summaries work across turns. Pass a durable checkpointer (SQLite, PostgreSQL, Redis)
        for threads that outlive the process; a ``thread_id`` behaves the same with every one of them.
        """
        before = list(interrupt_before or [])
        after = list(interrupt_after or [])
        self._check_structure([*before, *after])
        if checkpointer is None:
            checkpointer = InMemoryCheckpointer()
        resolver = Resolver([self.context_manager, checkpointer, self])
        compiled_nodes: dict[str, CompiledNode] = {}
        for name, action in self.nodes.items():
            if isinstance(action, GraphComponent):
                compiled_nodes[name] = CompiledNode(name, action, (), True, action)
            else:
                plans = plan_call(action, owner=f"node {name!r}")
                compiled_nodes[name] = CompiledNode(name, action, tuple(plans), is_async_callable(action), None)
        conditions: dict[str, tuple[ConditionalEdge, tuple[ParamPlan, ...], bool]] = {}
        for source, edge in self.conditional.items():
            plans = plan_call(edge.condition, owner=f"condition of {source!r}")
            conditions[source] = (edge, tuple(plans), is_async_callable(edge.condition))
        compiled = CompiledGraph(
            state_cls=self.state_cls,
            state_template=self.state_template,
            context_manager=self.context_manager,
            nodes=compiled_nodes,
            edges=dict(self.edges),
            conditions=conditions,
            entry_point=self.entry_point or "",
            checkpointer=checkpointer,
            interrupt_before=frozenset(before),
            interrupt_after=frozenset(after),
            resolver=resolver,
        )
        # injectables are checked once the compiled graph exists, since it is itself injectable
        for node in compiled_nodes.values():
            owner = f"node {node.name!r}"
            if node.component is not None:
                node.component.check_graph(resolver, owner=owner, state_cls=self.state_cls)
            else:
                check_injectable(node.plans, resolver, owner=owner)
        for source, (_, condition_plans, _) in conditions.items():
            check_injectable(condition_plans, resolver, owner=f"condition of {source!r}")
        return compiled
