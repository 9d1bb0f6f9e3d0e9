"""`TokenBudgetContextManager`: a token budget with high/low watermarks that keeps provider prompt caches hitting.

Trimming a little on every call (a sliding window) changes the start of the prompt every time, so a provider's
prompt cache never hits and every call pays full price for every token. This manager does nothing while the view
is below the high watermark: the view it returns is the previous view plus the new messages, byte for byte. Once
the view reaches the high watermark it frees a large chunk at once, down to the low watermark, and then leaves the
prefix alone again. Most calls therefore reuse the whole previous prompt from the cache.

Freeing goes from the least to the most destructive step: old tool results become restorable pointers, then the
oldest units are summarized (when a summarizer is given) and dropped. Cuts fall only between units, a pending
tool call is never touched, and when the oldest kept unit is not a user message the user message that started it
stays pinned, so the view remains valid for OpenAI and Anthropic without inventing a message. A unit that alone
exceeds the budget is cut in the middle with a visible marker instead of vanishing.

Work per call is proportional to what is new: each thread's previous view and its running token total are kept,
so a call that appends a few messages counts only those (the counter memoizes per message anyway).
"""

from __future__ import annotations

import asyncio
import logging
import operator
import time
from collections import OrderedDict
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigurationError
from ..messages import Message
from ..state import AgentState
from ..tokens import TokenCounter, default_counter
from ..units import Unit, group_units
from .base import BaseContextManager, S
from .metrics import TrimMetrics, thread_key
from .pointers import OffloadStore, _cut_middle, clear_tool_results, offload_info, truncate_message
from .zones import scratchpad_message, summary_message, system_prompt_message, tool_schema_tokens

logger = logging.getLogger(__name__)

SUMMARY_FAILURE_LOG = "summarizer failed; dropping the oldest units without a summary instead"
CONSOLIDATE_INSTRUCTIONS = (
    "The text below is a running summary of an earlier conversation that has grown too long. Rewrite it as one "
    "shorter summary that keeps every fact, decision, file path, number, error and open task."
)
_MAX_TRACKED_THREADS = 1024
_MAX_SUMMARY_ROUNDS = 2
_SUMMARY_SEPARATOR = "\n\n"


@dataclass(frozen=True)
class _SummaryRequest:
    """What the core asks its sync or async driver to summarize (the only I/O a trim does)."""

    messages: list[Message]
    previous: str | None
    max_tokens: int
    instructions: str | None = None


@dataclass
class _Track:
    """What a thread's previous call produced, so the next call only has to look at what was appended."""

    view: tuple[Message, ...]
    source: tuple[Message, ...]
    message_tokens: int
    summary: str | None
    summary_tokens: int
    scratchpad: str | None
    scratchpad_tokens: int


def _extends(messages: Sequence[Message], prefix: tuple[Message, ...]) -> bool:
    """Whether ``messages`` starts with exactly the message objects of ``prefix`` (or equal ones, after a reload)."""
    n = len(prefix)
    if len(messages) < n:
        return False
    if all(map(operator.is_, messages, prefix)):
        return True
    for mine, theirs in zip(messages, prefix, strict=False):
        if mine is not theirs and (mine.message_id != theirs.message_id or mine.fingerprint() != theirs.fingerprint()):
            return False
    return True


