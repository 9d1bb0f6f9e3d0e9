"""windowkeeper: keep an LLM agent's conversation inside its context window."""

from __future__ import annotations

from .blocks import (
    AnnotationBlock,
    AnnotationRef,
    AudioBlock,
    ContentBlock,
    DataBlock,
    DocumentBlock,
    ErrorBlock,
    ImageBlock,
    MediaRef,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    VideoBlock,
)
from .constants import END, START
from .errors import (
    ConfigurationError,
    FormatError,
    GraphCompileError,
    GraphError,
    MissingDependencyError,
    ProviderError,
    RecursionLimitError,
    StorageError,
    WindowkeeperError,
)
from .messages import Message, TokenUsages
from .state import AgentState, ExecMeta, ExecutionStatus, ToolResult, add_messages

__version__ = "0.1.0"

__all__ = [
    "END",
    "START",
    "AgentState",
    "AnnotationBlock",
    "AnnotationRef",
    "AudioBlock",
    "ConfigurationError",
    "ContentBlock",
    "DataBlock",
    "DocumentBlock",
    "ErrorBlock",
    "ExecMeta",
    "ExecutionStatus",
    "FormatError",
    "GraphCompileError",
    "GraphError",
    "ImageBlock",
    "MediaRef",
    "Message",
    "MissingDependencyError",
    "ProviderError",
    "ReasoningBlock",
    "RecursionLimitError",
    "StorageError",
    "TextBlock",
    "TokenUsages",
    "ToolCallBlock",
    "ToolResult",
    "ToolResultBlock",
    "VideoBlock",
    "WindowkeeperError",
    "__version__",
    "add_messages",
]
