"""Reference import path: ``windowkeeper.core.graph`` (graph builder, nodes, checkpointers)."""

from ..graph import (
    END,
    START,
    Agent,
    BaseCheckpointer,
    Checkpointer,
    CompiledGraph,
    GraphEvent,
    InMemoryCheckpointer,
    PostgresCheckpointer,
    RedisCheckpointer,
    SQLiteCheckpointer,
    StateGraph,
    ToolNode,
)

__all__ = [
    "END",
    "START",
    "Agent",
    "BaseCheckpointer",
    "Checkpointer",
    "CompiledGraph",
    "GraphEvent",
    "InMemoryCheckpointer",
    "PostgresCheckpointer",
    "RedisCheckpointer",
    "SQLiteCheckpointer",
    "StateGraph",
    "ToolNode",
]
