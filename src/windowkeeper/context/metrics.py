"""What one trim did, and running totals per manager.

A manager that trims silently is hard to tune: users need to see how many tokens a call saved and whether the
prompt prefix stayed byte-identical, because a stable prefix is what lets a provider's prompt cache hit. The
recorder here measures both for every call of a built-in manager without the manager having to know how.

The "view" measured is what a model would be sent, as `windowkeeper.prompt.assemble` lays it out: the system
text (system messages, summary, scratchpad) and the conversation of ``state.context``. Tokens are counted with the
exact shared counter, which caches per message, so measuring a long history costs only the messages that are new
since the last call.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from .._cache import LRUCache
from ..messages import Message
from ..prompt import AssembledPrompt, assemble_messages

if TYPE_CHECKING:
    from ..state import AgentState
    from ..tokens import TokenCounter

DEFAULT_THREAD = "default"
_MAX_TRACKED_THREADS = 4096
_SUM_EVERY = 256
"""How many `Measured` records a recorder keeps aside before adding them to its totals."""


class TrimMetrics(BaseModel):
    """Measurements of a single ``trim_context``/``atrim_context`` call.

    ``prefix_stable`` is True when the previous call's view (for the same thread) is a prefix of this call's view,
    so a provider prompt cache could reuse the whole previous prompt; None on a thread's first call. ``zones`` is
    ``tokens_after`` split by zone (`windowkeeper.prompt.ZONES`; ``reserve`` is not part of ``tokens_after``).
    """

    model_config = ConfigDict(frozen=True)

    tokens_before: int = 0
    tokens_after: int = 0
    tokens_saved: int = 0
    messages_before: int = 0
    messages_after: int = 0
    tool_results_cleared: int = 0
    summaries_made: int = 0
    prefix_stable: bool | None = None
    duration_s: float = 0.0
    zones: dict[str, int] = Field(default_factory=dict)


_TRIM_FIELDS = frozenset(TrimMetrics.model_fields)
_set_attribute = object.__setattr__


def measured(
    tokens_before: int,
    tokens_after: int,
    messages_before: int,
    messages_after: int,
    tool_results_cleared: int,
    summaries_made: int,
    prefix_stable: bool | None,
    duration_s: float,
    zones: dict[str, int],
) -> TrimMetrics:
    """The `TrimMetrics` of one call, from numbers a manager computed itself (ints it summed, a float it timed, a
    dict it built for this record), so nothing needs validating: the same model ``TrimMetrics(...)`` makes, with
    every field set. A budget manager records one per call, and validating it took about 4 of the ~11 us of a call
    that appends nothing (measured under load: 8.6 us validated, 4.5 us built here).
    """
    metrics = TrimMetrics.__new__(TrimMetrics)
    _set_attribute(
        metrics,
        "__dict__",
        {
            "tokens_before": tokens_before,
            "tokens_after": tokens_after,
            "tokens_saved": tokens_before - tokens_after,
            "messages_before": messages_before,
            "messages_after": messages_after,
            "tool_results_cleared": tool_results_cleared,
            "summaries_made": summaries_made,
            "prefix_stable": prefix_stable,
            "duration_s": duration_s,
            "zones": zones,
        },
    )
    _set_attribute(metrics, "__pydantic_fields_set__", set(_TRIM_FIELDS))
    _set_attribute(metrics, "__pydantic_extra__", None)
    _set_attribute(metrics, "__pydantic_private__", None)
    return metrics


Numbers = tuple[int, int, int, int, int, int, bool | None, float, tuple[int, ...]]
"""`measured`'s arguments in order, with the zones as a tuple of tokens in `ZONE_ORDER`."""

ZONE_ORDER = ("system", "tools", "summary", "scratchpad", "recall", "recent", "reserve")
"""The zones of a `Measured` record, in the order its ``zones`` tuple lists their tokens."""


