"""Three-tier session memory: full detail, then reversible compaction, then structured summaries.

See `BaseMemory` for the behaviour; `InMemoryMemory`, `SQLiteMemory`, `PostgresMemory` and `RedisMemory` bind it
to a storage backend.
"""

from .backends import InMemoryMemory, PostgresMemory, RedisMemory, SQLiteMemory
from .base import BaseMemory, EventDict, EventList
from .compaction import COMPACTED_PREFIX, make_gist
from .config import DEFAULT_THRESHOLDS, Thresholds, resolve_thresholds
from .events import COMPACTION_KEY, SUMMARY_MARK
from .report import ContextReport
from .structured import StructuredLLMSummarizer, StructuredSummary, TimeRange

IMemoryEvent = EventDict
"""The reference's name for an event dict."""

__all__ = [
    "COMPACTED_PREFIX",
    "COMPACTION_KEY",
    "DEFAULT_THRESHOLDS",
    "SUMMARY_MARK",
    "BaseMemory",
    "ContextReport",
    "EventDict",
    "EventList",
    "IMemoryEvent",
    "InMemoryMemory",
    "PostgresMemory",
    "RedisMemory",
    "SQLiteMemory",
    "StructuredLLMSummarizer",
    "StructuredSummary",
    "Thresholds",
    "TimeRange",
    "make_gist",
    "resolve_thresholds",
]
