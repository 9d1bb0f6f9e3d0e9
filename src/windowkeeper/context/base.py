"""`BaseContextManager`: the contract every context strategy fulfils, one planning core per strategy, per-call metrics.

A strategy is written once, as a planning core (`plan`): a generator that plans on the state without I/O and
yields a `SummaryRequest` when it needs a summary, or the awaitable of any other real I/O it needs (a store read
or write). The base drives the core for the sync entry point and for the async one the graph awaits, performs
each request through the one fail-safe summarizer call and awaits every other awaitable as it is, so no strategy
writes its own sync/async pair (the budget manager's compaction was the model). A strategy that instead writes
both trim methods by hand still works; one that writes neither, or only one, is refused at instantiation with an
explained TypeError rather than failing at its first call deep inside a run. Recall is one step too
(`start_recall`, `RecallStep`), so a strategy does not wire the index by hand, and the base hands a thread's
recall over with the thread (`export_thread`, `import_thread`, `forget`).

The rest of the contract is what the callers of a manager (`Window` and the adapters built on it) use, each with a
default that is right for a manager that keeps nothing per thread: forget a thread, restore a pointer to its
original, export what a thread's view depends on (the originals of its pointers, the recall turn it served) and
import it into a manager that never saw the thread (a new process continuing it from a store). A manager that
keeps per-thread state overrides them; callers never probe for attributes.
"""

from __future__ import annotations

import logging
from abc import ABC
from collections.abc import Awaitable, Generator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar, cast

from .._bridge import adrive, drive
from .._request_contract import RequestCounting
from ..errors import ConfigurationError
from ..messages import Message
from ..state import AgentState
from .metrics import MetricsRecorder, MetricsTotals, TrimMetrics, ViewSnapshot, snapshot, thread_key
from .pointers import offloaded

if TYPE_CHECKING:
    # type checkers only: the default makes ``MessageContextManager(...)`` a ``MessageContextManager[AgentState]``
    # instead of ``[Never]`` (PEP 696); Python 3.11's TypeVar has no ``default``, and nothing needs it at run time
    from typing_extensions import TypeVar as DefaultTypeVar

    from ._recall_step import RecallStep
    from .recall import Recall

    S = DefaultTypeVar("S", bound=AgentState, default=AgentState)
else:
    S = TypeVar("S", bound=AgentState)

_REQUIRED = ("trim_context", "atrim_context")


@dataclass(frozen=True)
class SummaryRequest:
    """What a planning core asks its driver to summarize (the only I/O a trim does); it is sent the summary text,
    or None when there is no summarizer or the call failed. With no ``messages``, ``previous`` alone is condensed."""

    messages: list[Message]
    previous: str | None
    max_tokens: int
    instructions: str | None = None


PlanStep = SummaryRequest | Awaitable[Any]
"""What a planning core yields: a `SummaryRequest` (it is sent the summary text or None), or the awaitable of
other real I/O such as a store read or write (it is sent the awaitable's result, or has its exception thrown in)."""


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