class Measured:
    """One call's numbers as a manager computed them, made into its `TrimMetrics` only when someone reads them.

    A budget manager records one per call, and most callers (a graph's agent, a loop calling ``trim_context``)
    never read a call's metrics: building the model and its zones dict was ~1.7 us of a call that appends a
    message or two (~45 us of tokenizing them). ``numbers`` are `measured`'s arguments in order, with ``zones``
    as a tuple of tokens in `ZONE_ORDER`; the model is built once, on first read, and kept.
    """

    __slots__ = ("_metrics", "numbers")

    def __init__(self, numbers: Numbers) -> None:
        self.numbers = numbers
        self._metrics: TrimMetrics | None = None

    def metrics(self) -> TrimMetrics:
        made = self._metrics
        if made is None:
            before, after, messages_before, messages_after, cleared, summaries, stable, duration, zones = self.numbers
            made = self._metrics = measured(
                before,
                after,
                messages_before,
                messages_after,
                cleared,
                summaries,
                stable,
                duration,
                dict(zip(ZONE_ORDER, zones, strict=True)),
            )
        return made


class MetricsTotals(BaseModel):
    """Cumulative sums over every recorded call of one manager."""

    calls: int = 0
    tokens_before: int = 0
    tokens_after: int = 0
    tokens_saved: int = 0
    messages_before: int = 0
    messages_after: int = 0
    tool_results_cleared: int = 0
    summaries_made: int = 0
    prefix_stable_calls: int = 0
    duration_s: float = 0.0

    def add(self, m: TrimMetrics) -> None:
        """Add one call's numbers (ints and a float the recorder measured, so nothing needs validating).

        Runs on every call of every manager: the fields are updated in the model's ``__dict__`` directly, since
        pydantic's ``__setattr__`` would cost about 1 us per field, more than the rest of a budget manager's
        bookkeeping for a call.
        """
        fields = self.__dict__
        if not fields["calls"]:
            self.__pydantic_fields_set__.update(_TOTALS_FIELDS)
        src = m.__dict__
        fields["calls"] += 1
        # every summed field written out rather than looped over by name: this runs on every call of every manager
        fields["tokens_before"] += src["tokens_before"]
        fields["tokens_after"] += src["tokens_after"]
        fields["tokens_saved"] += src["tokens_saved"]
        fields["messages_before"] += src["messages_before"]
        fields["messages_after"] += src["messages_after"]
        fields["tool_results_cleared"] += src["tool_results_cleared"]
        fields["summaries_made"] += src["summaries_made"]
        fields["duration_s"] += src["duration_s"]
        if src["prefix_stable"]:
            fields["prefix_stable_calls"] += 1

    def add_numbers(self, records: Sequence[Numbers]) -> None:
        """`add` of `Measured` records' numbers, without building their models: summed in local variables and
        written to the fields once, since a recorder folds its records in batches (`MetricsRecorder.totals`)."""
        if not records:
            return
        fields = self.__dict__
        if not fields["calls"]:
            self.__pydantic_fields_set__.update(_TOTALS_FIELDS)
        before_sum = after_sum = messages_before_sum = messages_after_sum = cleared_sum = summaries_sum = 0
        stable_sum = 0
        duration_sum = 0.0
        for before, after, messages_before, messages_after, cleared, summaries, stable, duration, _ in records:
            before_sum += before
            after_sum += after
            messages_before_sum += messages_before
            messages_after_sum += messages_after
            cleared_sum += cleared
            summaries_sum += summaries
            duration_sum += duration
            if stable:
                stable_sum += 1
        fields["calls"] += len(records)
        fields["tokens_before"] += before_sum
        fields["tokens_after"] += after_sum
        fields["tokens_saved"] += before_sum - after_sum
        fields["messages_before"] += messages_before_sum
        fields["messages_after"] += messages_after_sum
        fields["tool_results_cleared"] += cleared_sum
        fields["summaries_made"] += summaries_sum
        fields["duration_s"] += duration_sum
        fields["prefix_stable_calls"] += stable_sum

    @property
    def prefix_stable_ratio(self) -> float | None:
        """Share of calls with a stable prefix, among all calls (None before the first call)."""
        return self.prefix_stable_calls / self.calls if self.calls else None


