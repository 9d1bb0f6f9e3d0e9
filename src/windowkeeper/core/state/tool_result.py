"""Reference import path: ``windowkeeper.core.state.tool_result``."""

from ...state import ToolResult

__all__ = ["ToolResult"]
