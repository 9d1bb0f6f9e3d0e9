"""Ready-made tools for a `ToolNode`: each is a plain function the model can call."""

from .recall import RecallTool, recall_tool
from .scratchpad import DEFAULT_SCRATCHPAD_TOKENS, ScratchpadFullError, scratchpad_tool

__all__ = ["DEFAULT_SCRATCHPAD_TOKENS", "RecallTool", "ScratchpadFullError", "recall_tool", "scratchpad_tool"]