_TOTALS_FIELDS = frozenset(MetricsTotals.model_fields)


@dataclass(frozen=True)
class ViewSnapshot:
    """The view at the start of a call: captured before the manager mutates the state in place."""

    thread_id: str
    summary: str | None
    messages: tuple[Message, ...]
    started: float
    scratchpad: str | None = None


def _fingerprints(messages: Sequence[Message]) -> tuple[str, ...]:
    """Fingerprints of ``messages``, reading the memo directly (pydantic's private-attribute lookup is slow)."""
    out: list[str] = []
    append = out.append
    for message in messages:
        private = message.__pydantic_private__
        fp = private.get("_fingerprint") if private else None
        append(fp if fp is not None else message.fingerprint())
    return tuple(out)


def _same_view(before: ViewSnapshot, summary: str | None, messages: Sequence[Message]) -> bool:
    if summary != before.summary or len(messages) != len(before.messages):
        return False
    return all(a is b for a, b in zip(messages, before.messages, strict=True))


def _sent_tokens(prompt: AssembledPrompt) -> int:
    """The count of the request, or 0 when the view has nothing to send."""
    return prompt.input_tokens if prompt.messages or prompt.system else 0


def thread_key(state: AgentState) -> str:
    meta = getattr(state, "execution_meta", None)
    tid = getattr(meta, "thread_id", None)
    return str(tid) if tid else DEFAULT_THREAD


def snapshot(state: AgentState) -> ViewSnapshot:
    return ViewSnapshot(
        thread_id=thread_key(state),
        summary=state.context_summary,
        messages=tuple(state.context),
        started=time.perf_counter(),
        scratchpad=state.scratchpad,
    )


