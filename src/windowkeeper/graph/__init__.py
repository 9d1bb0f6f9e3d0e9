"""Graph runtime: build a `StateGraph`, compile it, and run agents whose context is managed for real.

`Agent` calls a model through the LLM layer (trimming with the graph's context manager first), `ToolNode` answers
the model's tool calls, and a checkpointer persists each thread's trimmed state plus its full message log.
"""

from ..constants import END, START
from .agent import NO_MANAGER_WARNING, Agent
from .checkpointer import (
    BaseCheckpointer,
    Checkpointer,
    InMemoryCheckpointer,
    PostgresCheckpointer,
    RedisCheckpointer,
    SQLiteCheckpointer,
)
from .compiled import DEFAULT_RECURSION_LIMIT, CompiledGraph, GraphEvent
from .state_graph import StateGraph
from .tool_node import ToolNode
from .tool_schema import parse_docstring, tool_signature

__all__ = [
    "DEFAULT_RECURSION_LIMIT",
    "END",
    "NO_MANAGER_WARNING",
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
    "parse_docstring",
    "tool_signature",
]


def __getattr__(name: str) -> object:
    """``Inject`` is injectq's marker, importable from here; injectq is optional: ``pip install "windowkeeper[di]"``."""
    if name == "Inject":
        from .injection import require_injectq

        return require_injectq()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