class BaseContextManager(RequestCounting, ABC, Generic[S]):
    """Base class of context strategies: given a state, return it with a (possibly) shorter ``context``.

    A strategy writes one planning core, `plan`: a generator that works on the state without I/O, yields a
    `SummaryRequest` whenever it needs a summary and is sent the text (None when none could be made), and yields
    the awaitable of any other I/O it needs (``value = yield memory.messages(sid)``), sent its result or thrown its
    exception, the way ``await`` would. The base drives it for both entry points, ``trim_context`` (sync) and
    ``atrim_context`` (async, the one the graph awaits), so the two can never disagree. A strategy may instead
    implement both trim methods itself (the async one may simply call the sync one). ``last_metrics`` /
    ``metrics_total`` report what the built-in managers did; they exist even when a subclass's ``__init__`` never
    calls ``super().__init__()``.
    """

    _log: ClassVar[logging.Logger] = logging.getLogger(__name__)
    """Where the fail-safe summarizer call reports; each built-in manager logs under its own module."""

    def __new__(cls, *args: Any, **kwargs: Any) -> BaseContextManager[S]:
        if cls.plan is BaseContextManager.plan:
            missing = [name for name in _REQUIRED if getattr(cls, name) is getattr(BaseContextManager, name)]
            if missing:
                raise TypeError(
                    f"{cls.__name__} must implement both trim_context and atrim_context (missing: "
                    f"{', '.join(missing)}), or instead one planning core plan(state) that the base drives for "
                    "both; atrim_context may simply `return self.trim_context(state)`",
                )
        return super().__new__(cls)

    # -- the planning core and its two drivers -----------------------------------------------------------------

    def plan(self, state: S) -> Generator[PlanStep, Any, S]:
        """Return ``state`` with ``context`` trimmed, yielding a `SummaryRequest` for each summary needed (sent the
        text, or None) and the awaitable of any other I/O (sent its result; its exception is thrown in).

        Everything between two yields is pure CPU: the sync driver runs it on the calling thread with no event
        loop, and only what is yielded runs on one, so one core serves both entry points. A core whose I/O is
        several dependent store calls may yield one coroutine doing them all (one crossing for the sync form).
        The default runs a strategy's own ``trim_context``, for one that implements both trim methods instead.
        """
        yield from ()
        return self.trim_context(state)

    def trim_context(self, state: S) -> S:
        """Return ``state`` with ``context`` trimmed (the planning core run to completion). A summary it needs is
        made on this thread's loop, which is refused inside a running event loop: await `atrim_context` there.

        A core that finishes without yielding (most calls: nothing to summarize) is run here directly; the bridge,
        and the refusal text it would need, are set up only for one that yields."""
        core, step = self._started(state)
        if core is None:
            return cast(S, step)
        return drive(
            self._io_steps(core, step),
            caller=f"{type(self).__name__}.trim_context() (it needs {self._io_needed})",
            instead="await manager.atrim_context(state)",
        )

    async def atrim_context(self, state: S) -> S:
        """Async form of `trim_context`; this is the one the graph's Agent awaits. A core that finishes without
        yielding is run here directly, as in `trim_context`."""
        core, step = self._started(state)
        if core is None:
            return cast(S, step)
        return await adrive(self._io_steps(core, step))

    def _started(self, state: S) -> tuple[Generator[PlanStep, Any, S] | None, Any]:
        """A trim of ``state`` run on this thread up to its first I/O step: ``(None, trimmed state)`` when it finished
        without one (most calls), else ``(core, step)``, the step it yielded, for a driver to carry on from. The one
        start both entry points share."""
        core = self._begin(state)
        if core is None:
            return None, state
        try:
            return core, core.send(None)
        except StopIteration as done:
            return None, done.value

    def _begin(self, state: S) -> Generator[PlanStep, Any, S] | None:
        """The planning core of a trim of ``state`` (`plan`), or None when the strategy finished the call without
        one: ``state`` is then the trimmed state, returned as it is. A strategy whose common call needs no core
        (the budget manager's call that only appended messages) skips making a generator and running it."""
        return self.plan(state)

    _io_needed: ClassVar[str] = "to run its summarizer"
    """What the sync entry point's refusal inside a running loop says the trim needs the loop for."""

    def _io_steps(self, core: Generator[PlanStep, Any, S], step: PlanStep) -> Generator[Awaitable[Any], Any, S]:
        """The rest of a planning core that has yielded ``step``, as a core of the one sync/async bridge
        (`_bridge.drive`): each `SummaryRequest` it yields becomes the awaitable `asummarize` of it; any other
        awaitable goes to the driver as it is, and what the driver sends or throws back goes to the core. The two
        trim methods run a core's first stretch themselves, so a call that yields nothing never builds this."""
        try:
            while True:
                io = self.asummarize(step) if isinstance(step, SummaryRequest) else step
                try:
                    value = yield io
                except GeneratorExit:  # closed (a refused sync call): the finally closes the core
                    raise
                except BaseException as exc:  # a failed store call: the core handles it or it propagates
                    step = core.throw(exc)
                else:
                    step = core.send(value)
        except StopIteration as done:
            result: S = done.value
            return result
        finally:
            core.close()  # a refused or abandoned sync call leaves no core suspended

    summarizer: Any = None
    """The `Summarizer` a `SummaryRequest` goes to (None: every request is answered None)."""

    summary_timeout: float = 120.0
    """Seconds one summarizer call may take before it counts as failed."""

    async def asummarize(self, request: SummaryRequest) -> str | None:
        """Make the summary ``request`` asks for through the library's one fail-safe call (a real timeout, never
        raises): None when there is no summarizer or it fails, so the core falls back to what it does without."""
        from ..summarize.failsafe import call_summarizer, condense_input

        summarizer = self.summarizer
        if summarizer is None:
            return None
        messages, previous = request.messages, request.previous
        if not messages and previous:  # condensing the summary alone
            messages, previous = condense_input(summarizer, previous)
        return await call_summarizer(
            summarizer,
            messages,
            timeout=self.summary_timeout,
            previous_summary=previous,
            max_tokens=request.max_tokens,
            instructions=request.instructions,
            log=self._log,
        )

    # -- recall as one step -------------------------------------------------------------------------------------

    recall: Recall | None = None
    """The manager's recall (None when recall is off); `recall_tool` searches it."""

    recall_budget: int | None = None
    """Tokens the view and its recall message may take (`start_recall`)."""

    def start_recall(self, state: S) -> RecallStep | None:
        """The recall step of a trim of ``state`` (it indexes the view now; finish it on the trimmed state), or None
        when the manager has no recall or no recall budget."""
        if self.recall is None or self.recall_budget is None:
            return None
        from ._recall_step import RecallStep

        return RecallStep(self.recall, thread_key(state), list(state.context), budget=self.recall_budget)

    # -- the callers' contract -------------------------------------------------------------------------------

    # ``counter`` and ``counted_request()`` come from `RequestCounting`, the part callers below this layer use

    @property
    def wants_history(self) -> bool:
        """Whether `import_thread` uses ``ThreadSeed.history`` (reading a long log is skipped otherwise): a manager
        with recall seeds its index from it."""
        return self.recall is not None

    def forget(self, thread_id: str | None = None) -> None:
        """Drop what the manager remembers about a thread (every thread when None); its next call starts afresh.

        The default drops the thread's metrics history (its previous view, its latest metrics) and, with recall,
        the thread's recall state and indexed passages (`forget_recall`)."""
        self.forget_recall([thread_id] if thread_id is not None else list(self._metrics.last_by_thread))
        self._metrics.forget(thread_id)

    def forget_recall(self, threads: Sequence[str]) -> None:
        """Drop what the manager's recall keeps of ``threads``: a deleted thread must not stay searchable."""
        if self.recall is not None:
            from ._recall_step import forget_threads

            forget_threads(self.recall, threads)

    def restore(self, message: Message) -> Message:
        """The original of a message this manager replaced with a pointer or cut, else ``message`` itself."""
        return message

    def export_thread(self, thread_id: str, view: Sequence[Message]) -> ThreadExport:
        """What ``view`` (the thread's latest managed view) depends on: the originals of its pointers (by
        `restore`) and, with recall, the turn it served."""
        pairs = []
        for message in offloaded(view):
            original = self.restore(message)
            if original is not message:
                pairs.append((message, original))
        served = self.recall.served(thread_id) if self.recall is not None else None
        return ThreadExport(originals=tuple(pairs), recall_served=served)

    def import_thread(self, thread_id: str, seed: ThreadSeed) -> None:
        """Take over a thread another process (or an earlier manager) managed. The default keeps nothing but the
        recall index: with recall on it is seeded from the history (`RecallStep.seed`), so a question about an
        early turn is answered as before the handover."""
        if self.recall is None:
            return
        from ._recall_step import RecallStep

        in_view = {m.message_id for m in seed.view}
        served = None
        if seed.recall_served is not None:
            served = next((m for m in seed.view if str(m.message_id) == seed.recall_served), None)
        RecallStep(self.recall, thread_id).seed(
            seed.history,
            lambda m: m.message_id in in_view,
            originals=(original for _, original in seed.originals),
            served=served,
        )

    def metrics_for(self, thread_id: str) -> TrimMetrics | None:
        """The metrics of the thread's latest call (safe under concurrent calls on other threads)."""
        return self._metrics.for_thread(thread_id)

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