class MetricsRecorder:
    """Counts tokens of views, tracks each thread's previous view, and keeps last/total metrics.

    Locked because a manager instance may be shared by threads as well as tasks; the work under the lock is
    dictionary lookups and counter-cache hits.
    """

    def __init__(self, counter: TokenCounter | None = None) -> None:
        self._counter = counter
        self._lock = threading.Lock()
        self._previous: LRUCache[str, tuple[str | None, tuple[str, ...]]] = LRUCache(_MAX_TRACKED_THREADS)
        self._last: TrimMetrics | Measured | None = None
        self.last_by_thread: LRUCache[str, TrimMetrics | Measured] = LRUCache(_MAX_TRACKED_THREADS)
        """Each thread's latest metrics (bounded like the previous views), read through `for_thread`: concurrent
        calls on different threads each read their own, where ``last`` is whichever call finished last."""
        self._totals = MetricsTotals()
        self._unsummed: list[Numbers] = []
        """`Measured` records not yet added to the totals (`totals` adds them; at most `_SUM_EVERY`)."""

    @property
    def totals(self) -> MetricsTotals:
        """The cumulative metrics over every recorded call."""
        with self._lock:
            self._sum_unsummed()
            return self._totals

    def _sum_unsummed(self) -> None:
        """Add the records kept aside by `publish_measured` to the totals (the lock is held)."""
        if self._unsummed:
            self._totals.add_numbers(self._unsummed)
            self._unsummed = []

    @property
    def last(self) -> TrimMetrics | None:
        """The metrics of the call that finished last (None before the first)."""
        last = self._last
        return last.metrics() if isinstance(last, Measured) else last

    def for_thread(self, thread_id: str) -> TrimMetrics | None:
        """The metrics of ``thread_id``'s latest call (None when none is kept)."""
        found = self.last_by_thread.peek(thread_id)
        return found.metrics() if isinstance(found, Measured) else found

    def __getstate__(self) -> dict[str, object]:
        # managers get copied and pickled with graphs and configs; a lock is neither, so it is rebuilt
        state = self.__dict__.copy()
        del state["_lock"]
        return state

    def __setstate__(self, state: dict[str, object]) -> None:
        # a recorder pickled before its totals and latest metrics became properties kept them as plain attributes
        for old, new in (("totals", "_totals"), ("last", "_last")):
            if old in state:
                state[new] = state.pop(old)
        state.setdefault("_unsummed", [])
        self.__dict__.update(state)
        self._lock = threading.Lock()

    @property
    def counter(self) -> TokenCounter:
        if self._counter is not None:
            return self._counter
        from ..tokens import default_counter

        # looked up each time (it is a cached shared instance) so a copied manager never carries the counter
        return default_counter()

    def assembled(
        self, summary: str | None, messages: Sequence[Message], scratchpad: str | None = None
    ) -> AssembledPrompt:
        """The request a model would be sent for this view (no system prompt or tools: a manager does not know them)."""
        return assemble_messages(messages, summary=summary, scratchpad=scratchpad, counter=self.counter)

    def view_tokens(self, summary: str | None, messages: Sequence[Message], scratchpad: str | None = None) -> int:
        """Tokens of the request for this view; 0 when there is nothing to send."""
        return _sent_tokens(self.assembled(summary, messages, scratchpad))

    def record(
        self,
        before: ViewSnapshot,
        state: AgentState,
        *,
        tool_results_cleared: int = 0,
        summaries_made: int = 0,
    ) -> TrimMetrics:
        after_messages = list(state.context)
        after_summary = state.context_summary
        after_scratchpad = state.scratchpad
        with self._lock:
            before_prompt = self.assembled(before.summary, before.messages, before.scratchpad)
            tokens_before = _sent_tokens(before_prompt)
            if _same_view(before, after_summary, after_messages) and after_scratchpad == before.scratchpad:
                after = before_prompt
            else:
                after = self.assembled(after_summary, after_messages, after_scratchpad)
            tokens_after = _sent_tokens(after)
            key = (after_summary or None, _fingerprints(after_messages))
            prev = self._previous.peek(before.thread_id)
            stable: bool | None = None
            if prev is not None:
                stable = prev[0] == key[0] and key[1][: len(prev[1])] == prev[1]
            self._previous.put(before.thread_id, key)
            metrics = TrimMetrics(
                tokens_before=tokens_before,
                tokens_after=tokens_after,
                tokens_saved=tokens_before - tokens_after,
                messages_before=len(before.messages),
                messages_after=len(after_messages),
                tool_results_cleared=tool_results_cleared,
                summaries_made=summaries_made,
                prefix_stable=stable,
                duration_s=time.perf_counter() - before.started,
                zones=after.zone_tokens if tokens_after else {},
            )
        self.publish(before.thread_id, metrics)
        return metrics

    def publish(self, thread_id: str, metrics: TrimMetrics) -> None:
        """Make ``metrics`` the latest (overall and of ``thread_id``) and add them to the totals."""
        with self._lock:
            self._last = metrics
            self.last_by_thread.put(thread_id, metrics)
            self._totals.add(metrics)

    def publish_measured(self, thread_id: str, record: Measured) -> None:
        """`publish` of a record whose model is built only when read (`Measured`). Its numbers are added to the
        totals in batches, when they are read or `_SUM_EVERY` records wait (about half the cost of adding one)."""
        with self._lock:
            self._last = record
            self.last_by_thread.put(thread_id, record)
            unsummed = self._unsummed
            unsummed.append(record.numbers)
            if len(unsummed) >= _SUM_EVERY:
                self._sum_unsummed()

    def forget(self, thread_id: str | None = None) -> None:
        """Drop a thread's previous view and latest metrics (every thread's when None); totals stay."""
        with self._lock:
            if thread_id is None:
                self._previous.drop()
                self.last_by_thread.drop()
            else:
                self._previous.pop(thread_id)
                self.last_by_thread.pop(thread_id)

    def reset(self) -> None:
        with self._lock:
            self._previous.drop()
            self.last_by_thread.drop()
            self._last = None
            self._totals = MetricsTotals()
            self._unsummed = []
