"""Context managers: strategies that shorten ``state.context`` before a model call.

`MessageContextManager` keeps the newest user turns, `SummaryContextManager` replaces old turns by a summary,
`TokenBudgetContextManager` keeps a token budget with watermark hysteresis so the prompt prefix stays cacheable,
and `BaseContextManager` is the base for custom strategies (a strategy writes one planning core, `plan`, that
yields a `SummaryRequest` for each summary it needs). Every built-in manager records `TrimMetrics` per call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:
    from .base import BaseContextManager, SummaryRequest
    from .baselines import sliding_window
    from .budget import TokenBudgetContextManager
    from .message import MessageContextManager
    from .metrics import MetricsTotals, TrimMetrics
    from .pointers import OffloadStore
    from .summary import SummaryContextManager, estimate_tokens
    from .zones import ContextZones, build_zones, render_zones

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        ".base": ("BaseContextManager", "SummaryRequest"),
        ".baselines": ("sliding_window",),
        ".budget": ("TokenBudgetContextManager",),
        ".message": ("MessageContextManager",),
        ".metrics": ("MetricsTotals", "TrimMetrics"),
        ".pointers": ("OffloadStore",),
        ".summary": ("SummaryContextManager", "estimate_tokens"),
        ".zones": ("ContextZones", "build_zones", "render_zones"),
    },
)

__all__ = [
    "BaseContextManager",
    "ContextZones",
    "MessageContextManager",
    "MetricsTotals",
    "OffloadStore",
    "SummaryContextManager",
    "SummaryRequest",
    "TokenBudgetContextManager",
    "TrimMetrics",
    "build_zones",
    "estimate_tokens",
    "render_zones",
    "sliding_window",
]
