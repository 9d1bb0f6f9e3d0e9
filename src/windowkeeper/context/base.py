"""`BaseContextManager`: the contract every context strategy fulfils, plus per-call metrics.

Both trim methods are abstract because the graph calls the async one while scripts and tests call the sync one; a
strategy that silently lacked either would fail only at the first call, deep inside a run. Checking at
instantiation turns that into an immediate, explained TypeError.

The rest of the contract is what the callers of a manager (`Window` and the adapters built on it) use, each with a
default that is right for a manager that keeps nothing per thread: forget a thread, restore a pointer to its
original, export what a thread's view depends on (the originals of its pointers, the recall turn it served) and
import it into a manager that never saw the thread (a new process continuing it from a store). A manager that
keeps per-thread state overrides them; callers never probe for attributes.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from ..errors import ConfigurationError
from ..messages import Message
from ..state import AgentState
from .metrics import MetricsRecorder, MetricsTotals, TrimMetrics, ViewSnapshot, snapshot
from .pointers import is_offloaded

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


@dataclass(frozen=True)
class ThreadExport:
    """What a thread's current view depends on beyond its messages: ``originals`` pairs each pointer of the view
    with the original it replaced; ``recall_served`` is the id of the user turn recall last decided for."""

    originals: tuple[tuple[Message, Message], ...] = ()
    recall_served: str | None = None


@dataclass(frozen=True)
class ThreadSeed:
    """What a manager that never saw a thread is given to continue it: its last ``view``, the ``originals`` of the
    pointers in it, the thread's whole ``history`` in order (only when the manager `wants_history`) and the
    recall turn it had served."""

    view: Sequence[Message] = ()
    originals: Sequence[tuple[Message, Message]] = ()
    history: Sequence[Message] = ()
    recall_served: str | None = None


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

    # -- the callers' contract -------------------------------------------------------------------------------

    counter: Any = None
    """The `TokenCounter` the manager prices messages with (None when it counts nothing); callers count the
    request they send with it."""

    @property
    def wants_history(self) -> bool:
        """Whether `import_thread` uses ``ThreadSeed.history`` (reading a long log is skipped otherwise)."""
        return False

    def forget(self, thread_id: str | None = None) -> None:
        """Drop what the manager remembers about a thread (every thread when None); its next call starts afresh.

        The default drops the thread's metrics history (its previous view, its latest metrics)."""
        self._metrics.forget(thread_id)

    def restore(self, message: Message) -> Message:
        """The original of a message this manager replaced with a pointer or cut, else ``message`` itself."""
        return message

    def export_thread(self, thread_id: str, view: Sequence[Message]) -> ThreadExport:
        """What ``view`` (the thread's latest managed view) depends on: the originals of its pointers (by
        `restore`); managers with recall add the turn it served."""
        pairs = []
        for message in view:
            if is_offloaded(message):
                original = self.restore(message)
                if original is not message:
                    pairs.append((message, original))
        return ThreadExport(originals=tuple(pairs))

    def import_thread(self, thread_id: str, seed: ThreadSeed) -> None:
        """Take over a thread another process (or an earlier manager) managed; the default keeps nothing."""

    def metrics_for(self, thread_id: str) -> TrimMetrics | None:
        """The metrics of the thread's latest call (safe under concurrent calls on other threads)."""
        return self._metrics.last_by_thread.peek(thread_id)

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


__all__ = ["BaseContextManager", "S", "ThreadExport", "ThreadSeed"]
