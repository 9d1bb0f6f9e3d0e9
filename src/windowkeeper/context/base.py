"""`BaseContextManager`: the contract every context strategy fulfils, plus per-call metrics.

Both methods are abstract because the graph calls the async one while scripts and tests call the sync one; a
strategy that silently lacked either would fail only at the first call, deep inside a run. Checking at
instantiation turns that into an immediate, explained TypeError.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from ..errors import ConfigurationError
from ..state import AgentState
from .metrics import MetricsRecorder, MetricsTotals, TrimMetrics, ViewSnapshot, snapshot

if TYPE_CHECKING:
    # type checkers only: the default makes ``MessageContextManager(...)`` a ``MessageContextManager[AgentState]``
    # instead of ``[Never]`` (PEP 696); Python 3.11's TypeVar has no ``default``, and nothing needs it at run time
    from typing_extensions import TypeVar as DefaultTypeVar

    S = DefaultTypeVar("S", bound=AgentState, default=AgentState)
else:
    S = TypeVar("S", bound=AgentState)

_REQUIRED = ("trim_context", "atrim_context")


def adapt_summarizer(obj: Any) -> Any:
    """``obj`` as a `Summarizer`, or a `ConfigurationError` raised when the manager is built, not at its first trim."""
    from ..summarize import as_summarizer

    try:
        return as_summarizer(obj)
    except (TypeError, ValueError) as exc:
        raise ConfigurationError(f"summarizer cannot be used: {exc}") from exc


class BaseContextManager(ABC, Generic[S]):
    """Base class of context strategies: given a state, return it with a (possibly) shorter ``context``.

    Subclasses implement both ``trim_context`` (sync) and ``atrim_context`` (async); the async one may simply call
    the sync one. ``last_metrics`` / ``metrics_total`` report what the built-in managers did; they exist even when
    a subclass's ``__init__`` never calls ``super().__init__()``.
    """

    def __new__(cls, *args: Any, **kwargs: Any) -> BaseContextManager[S]:
        missing = sorted(name for name in getattr(cls, "__abstractmethods__", ()) if name in _REQUIRED)
        if missing:
            raise TypeError(
                f"{cls.__name__} must implement both trim_context and atrim_context (missing: "
                f"{', '.join(missing)}); atrim_context may simply `return self.trim_context(state)`",
            )
        return super().__new__(cls)

    @abstractmethod
    def trim_context(self, state: S) -> S:
        """Return ``state`` with ``context`` trimmed or otherwise processed."""

    @abstractmethod
    async def atrim_context(self, state: S) -> S:
        """Async form of `trim_context`; this is the one the graph's Agent awaits."""

    # -- metrics --------------------------------------------------------------------------------------------

    @property
    def _metrics(self) -> MetricsRecorder:
        recorder = self.__dict__.get("_wk_metrics")
        if recorder is None:
            recorder = self.__dict__.setdefault("_wk_metrics", MetricsRecorder())
        assert isinstance(recorder, MetricsRecorder)
        return recorder

    @property
    def last_metrics(self) -> TrimMetrics | None:
        """Metrics of the most recently finished call (None before the first)."""
        return self._metrics.last

    @property
    def metrics_total(self) -> MetricsTotals:
        """A copy of the cumulative metrics over every recorded call."""
        return self._metrics.totals.model_copy()

    def reset_metrics(self) -> None:
        """Forget totals and each thread's previous view (the next call per thread reports prefix_stable=None)."""
        self._metrics.reset()

    def _begin_trim(self, state: S) -> ViewSnapshot:
        """Capture the view before a trim mutates ``state``; pass the result to `_finish_trim`."""
        return snapshot(state)

    def _finish_trim(
        self,
        before: ViewSnapshot,
        state: S,
        *,
        tool_results_cleared: int = 0,
        summaries_made: int = 0,
    ) -> TrimMetrics:
        """Record the metrics of one call, comparing the view in ``before`` with ``state`` as it is now."""
        return self._metrics.record(
            before,
            state,
            tool_results_cleared=tool_results_cleared,
            summaries_made=summaries_made,
        )


__all__ = ["BaseContextManager", "S"]