def _check_int(name: str, value: object, *, minimum: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ConfigurationError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return value


def _check_fraction(name: str, value: object) -> float:
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise ConfigurationError(f"{name} must be a number between 0 and 1, got {value!r}")
    return float(value)


class TokenBudgetContextManager(BaseContextManager[S]):
    """Keep the view under ``max_tokens - reserve_tokens`` with watermark hysteresis (see the module docstring).

    ``max_tokens`` is the model's context window and ``reserve_tokens`` the room left for the reply. The view
    counted against the budget is everything sent: ``system_prompt`` and ``tools`` schemas (when the agent adds
    them at call time), system messages, the summary, the scratchpad and the messages. ``keep_tool_results``
    newest tool turns keep their outputs; older outputs of at least ``clear_min_tokens`` tokens are cleared to
    pointers first. Each summarizer call is asked for at most ``max_summary_tokens``; once the running summary
    exceeds ``summary_budget`` tokens it is condensed (or, failing that, cut in the middle with a marker).
    """

    def __init__(
        self,
        max_tokens: int,
        reserve_tokens: int = 2000,
        high_watermark: float = 0.9,
        low_watermark: float = 0.6,
        counter: TokenCounter | None = None,
        summarizer: Any = None,
        *,
        system_prompt: str | None = None,
        tools: Sequence[dict[str, Any]] | None = None,
        keep_tool_results: int = 3,
        clear_min_tokens: int = 100,
        max_summary_tokens: int = 600,
        summary_budget: int | None = None,
        summary_instructions: str | None = None,
        summary_timeout: float | None = 120.0,
    ) -> None:
        self.max_tokens = _check_int("max_tokens", max_tokens, minimum=1)
        self.reserve_tokens = _check_int("reserve_tokens", reserve_tokens, minimum=0)
        if max_tokens <= reserve_tokens:
            raise ConfigurationError(
                f"max_tokens ({max_tokens}) must be larger than reserve_tokens ({reserve_tokens}): the view's budget "
                "is max_tokens - reserve_tokens; raise max_tokens or lower reserve_tokens",
            )
        high = _check_fraction("high_watermark", high_watermark)
        low = _check_fraction("low_watermark", low_watermark)
        if not 0 < high <= 1:
            raise ConfigurationError(f"high_watermark must satisfy 0 < high_watermark <= 1, got {high_watermark!r}")
        if not 0 < low < high:
            raise ConfigurationError(
                f"low_watermark must satisfy 0 < low_watermark < high_watermark ({high_watermark!r}), "
                f"got {low_watermark!r}",
            )
        self.high_watermark = high
        self.low_watermark = low
        self.keep_tool_results = _check_int("keep_tool_results", keep_tool_results, minimum=0)
        self.clear_min_tokens = _check_int("clear_min_tokens", clear_min_tokens, minimum=0)
        self.max_summary_tokens = _check_int("max_summary_tokens", max_summary_tokens, minimum=1)
        if summary_timeout is not None and not (isinstance(summary_timeout, int | float) and summary_timeout > 0):
            raise ConfigurationError(
                f"summary_timeout must be a positive number of seconds or None, got {summary_timeout!r}",
            )
        self.summary_timeout = summary_timeout
        self.summary_instructions = summary_instructions
        if counter is not None and not all(
            callable(getattr(counter, name, None)) for name in ("count_text", "count_message", "count_messages")
        ):
            raise ConfigurationError(
                f"counter must be a TokenCounter (count_text, count_message, count_messages), got {counter!r}",
            )
        self.counter: TokenCounter = counter if counter is not None else default_counter()
        self.summarizer = self._wrap_summarizer(summarizer) if summarizer is not None else None

        self.budget = max_tokens - reserve_tokens
        self.high_limit = int(self.budget * high)
        self.low_limit = int(self.budget * low)
        if summary_budget is None:
            summary_budget = max(min(4 * max_summary_tokens, self.low_limit // 3), 1)
        self.summary_budget = _check_int("summary_budget", summary_budget, minimum=1)

        self.system_prompt = system_prompt
        self.tools = [dict(t) for t in tools] if tools else []
        fixed = tool_schema_tokens(self.tools, self.counter)
        if system_prompt:
            fixed += self.counter.count_message(system_prompt_message(system_prompt))
        self._fixed_tokens = fixed + self.counter.count_messages([])
        if self._fixed_tokens >= self.low_limit:
            raise ConfigurationError(
                f"system_prompt and tools alone cost {self._fixed_tokens} tokens, which leaves no room under the "
                f"low watermark ({self.low_limit} tokens of a {self.budget}-token budget); raise max_tokens",
            )
        self._tracks: OrderedDict[str, _Track] = OrderedDict()
        self._offloaded = OffloadStore()

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(max_tokens={self.max_tokens}, reserve_tokens={self.reserve_tokens}, "
            f"high_watermark={self.high_watermark}, low_watermark={self.low_watermark})"
        )

    @staticmethod
    def _wrap_summarizer(obj: Any) -> Any:
        from ..summarize import as_summarizer

        try:
            return as_summarizer(obj)
        except (TypeError, ValueError) as exc:
            raise ConfigurationError(f"summarizer cannot be used: {exc}") from exc

    # -- restoring --------------------------------------------------------------------------------------------

    @property
    def offloaded(self) -> OffloadStore:
        """Originals of every tool result this manager cleared and every body it truncated."""
        return self._offloaded

    def restore(self, message: Message) -> Message:
        """The original of a cleared or truncated message (the very object first seen), else ``message``."""
        return self._offloaded.restore(message)

    def restore_context(self, state: AgentState) -> list[Message]:
        """``state.context`` with every pointer and truncated body put back; ``state`` itself is not changed."""
        return self._offloaded.restore_all(state.context)

    # -- the public API -----------------------------------------------------------------------------------------

    def trim_context(self, state: S) -> S:
        """Sync form; a summarizer, if one must run, is awaited with ``asyncio.run`` (refused inside a running loop)."""
        core = self._run(state)
        try:
            request = next(core)
            while True:
                request = core.send(self._summarize_blocking(request, core))
        except StopIteration as done:
            result: S = done.value
            return result

    async def atrim_context(self, state: S) -> S:
        core = self._run(state)
        try:
            request = next(core)
            while True:
                request = core.send(await self._summarize(request))
        except StopIteration as done:
            result: S = done.value
            return result

    def forget(self, thread_id: str | None = None) -> None:
        """Drop what is remembered about a thread (all threads when None); its next call starts from scratch."""
        if thread_id is None:
            self._tracks.clear()
        else:
            self._tracks.pop(thread_id, None)

    # -- summarizer drivers -------------------------------------------------------------------------------------

    def _summarize_blocking(self, request: _SummaryRequest, core: Generator[Any, Any, Any]) -> str | None:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self._summarize(request))
        core.close()
        raise RuntimeError(
            "TokenBudgetContextManager.trim_context() needs to run its summarizer but was called from inside a "
            "running event loop; use `await manager.atrim_context(state)` instead",
        )

    async def _summarize(self, request: _SummaryRequest) -> str | None:
        """Run the summarizer; any failure is logged and reported as None so the core can fall back to dropping."""
        summarizer = self.summarizer
        if summarizer is None:
            return None
        try:
            pending = summarizer.summarize(
                request.messages,
                previous_summary=request.previous,
                max_tokens=request.max_tokens,
                instructions=request.instructions,
            )
            text = await (asyncio.wait_for(pending, self.summary_timeout) if self.summary_timeout else pending)
        except Exception:
            logger.exception(SUMMARY_FAILURE_LOG)
            return None
        if not isinstance(text, str) or not text.strip():
            logger.warning("summarizer returned no text; dropping the oldest units without a summary instead")
            return None
        return text.strip()

    # -- the core (shared by sync and async) --------------------------------------------------------------------

    def _zone_tokens(self, track: _Track | None, summary: str | None, scratchpad: str | None) -> tuple[int, int]:
        if track is not None and track.summary == summary:
            summary_tokens = track.summary_tokens
        else:
            summary_tokens = self.counter.count_message(summary_message(summary)) if summary else 0
        if track is not None and track.scratchpad == scratchpad:
            scratch_tokens = track.scratchpad_tokens
        else:
            scratch_tokens = self.counter.count_message(scratchpad_message(scratchpad)) if scratchpad else 0
        return summary_tokens, scratch_tokens

    def _run(self, state: S) -> Generator[_SummaryRequest, str | None, S]:
        started = time.perf_counter()
        key = thread_key(state)
        incoming = state.context
        track = self._tracks.get(key)
        count = self.counter.count_message
        summary = state.context_summary or None
        scratchpad = state.scratchpad or None
        summary_tokens, scratch_tokens = self._zone_tokens(track, summary, scratchpad)

        working: list[Message]
        if track is not None and _extends(incoming, track.view):
            working = incoming
            message_tokens = track.message_tokens + sum(count(m) for m in incoming[len(track.view) :])
        elif track is not None and track.source is not track.view and _extends(incoming, track.source):
            new = incoming[len(track.source) :]
            working = [*track.view, *new]
            message_tokens = track.message_tokens + sum(count(m) for m in new)
        else:
            working = incoming
            message_tokens = sum(count(m) for m in incoming)
        previous_summary = track.summary if track is not None else None

        total = self._fixed_tokens + summary_tokens + scratch_tokens + message_tokens
        tokens_before = total
        cleared = 0
        summaries = 0
        if total >= self.high_limit:
            result = yield from self._compact(working, summary, scratch_tokens)
            working, summary, cleared, summaries = result.messages, result.summary, result.cleared, result.summaries
            summary_tokens, scratch_tokens = self._zone_tokens(None, summary, scratchpad)
            message_tokens = sum(count(m) for m in working)
            total = self._fixed_tokens + summary_tokens + scratch_tokens + message_tokens
            if total > self.budget:
                logger.warning(
                    "view still costs %d tokens after compaction, over the %d-token budget: system messages, the "
                    "summary, the scratchpad or content that cannot be cut (media, tool-call arguments) fill it",
                    total,
                    self.budget,
                )

        if working is not incoming:
            state.context = working
        if summary != (state.context_summary or None):
            state.context_summary = summary
        view = tuple(working)
        self._tracks[key] = _Track(
            view=view,
            source=view if working is incoming else tuple(incoming),
            message_tokens=message_tokens,
            summary=summary,
            summary_tokens=summary_tokens,
            scratchpad=scratchpad,
            scratchpad_tokens=scratch_tokens,
        )
        self._tracks.move_to_end(key)
        while len(self._tracks) > _MAX_TRACKED_THREADS:
            self._tracks.popitem(last=False)

        stable: bool | None = None
        if track is not None:
            stable = summary == previous_summary and _extends(view, track.view)
        self._record(
            TrimMetrics(
                tokens_before=tokens_before,
                tokens_after=total,
                tokens_saved=tokens_before - total,
                messages_before=len(incoming),
                messages_after=len(working),
                tool_results_cleared=cleared,
                summaries_made=summaries,
                prefix_stable=stable,
                duration_s=time.perf_counter() - started,
            )
        )
        return state

    def _record(self, metrics: TrimMetrics) -> None:
        """Publish one call's metrics through the base class's recorder.

        The recorder's own ``record`` recounts both whole views; this manager already knows every number from its
        running totals, so it hands over the finished measurement and keeps the per-call cost independent of the
        history's length.
        """
        recorder = self._metrics
        recorder.last = metrics
        recorder.totals.add(metrics)

    def _compact(
        self, messages: list[Message], summary: str | None, scratch_tokens: int
    ) -> Generator[_SummaryRequest, str | None, _CompactionResult]:
        compaction = _Compaction(self, messages, summary, scratch_tokens)
        compaction.clear_tool_results()
        yield from compaction.drop_oldest()
        compaction.truncate_oversized()
        return compaction.result()


@dataclass
class _CompactionResult:
    messages: list[Message]
    summary: str | None
    cleared: int
    summaries: int


class _Compaction:
    """One trip from the high watermark down to the low one, over a working copy of the view."""

    def __init__(
        self, manager: TokenBudgetContextManager[Any], messages: list[Message], summary: str | None, scratch: int
    ) -> None:
        self.m = manager
        self.count = manager.counter.count_message
        self.msgs = list(messages)
        self.counts = [self.count(msg) for msg in self.msgs]
        self.summary = summary
        self.summary_tokens = self._summary_cost(summary)
        self.units: list[Unit] = group_units(self.msgs)
        self.ns = [u for u in self.units if u.kind != "system"]
        self.dropped = 0  # the first `dropped` non-system units are gone, except `pin`
        self.pin: int | None = None
        self.cleared = 0
        self.summaries = 0
        self.summarizer_failed = False
        # everything except the messages and the summary stays constant during a compaction
        self.other = manager._fixed_tokens + scratch
        self.total = self.other + self.summary_tokens + sum(self.counts)

    def _summary_cost(self, summary: str | None) -> int:
        return self.count(summary_message(summary)) if summary else 0

    def unit_tokens(self, unit: Unit) -> int:
        return sum(self.counts[unit.start : unit.end])

    def _replace(self, index: int, replacement: Message) -> None:
        self.m.offloaded.keep(self.msgs[index], replacement)
        new = self.count(replacement)
        self.total += new - self.counts[index]
        self.counts[index] = new
        self.msgs[index] = replacement

    # (a) tool results to pointers ---------------------------------------------------------------------------

    def clear_tool_results(self) -> None:
        low = self.m.low_limit
        if self.total <= low or not self.ns:
            return
        turns = [i for i, u in enumerate(self.ns) if u.kind == "tool_turn"]
        keep = self.m.keep_tool_results
        protected = set(turns[len(turns) - keep :]) if keep else set()
        protected.add(len(self.ns) - 1)
        for i in turns:
            if self.total <= low:
                return
            if i in protected:
                continue
            unit = self.ns[i]
            calls = {b.id: b for b in unit.head.tool_call_blocks()}
            for index in range(unit.start + 1, unit.end):
                msg = self.msgs[index]
                info = offload_info(msg)
                if (info is not None and info.get("kind") == "cleared") or self.counts[index] < self.m.clear_min_tokens:
                    continue
                replacement = clear_tool_results(msg, calls, tokens_before=self.counts[index])
                if self.count(replacement) >= self.counts[index]:
                    continue
                self._replace(index, replacement)
                self.cleared += len(replacement.tool_result_blocks())

    # (b, c) summarize and drop the oldest units ---------------------------------------------------------------

    def _pin_for(self, k: int) -> int | None:
        """The user unit kept when the first ``k`` units go and unit ``k`` does not start with a user message."""
        if k == 0 or self.ns[k].kind == "user":
            return None
        for j in range(k - 1, -1, -1):
            if self.ns[j].kind == "user":
                return j
        return None

    def _choose(self, reserve: int) -> int:
        """The fewest dropped units that bring the view to the low watermark, counting room for a summary.

        ``reserve`` is what a summary of the dropped units may add (at most what they cost). When no cut gets
        there, the cut leaving the smallest view wins (ties: the one dropping least).
        """
        low = self.m.low_limit
        sizes = [self.unit_tokens(u) for u in self.ns]
        pin = self.pin
        first_user = next((i for i, u in enumerate(self.ns) if u.kind == "user"), None)
        removed = 0
        best_k, best_total = self.dropped, self.total
        for k in range(self.dropped, len(self.ns)):
            if k > self.dropped:
                removed += sizes[k - 1]
            if first_user is not None and 0 < k < first_user:
                continue  # input that starts without a user message: cut at a user message instead
            new_pin = self._pin_for(k)
            candidate = self.total - removed
            if new_pin != pin:
                candidate -= sizes[pin] if pin is not None else 0
                candidate += sizes[new_pin] if new_pin is not None else 0
            if candidate + min(reserve, removed) <= low:
                return k
            if candidate < best_total:
                best_k, best_total = k, candidate
        return best_k

    def drop_oldest(self) -> Generator[_SummaryRequest, str | None, None]:
        low = self.m.low_limit
        ask = min(self.m.max_summary_tokens, max(low // 4, 32))
        rounds = 0
        while self.total > low and self.dropped < len(self.ns) - 1:
            summarize = self.m.summarizer is not None and not self.summarizer_failed and rounds < _MAX_SUMMARY_ROUNDS
            k = self._choose(ask + 16 if summarize else 0)
            if k == self.dropped and self._pin_for(k) == self.pin:
                return
            gone = self._apply_cut(k)
            if summarize and gone:
                rounds += 1
                text = yield _SummaryRequest(
                    messages=gone, previous=self.summary, max_tokens=ask, instructions=self.m.summary_instructions
                )
                if text is None:
                    self.summarizer_failed = True
                else:
                    self._set_summary(f"{self.summary}{_SUMMARY_SEPARATOR}{text}" if self.summary else text)
                    self.summaries += 1
                    yield from self.bound_summary()

    def _apply_cut(self, k: int) -> list[Message]:
        """Drop units up to ``k`` (keeping the new pin); return the messages that left the view, oldest first."""
        new_pin = self._pin_for(k)
        leaving: list[int] = []
        if self.pin is not None and self.pin != new_pin:
            leaving.append(self.pin)
        leaving.extend(j for j in range(self.dropped, k) if j != new_pin and j != self.pin)
        leaving.sort()
        gone: list[Message] = []
        for j in leaving:
            unit = self.ns[j]
            self.total -= self.unit_tokens(unit)
            gone.extend(self.msgs[unit.start : unit.end])
        self.dropped = max(self.dropped, k)
        self.pin = new_pin
        return gone

    def _set_summary(self, summary: str) -> None:
        cost = self._summary_cost(summary)
        self.total += cost - self.summary_tokens
        self.summary, self.summary_tokens = summary, cost

    def bound_summary(self) -> Generator[_SummaryRequest, str | None, None]:
        """Keep the running summary under ``summary_budget``: condense it with the summarizer, else cut its middle."""
        budget = self.m.summary_budget
        if self.summary is None or self.summary_tokens <= budget:
            return
        if self.m.summarizer is not None and not self.summarizer_failed:
            document = Message.text_message(
                self.summary, role="user", message_id="windowkeeper:summary-to-condense", timestamp=None
            )
            text = yield _SummaryRequest(
                messages=[document], previous=None, max_tokens=budget // 2, instructions=CONSOLIDATE_INSTRUCTIONS
            )
            if text is not None and self._summary_cost(text) < self.summary_tokens:
                self._set_summary(text)
                self.summaries += 1
        if self.summary_tokens > budget:
            self._set_summary(_cut_middle(self.summary, budget - 24, self.m.counter))

    # (d) cut what is too large to fit ----------------------------------------------------------------------------

    def kept_units(self) -> list[Unit]:
        kept = list(self.ns[self.dropped :])
        if self.pin is not None:
            kept.insert(0, self.ns[self.pin])
        return kept

    def truncate_oversized(self) -> None:
        """After every droppable unit is gone, cut the largest kept bodies until the view is under the low mark."""
        if self.total <= self.m.high_limit:
            return
        low = self.m.low_limit
        indices = [i for u in self.kept_units() for i in range(u.start, u.end)]
        indices.sort(key=lambda i: self.counts[i], reverse=True)
        for index in indices:
            excess = self.total - low
            if excess <= 0:
                return
            size = self.counts[index]
            replacement = truncate_message(self.msgs[index], max(size - excess, 32), self.m.counter)
            if replacement is None or replacement is self.msgs[index] or self.count(replacement) >= size:
                continue
            self._replace(index, replacement)
            logger.info(
                "message %r alone exceeded the budget; cut from %d to %d tokens",
                self.msgs[index].message_id,
                size,
                self.counts[index],
            )

    def result(self) -> _CompactionResult:
        keep: set[int] = set(range(self.dropped, len(self.ns)))
        if self.pin is not None:
            keep.add(self.pin)
        kept_starts = {self.ns[j].start for j in keep}
        out: list[Message] = []
        for unit in self.units:
            if unit.kind == "system" or unit.start in kept_starts:
                out.extend(self.msgs[unit.start : unit.end])
        return _CompactionResult(out, self.summary, self.cleared, self.summaries)


__all__ = ["SUMMARY_FAILURE_LOG", "TokenBudgetContextManager"]
