"""windowkeeper: keep an LLM agent's conversation inside its context window.

Everything public is importable from here; the reference documentation's paths (``windowkeeper.core.state``,
``windowkeeper.core.graph``, ``windowkeeper.utils.constants``) re-export the same objects.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

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
from .context import (
    BaseContextManager,
    ContextZones,
    MessageContextManager,
    MetricsTotals,
    OffloadStore,
    SummaryContextManager,
    TokenBudgetContextManager,
    TrimMetrics,
    build_zones,
    render_zones,
    sliding_window,
)
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
from .graph import (
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
from .integrations import FitResult, Window
from .llm import LLMClient, LLMRequest, LLMResponse, ScriptedClient, create_client, detect_provider
from .llm.formats import (
    from_anthropic,
    from_gemini,
    from_langchain,
    from_openai_chat,
    from_responses_input,
    to_anthropic,
    to_gemini,
    to_langchain,
    to_openai_chat,
    to_responses_input,
)
from .memory import (
    BaseMemory,
    ContextReport,
    InMemoryMemory,
    MemoryContextManager,
    PostgresMemory,
    RedisMemory,
    SQLiteMemory,
    StructuredLLMSummarizer,
    StructuredSummary,
    TDAIMemory,
    Thresholds,
)
from .messages import Message, TokenUsages
from .prompt import SCRATCHPAD_HEADER, SUMMARY_HEADER, AssembledPrompt, assemble, count_request, is_recall
from .state import AgentState, ExecMeta, ExecutionStatus, ToolResult, add_messages
from .storage import (
    ConflictError,
    InMemoryStore,
    Record,
    RecordNotFoundError,
    SessionStore,
    SQLiteStore,
    open_store,
)
from .summarize import (
    ExtractiveSummarizer,
    LLMSummarizer,
    Summarizer,
    as_summarizer,
    get_summarizer,
    render_transcript,
)
from .tokens import (
    ApproxCounter,
    CalibratedCounter,
    TiktokenCounter,
    TokenCounter,
    TokenizerDataError,
    counter_for_model,
    default_counter,
)
from .tools import scratchpad_tool
from .units import Problem, Unit, flatten, group_units, is_valid, validate

if TYPE_CHECKING:
    from .storage import PostgresStore, RedisStore

_OPTIONAL_DRIVER_NAMES = frozenset({"PostgresStore", "RedisStore"})


def __getattr__(name: str) -> Any:
    # The server stores import their drivers (extras "postgres", "redis") when first asked for, so a base install
    # imports windowkeeper fine and only a missing driver someone actually uses raises, with the pip command.
    if name in _OPTIONAL_DRIVER_NAMES:
        from . import storage

        return getattr(storage, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__version__ = "0.1.0"

__all__ = [
    "END",
    "SCRATCHPAD_HEADER",
    "START",
    "SUMMARY_HEADER",
    "Agent",
    "AgentState",
    "AnnotationBlock",
    "AnnotationRef",
    "AssembledPrompt",
    "ApproxCounter",
    "AudioBlock",
    "BaseCheckpointer",
    "BaseContextManager",
    "BaseMemory",
    "CalibratedCounter",
    "Checkpointer",
    "CompiledGraph",
    "ConfigurationError",
    "ConflictError",
    "ContentBlock",
    "ContextReport",
    "ContextZones",
    "DataBlock",
    "DocumentBlock",
    "ErrorBlock",
    "ExecMeta",
    "ExecutionStatus",
    "ExtractiveSummarizer",
    "FitResult",
    "FormatError",
    "GraphCompileError",
    "GraphError",
    "GraphEvent",
    "ImageBlock",
    "InMemoryCheckpointer",
    "InMemoryMemory",
    "MemoryContextManager",
    "InMemoryStore",
    "LLMClient",
    "LLMRequest",
    "LLMResponse",
    "LLMSummarizer",
    "MediaRef",
    "Message",
    "MessageContextManager",
    "MetricsTotals",
    "MissingDependencyError",
    "OffloadStore",
    "PostgresCheckpointer",
    "PostgresMemory",
    "PostgresStore",
    "Problem",
    "ProviderError",
    "ReasoningBlock",
    "Record",
    "RecordNotFoundError",
    "RecursionLimitError",
    "RedisCheckpointer",
    "RedisMemory",
    "RedisStore",
    "SQLiteCheckpointer",
    "SQLiteMemory",
    "SQLiteStore",
    "ScriptedClient",
    "SessionStore",
    "StateGraph",
    "StorageError",
    "StructuredLLMSummarizer",
    "StructuredSummary",
    "SummaryContextManager",
    "TDAIMemory",
    "Summarizer",
    "TextBlock",
    "Thresholds",
    "TiktokenCounter",
    "TokenBudgetContextManager",
    "TokenCounter",
    "TokenUsages",
    "TokenizerDataError",
    "ToolCallBlock",
    "ToolNode",
    "ToolResult",
    "ToolResultBlock",
    "TrimMetrics",
    "Unit",
    "VideoBlock",
    "Window",
    "WindowkeeperError",
    "__version__",
    "add_messages",
    "as_summarizer",
    "assemble",
    "build_zones",
    "count_request",
    "counter_for_model",
    "create_client",
    "default_counter",
    "detect_provider",
    "flatten",
    "from_anthropic",
    "from_gemini",
    "from_langchain",
    "from_openai_chat",
    "from_responses_input",
    "get_summarizer",
    "group_units",
    "is_recall",
    "is_valid",
    "open_store",
    "render_transcript",
    "render_zones",
    "scratchpad_tool",
    "sliding_window",
    "to_anthropic",
    "to_gemini",
    "to_langchain",
    "to_openai_chat",
    "to_responses_input",
    "validate",
]
