"""Context managers: strategies that shorten ``state.context`` before a model call.

`MessageContextManager` keeps the newest user turns, `SummaryContextManager` replaces old turns by a summary,
and `BaseContextManager` is the base for custom strategies. Every built-in manager records `TrimMetrics` per call.
"""

from .base import BaseContextManager
from .message import MessageContextManager
from .metrics import MetricsTotals, TrimMetrics
from .summary import SummaryContextManager, estimate_tokens

__all__ = [
    "BaseContextManager",
    "MessageContextManager",
    "MetricsTotals",
    "SummaryContextManager",
    "TrimMetrics",
    "estimate_tokens",
]
