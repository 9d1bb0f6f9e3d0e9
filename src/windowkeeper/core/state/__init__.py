"""Reference import path: ``windowkeeper.core.state`` (state, messages, blocks, context managers)."""

from ...blocks import *  # noqa: F403
from ...blocks import __all__ as _blocks_all
from ...context import (
    BaseContextManager,
    MessageContextManager,
    SummaryContextManager,
    TokenBudgetContextManager,
)
from ...messages import Message, TokenUsages
from ...state import AgentState, ExecMeta, ExecutionStatus, ToolResult, add_messages

__all__ = [
    *_blocks_all,
    "AgentState",
    "BaseContextManager",
    "ExecMeta",
    "ExecutionStatus",
    "Message",
    "MessageContextManager",
    "SummaryContextManager",
    "TokenBudgetContextManager",
    "TokenUsages",
    "ToolResult",
    "add_messages",
]
