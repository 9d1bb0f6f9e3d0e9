"""Three-tier session memory: full detail, then reversible compaction, then structured summaries.

See `BaseMemory` for the behaviour; `InMemoryMemory`, `SQLiteMemory`, `PostgresMemory` and `RedisMemory` bind it
to a storage backend, and `TDAIMemory` is the durable server-backed one (PostgreSQL by default, Redis by URL).
`MemoryContextManager` runs any of them as the context manager of a `StateGraph` / `Agent`.
"""

from .backends import InMemoryMemory, PostgresMemory, RedisMemory, SQLiteMemory, TDAIMemory
from .base import BaseMemory, EventDict, EventList
from .compaction import COMPACTED_PREFIX, make_gist
from .config import DEFAULT_COMPACTION_TARGET, DEFAULT_THRESHOLDS, Thresholds, resolve_thresholds
from .context_manager import MemoryContextManager
from .events import COMPACTION_KEY, SUMMARY_MARK
from .report import ContextReport
from .structured import StructuredLLMSummarizer, StructuredSummary, TimeRange

IMemoryEvent = EventDict
"""The reference's name for an event dict."""

__all__ = [
    "COMPACTED_PREFIX",
    "COMPACTION_KEY",
    "DEFAULT_COMPACTION_TARGET",
    "DEFAULT_THRESHOLDS",
    "SUMMARY_MARK",
    "BaseMemory",
    "ContextReport",
    "EventDict",
    "EventList",
    "IMemoryEvent",
    "InMemoryMemory",
    "MemoryContextManager",
    "PostgresMemory",
    "RedisMemory",
    "SQLiteMemory",
    "StructuredLLMSummarizer",
    "StructuredSummary",
    "TDAIMemory",
    "Thresholds",
    "TimeRange",
    "make_gist",
    "resolve_thresholds",
]
