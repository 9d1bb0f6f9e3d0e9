"""One compaction of `TokenBudgetContextManager`: from the high watermark down to the low one.

Works on segments (a unit plus the token count of each of its messages) so that no step recounts or regroups
the whole view: segments survive from call to call, and only messages appended since the last compaction are
grouped. Steps, least destructive first: clear old tool results to pointers, clear old long assistant replies
to pointers, summarize and drop the oldest units, cut what alone is too large. Summaries are requested by
yielding a `SummaryRequest`, which lets one implementation serve both the sync and the async manager API.

A cold trim (a long history seen for the first time) is planned from the newest end instead: `plan_cold` reads
messages backwards only until the newest part alone, with its tool results and replies cleared, is certain to
stay over the low watermark. Everything older is then certain to be dropped, so it is never counted or cleared;
the compaction runs on the newest part and gives the same view and summary as one run over the whole history.
"""

from __future__ import annotations

import itertools
import json
import logging
import operator
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..messages import Message, same_message
from ..prompt import summary_tokens
from ..prompt.recall import is_recall
from ..summarize.limits import DEFAULT_INPUT_LIMIT, newest_within
from ..tokens import counting_once
from ..units import UnitKind, group_units_as
from ._turns import opens_turn
from .base import SummaryRequest
from .pointers import (
    OffloadStore,
    _cut_middle,
    clear_reply,
    clear_tool_results_counted,
    offload_info,
    pointer_counts,
    truncate_message,
)

if TYPE_CHECKING:
    from types import EllipsisType

    from ..blocks import ToolCallBlock
    from ..tokenizing.pieces import PieceCounts
    from ..tokens import TokenCounter

logger = logging.getLogger(__name__)

CONSOLIDATE_INSTRUCTIONS = (
    "The text below is a running summary of an earlier conversation that has grown too long. Rewrite it as one "
    "shorter summary that keeps every fact, decision, file path, number, error and open task."
)
SUMMARY_SEPARATOR = "\n\n"
UNSUMMARIZED_MARKER = (
    "[{count} earlier messages left this view without a summary because the summarizer failed; "
    "the full history is kept in the message log]"
)


def unsummarized_marker(count: int) -> str:
    """The line the summary zone carries for messages a failed summarizer could not cover (a marked cut)."""
    return UNSUMMARIZED_MARKER.format(count=count)


_MESSAGES = operator.attrgetter("messages")
_MAX_SUMMARY_ROUNDS = 2
_CUT_MARKER_TOKENS = 24
"""Room a summary cut in its middle leaves for the marker saying how much was left out."""
_MIN_FITTED_SUMMARY = 64
"""Tokens a summary cut to fit the budget (`Compaction.fit_summary`) keeps at least, its marker included."""
_MIN_TRUNCATED_TOKENS = 32
_SUMMARY_SLACK = 16
_REQUEST_SLACK = 256
"""Tokens of a summarizer request kept for its prompt framing, on top of the messages and previous summary."""
"""Tokens of the summary message's framing and separator, on top of what the summarizer is asked for."""
COLD_PLAN_MIN_MESSAGES = 512
"""Shorter cold histories are counted whole: that costs little and keeps ``tokens_before`` exact."""
_CLEARED_ESTIMATE = 80
"""Rough tokens of a pointer, used only to guess how far back a cold plan must read; the plan is then checked."""


class Segment:
    """A unit of the view with its messages' token counts; replaced, never mutated, when a body changes.

    A slotted class rather than a frozen dataclass: one is made per unit of every compaction, and a frozen
    dataclass's ``__init__`` costs several times more. ``tokens``, the sum of ``counts``, is taken once because a
    compaction reads it for every unit it weighs.
    """

    __slots__ = ("cleared", "counts", "kind", "messages", "tokens")

    def __init__(
        self, kind: UnitKind, messages: tuple[Message, ...], counts: tuple[int, ...], cleared: bool = False
    ) -> None:
        self.kind: UnitKind = kind
        self.messages = messages
        self.counts = counts
        self.cleared = cleared
        self.tokens = sum(counts)

    def __repr__(self) -> str:
        return f"Segment({self.kind!r}, {len(self.messages)} messages, {self.tokens} tokens, cleared={self.cleared})"


def segments(
    messages: Sequence[Message], counter: TokenCounter, count: Callable[[Message], int] | None = None
) -> list[Segment]:
    """The units of ``messages`` with their counts (``count`` when the caller already knows them)."""
    price = count or counter.count_message

    def segment(
        kind: UnitKind,
        start: int,
        end: int,
        unit: tuple[Message, ...],
        calls: tuple[str, ...],
        answered: tuple[str, ...],
    ) -> Segment:
        return Segment(kind, unit, tuple(map(price, unit)))

    return group_units_as(messages, segment)


def extend_segments(
    known: list[Segment],
    covered: int,
    view: Sequence[Message],
    counter: TokenCounter,
    count: Callable[[Message], int] | None = None,
) -> list[Segment]:
    """Segments of ``view`` given those of its first ``covered`` messages; a trailing pending unit is regrouped.

    Only a pending unit can change when messages are appended (its results arrive); every other unit ends where
    it ended, so grouping the rest alone gives the same units as grouping the whole view. ``count`` prices the
    messages after ``covered`` (default: the counter's memo).
    """
    out = list(known)
    if out and out[-1].kind == "pending":
        pending = out.pop()
        covered -= len(pending.messages)
        # the pending unit's counts are known (for its messages or equal ones read back from a checkpoint); only
        # the messages appended since need counting
        known_counts = {m.message_id: (m, n) for m, n in zip(pending.messages, pending.counts, strict=True)}
        outer = count or counter.count_message

        def count(message: Message) -> int:
            hit = known_counts.get(message.message_id)
            return hit[1] if hit is not None and same_message(hit[0], message) else outer(message)

    out.extend(segments(view[covered:], counter, count))
    return out


@dataclass
class Outcome:
    """The compacted view and what it took."""

    segments: list[Segment]
    summary: str | None
    cleared: int = 0
    summaries: int = 0
    messages: list[Message] = field(default_factory=list)


@dataclass(frozen=True)
class Limits:
    """The manager settings a compaction reads."""

    low: int
    high: int
    other_tokens: int
    keep_tool_results: int
    clear_min_tokens: int
    keep_replies: int
    reply_min_tokens: int | None
    max_summary_tokens: int
    summary_budget: int
    chat_summary_budget: int
    summary_mode: str
    summary_instructions: str | None
    summarize: bool
    summary_cost: Callable[[str], int] | None = None
    """Tokens a summary adds to the request (`windowkeeper.prompt`); None: the summary alone in a system text."""
    summary_input_limit: int = DEFAULT_INPUT_LIMIT
    """Tokens one summarizer request may hold (the summarizer's stated ``input_limit``)."""
    budget: int | None = None
    """The hard limit (the high watermark when None): the turn in progress is cut into only to stay under it."""

    @property
    def hard(self) -> int:
        """The limit a view must end under: ``budget``, or the high watermark when none is given."""
        return self.budget if self.budget is not None else self.high


class Compaction:
    """A working copy of the view's segments being brought down to the low watermark."""

    def __init__(
        self,
        segs: list[Segment],
        summary: str | None,
        limits: Limits,
        counter: TokenCounter,
        store: OffloadStore,
        *,
        agentic: bool | None = None,
        dropped_unread: Sequence[Message] = (),
    ) -> None:
        """``agentic`` overrides the tool-activity check of ``segs`` (a cold plan knows it for the whole history);
        ``dropped_unread`` are messages a cold plan dropped before the segments, summarized with the first cut."""
        self.segs = list(segs)
        self.limits = limits
        self.counter = counter
        # a replacement is a new message, counted once here and carried in its segment
        self.count_new = counting_once(counter)
        self.store = store
        self.summary = summary
        self.unsummarized = list(dropped_unread) if limits.summarize else []
        self.summary_tokens = self._summary_cost(summary)
        # one pass over the units: the non-system ones (``ns``), for each the nearest user unit before it (kinds
        # never change during a compaction), the first and newest user units, tool activity and the tokens
        ns: list[int] = []
        user_before: list[int | None] = []
        last_user: int | None = None
        first_user: int | None = None
        tool_activity = False
        unit_tokens = 0
        for i, seg in enumerate(self.segs):
            unit_tokens += seg.tokens
            kind = seg.kind
            if kind == "system":
                continue
            user_before.append(last_user)
            if kind == "user":
                last_user = len(ns)
                if first_user is None:
                    first_user = last_user
            elif kind != "assistant":
                tool_activity = True
            ns.append(i)
        self.ns = ns
        self.user_before = user_before
        if agentic is None:
            agentic = tool_activity
        self.summary_budget = limits.summary_budget if agentic else limits.chat_summary_budget
        # condensing goes to half the budget in agent sessions, where a smaller summary leaves room for tool
        # output and so fewer compactions; in a chat the summary is the memory and keeps most of its budget
        self.condense_to = self.summary_budget // 2 if agentic else self.summary_budget * 7 // 8
        self.first_user = first_user
        self.turn_start, self.in_progress = self._turn_in_progress(last_user)
        self.max_drop = self.turn_start if self.in_progress else len(self.ns)
        """Units before this one may be dropped; the turn in progress is dropped only as the last resort."""
        self.dropped = 0  # the first `dropped` non-system units are gone, except the pinned one
        self.pin: int | None = None
        self.cleared = 0
        self.replies_cleared = 0
        self.summaries = 0
        self.summarizer_failed = False
        self.unsummarized_count = 0
        self._summary_before_mark: str | None = None
        self.total = limits.other_tokens + self.summary_tokens + unit_tokens

    def _turn_in_progress(self, newest: int | None) -> tuple[int, set[int]]:
        """The newest user unit (``newest``, an index into ``ns``) and the tool turns after it while the model has
        not answered them yet.

        Their results are what the model is working from; clearing or dropping them before it answers makes it
        answer without the file it read (or read it again). Once a plain assistant reply follows them, the turn
        is answered and they age like any other result.

        A user message that comes right after tool results, before the model replied to them, does not open a
        turn of its own: it was sent with the results (an Anthropic ``[tool_result, text]`` turn, a reminder or a
        hint a client adds), and the model still has to answer them. The turn then starts at the user message
        before those tool turns (`plan_cold` reads a long history from such a turn's start on). One step back
        only: a client that never replies after tool results (each request right after the last one's results)
        would otherwise make the whole conversation one turn that nothing may cut.
        """
        if newest is None:
            return len(self.ns), set()
        if newest > 0 and self.segs[self.ns[newest - 1]].kind == "tool_turn":
            before = self.user_before[newest - 1]
            if before is not None:
                newest = before
        tools = [j for j in range(newest + 1, len(self.ns)) if self.segs[self.ns[j]].kind == "tool_turn"]
        if tools and any(self.segs[self.ns[j]].kind == "assistant" for j in range(tools[-1] + 1, len(self.ns))):
            return newest, set()
        return newest, set(tools)

    def _summary_cost(self, summary: str | None) -> int:
        if not summary:
            return 0
        cost = self.limits.summary_cost
        return cost(summary) if cost is not None else summary_tokens(summary, self.counter)

    def _set_summary(self, summary: str) -> None:
        cost = self._summary_cost(summary)
        self.total += cost - self.summary_tokens
        self.summary, self.summary_tokens = summary, cost

    def _size(self, j: int) -> int:
        return self.segs[self.ns[j]].tokens

    def _replace(
        self, seg_index: int, position: int, replacement: Message, new_count: int, *, cleared: bool | None = None
    ) -> None:
        seg = self.segs[seg_index]
        self.store.keep(seg.messages[position], replacement)
        self.total += new_count - seg.counts[position]
        messages = list(seg.messages)
        counts = list(seg.counts)
        messages[position] = replacement
        counts[position] = new_count
        self.segs[seg_index] = Segment(
            seg.kind, tuple(messages), tuple(counts), seg.cleared if cleared is None else cleared
        )

    # (a) old tool results to pointers -------------------------------------------------------------------------

    def clear_tool_results(self, *, in_progress: bool = False) -> None:
        """Old tool results to pointers, oldest first, until the low watermark; never the newest
        ``keep_tool_results`` turns, the last unit, or (unless ``in_progress``: the fallback when the turn alone
        is over the budget) the results of the turn in progress."""
        lim = self.limits
        if self.total <= lim.low or not self.ns:
            return
        turns = [j for j, i in enumerate(self.ns) if self.segs[i].kind == "tool_turn"]
        if in_progress:
            turns = sorted(self.in_progress)
            protected = set()
        else:
            protected = set(turns[-lim.keep_tool_results :]) if lim.keep_tool_results else set()
            protected |= self.in_progress
        protected.add(len(self.ns) - 1)
        keep = self.store.keep
        pieces: PieceCounts | EllipsisType | None = ...  # `pointer_counts` of the counter, looked up once
        for j in turns:
            if self.total <= lim.low:
                return
            seg_index = self.ns[j]
            seg = self.segs[seg_index]
            if j in protected or seg.cleared:
                continue
            # the turn's results are replaced in copies of its lists, and its segment is rebuilt once
            messages, counts = seg.messages, seg.counts
            new_messages: list[Message] | None = None
            new_counts: list[int] = []
            calls: dict[str, ToolCallBlock] | None = None  # made for the first result worth clearing
            for position in range(1, len(messages)):
                msg, size = messages[position], counts[position]
                if size < lim.clear_min_tokens:
                    continue
                info = offload_info(msg)
                if info is not None and info.get("kind") == "cleared":
                    continue
                if calls is None:
                    calls = {b.id: b for b in messages[0].tool_call_blocks()}
                if pieces is ...:
                    pieces = pointer_counts(self.counter)
                replacement, new_count = clear_tool_results_counted(
                    msg, calls, tokens_before=size, counter=self.counter, count=self.count_new, pieces=pieces
                )
                if new_count >= size:
                    continue
                keep(msg, replacement)
                self.total += new_count - size
                if new_messages is None:
                    new_messages, new_counts = list(messages), list(counts)
                new_messages[position] = replacement
                new_counts[position] = new_count
                self.cleared += len(replacement.tool_result_blocks())
            if new_messages is None:
                self.segs[seg_index] = Segment(seg.kind, messages, counts, True)
            else:
                self.segs[seg_index] = Segment(seg.kind, tuple(new_messages), tuple(new_counts), True)

    def clear_replies(self) -> None:
        """Old long assistant replies (no tool call) to pointers, oldest first, until the low watermark.

        In a chat the assistant's replies are most of the text while the user's short statements hold what
        later turns ask about; clearing the replies keeps many more user turns verbatim before any unit has to
        be dropped. The newest ``keep_replies`` replies and the last unit stay whole.
        """
        lim = self.limits
        if lim.reply_min_tokens is None or self.total <= lim.low or not self.ns:
            return
        replies = [j for j, i in enumerate(self.ns) if self.segs[i].kind == "assistant"]
        protected = set(replies[-lim.keep_replies :]) if lim.keep_replies else set()
        protected.add(len(self.ns) - 1)
        for j in replies:
            if self.total <= lim.low:
                break
            seg_index = self.ns[j]
            seg = self.segs[seg_index]
            if j in protected or seg.cleared or seg.counts[0] < lim.reply_min_tokens:
                continue
            replacement = clear_reply(seg.messages[0], tokens_before=seg.counts[0])
            if replacement is None:
                continue
            new_count = self.count_new(replacement)
            if new_count < seg.counts[0]:
                self._replace(seg_index, 0, replacement, new_count, cleared=True)
                self.replies_cleared += 1
        if self.replies_cleared:
            logger.debug("cleared %d old assistant replies to pointers", self.replies_cleared)

    # (b, c) summarize and drop the oldest units -----------------------------------------------------------------

    def _pin_for(self, k: int) -> int | None:
        """The user unit kept when the first ``k`` units go and unit ``k`` does not start with a user message."""
        if k == 0 or self.segs[self.ns[k]].kind == "user":
            return None
        return self.user_before[k]

    def _choose(self, reserve: int) -> int:
        """The fewest dropped units that bring the view to the low watermark, with room for a summary.

        ``reserve`` is what a summary of the dropped units may add (never more than they cost). When no cut gets
        there, the one leaving the smallest view wins (ties: the one dropping least).
        """
        low = self.limits.low
        pin = self.pin
        first_user = self.first_user
        removed = 0
        dropped, total = self.dropped, self.total
        best_k, best_total = dropped, total
        # `_size` and `_pin_for` read inline: this loop runs over every unit that may go, at every compaction
        segs, ns, user_before = self.segs, self.ns, self.user_before
        for k in range(dropped, min(self.max_drop + 1, len(ns))):
            if k > dropped:
                removed += segs[ns[k - 1]].tokens
            if first_user is not None and 0 < k < first_user:
                continue  # input that starts without a user message: cut at a user message instead
            new_pin = None if k == 0 or segs[ns[k]].kind == "user" else user_before[k]
            candidate = total - removed
            if new_pin != pin:
                candidate -= segs[ns[pin]].tokens if pin is not None else 0
                candidate += segs[ns[new_pin]].tokens if new_pin is not None else 0
            if candidate + min(reserve, removed) <= low:
                return k
            if candidate < best_total:
                best_k, best_total = k, candidate
        return best_k

    def _apply_cut(self, k: int) -> list[Message]:
        """Drop units up to ``k`` (keeping the new pin); the messages that left the view, oldest first."""
        new_pin = self._pin_for(k)
        leaving = [j for j in range(self.dropped, k) if j != new_pin]
        if self.pin is not None and self.pin != new_pin:
            leaving.insert(0, self.pin)
        gone: list[Message] = []
        for j in leaving:
            self.total -= self._size(j)
            gone.extend(self.segs[self.ns[j]].messages)
        self.dropped = max(self.dropped, k)
        self.pin = new_pin
        return gone

    def drop_oldest(self) -> Generator[SummaryRequest, str | None, None]:
        lim = self.limits
        ask = summary_ask(lim)
        rounds = 0
        while self.total > lim.low and (self.dropped < min(self.max_drop, len(self.ns) - 1) or self.unsummarized):
            summarize = lim.summarize and not self.summarizer_failed and rounds < _MAX_SUMMARY_ROUNDS
            if not summarize:
                self.unsummarized = []
            k = self._choose(ask + _SUMMARY_SLACK if summarize else 0)
            if k == self.dropped and self._pin_for(k) == self.pin and not self.unsummarized:
                return
            cut = self._apply_cut(k)
            if not (summarize or self.summarizer_failed):
                # nothing reads what left (no summarizer, or its rounds are spent): a manager without one drops
                # units on every compaction, and sorting recall messages out of them was most of this loop
                self.unsummarized = []
                continue
            # recall messages repeat history that is indexed already: they age out unsummarized
            gone = [m for m in (*self.unsummarized, *cut) if not is_recall(m)]
            self.unsummarized = []
            if self.summarizer_failed and gone:
                self._mark_unsummarized(len(gone))
            if not (summarize and gone):
                continue
            rounds += 1
            update = lim.summary_mode == "update"
            text = yield SummaryRequest(
                messages=self._within_input_limit(gone, self.summary if update else None),
                previous=self.summary if update else None,
                max_tokens=ask,
                instructions=lim.summary_instructions,
            )
            if text is None:
                self.summarizer_failed = True
                self._mark_unsummarized(len(gone))
                continue
            self._set_summary(f"{self.summary}{SUMMARY_SEPARATOR}{text}" if self.summary and not update else text)
            self.summaries += 1
            yield from self.bound_summary()

    def _mark_unsummarized(self, count: int) -> None:
        """Say in the summary zone that ``count`` more messages left the view unsummarized (the summarizer failed).

        The budget is a hard limit, so the cut stands, but never silently: the model reads that earlier turns are
        missing instead of mistaking the rest for the whole conversation, and one marker, rewritten with the
        running count, stands for every cut of this call.
        """
        if self._summary_before_mark is None:
            self._summary_before_mark = self.summary or ""
        self.unsummarized_count += count
        marker = unsummarized_marker(self.unsummarized_count)
        base = self._summary_before_mark
        self._set_summary(f"{base}{SUMMARY_SEPARATOR}{marker}" if base else marker)

    def _within_input_limit(self, gone: list[Message], previous: str | None) -> list[Message]:
        """The originals of the newest ``gone`` messages that fit one summarizer request.

        A first call on a long history drops almost all of it at once; only the newest part that fits the
        summarizer's input limit is summarized (after the previous summary), and the rest stays in the store.
        Costs are counted from the newest end, so the work is bounded by the limit, not by what was dropped.
        """
        room = self.limits.summary_input_limit - _REQUEST_SLACK
        if previous:
            room -= self.counter.count_text(previous)
        restore = self.store.restore
        kept = newest_within(gone, room, lambda m: _token_bound(restore(m))) or gone[-1:]  # the summarizer cuts one
        if len(kept) < len(gone):
            logger.info(
                "summarizing the newest %d of %d dropped messages (summarizer input limit %d tokens); the older "
                "ones stay in the store",
                len(kept),
                len(gone),
                self.limits.summary_input_limit,
            )
        return [restore(m) for m in kept]

    def bound_summary(self) -> Generator[SummaryRequest, str | None, None]:
        """Keep the summary under ``summary_budget``: condense it with the summarizer, else cut its middle.

        Condensing is a re-summary with nothing new: the running summary goes in as ``previous_summary``, so a
        summarizer that ranks the lines of its earlier output (`ExtractiveSummarizer`) weighs every line on its
        own instead of treating the whole summary as one message.
        """
        budget = self.summary_budget
        if self.summary is None or self.summary_tokens <= budget:
            return
        if self.limits.summarize and not self.summarizer_failed:
            text = yield SummaryRequest(
                messages=[], previous=self.summary, max_tokens=self.condense_to, instructions=CONSOLIDATE_INSTRUCTIONS
            )
            if text is not None and self._summary_cost(text) < self.summary_tokens:
                self._set_summary(text)
                self.summaries += 1
        if self.summary_tokens > budget:
            logger.info(
                "summary of %d tokens exceeds summary_budget=%d; cut in the middle", self.summary_tokens, budget
            )
            self._set_summary(_cut_middle(self.summary, max(budget - _CUT_MARKER_TOKENS, 1), self.counter))

    # (d) cut what alone is too large ------------------------------------------------------------------------------

    def _kept(self) -> list[int]:
        kept = list(self.ns[self.dropped :])
        if self.pin is not None:
            kept.insert(0, self.ns[self.pin])
        return kept

    def truncate_oversized(self) -> None:
        """When dropping every droppable unit left the view over the budget, cut the largest kept bodies."""
        lim = self.limits
        if self.total <= lim.hard:
            return
        spots = [(i, p) for i in self._kept() for p in range(len(self.segs[i].messages))]
        spots.sort(key=lambda spot: self.segs[spot[0]].counts[spot[1]], reverse=True)
        for seg_index, position in spots:
            excess = self.total - lim.low
            if excess <= 0:
                return
            seg = self.segs[seg_index]
            msg, size = seg.messages[position], seg.counts[position]
            replacement = truncate_message(msg, max(size - excess, _MIN_TRUNCATED_TOKENS), self.counter)
            if replacement is None or replacement is msg:
                continue
            new_count = self.counter.count_message(replacement)
            if new_count >= size:
                continue
            self._replace(seg_index, position, replacement, new_count)
            logger.info("message %r alone exceeded the budget; cut from %d tokens with a marker", msg.message_id, size)

    def fit_summary(self) -> None:
        """Cut the summary's middle by what the view is still over the budget after every other step: the turn
        kept cannot shrink further, and a provider refuses a prompt over the window where a shorter summary only
        says less."""
        limit = self.limits.hard
        if self.summary is None or self.total <= limit:
            return
        target = self.summary_tokens - (self.total - limit)
        if target < _MIN_FITTED_SUMMARY:
            return  # what else is in view fills the budget: cutting the summary would not bring it under
        logger.info(
            "the view is %d tokens over the budget with a %d-token summary beside it; the summary is cut in the middle",
            self.total - limit,
            self.summary_tokens,
        )
        self._set_summary(_cut_middle(self.summary, target - _CUT_MARKER_TOKENS, self.counter))

    def outcome(self) -> Outcome:
        kept = set(self._kept())
        segs = [s for i, s in enumerate(self.segs) if s.kind == "system" or i in kept]
        messages = list(itertools.chain.from_iterable(map(_MESSAGES, segs)))
        return Outcome(segs, self.summary, self.cleared, self.summaries, messages)


def _token_bound(message: Message) -> int:
    """A cheap upper estimate of a message's tokens: a third of its UTF-8 bytes (English runs about 4 characters a
    token, CJK about one 3-byte character a token), plus framing. Dropped messages a cold plan never read are not
    counted exactly; the summarizer enforces its limit exactly on what it is given."""
    size = len(message.text().encode("utf-8", "surrogatepass")) + len(message.reasoning_text().encode("utf-8"))
    for call in message.tool_call_blocks():
        size += len(call.name) + len(json.dumps(call.args, ensure_ascii=False, default=str).encode("utf-8"))
    return size // 3 + 8


def without_old_recall(segs: list[Segment], limits: Limits, fixed: int) -> list[Segment]:
    """``segs`` without the recall messages of earlier turns that cost more than the turn they served, when the
    view (with ``fixed`` tokens beside its units) is over the low watermark.

    A recall message repeats history the index holds, for the turn it served. In a conversation of short turns
    (people chatting) each one is many times its turn, and the recall messages of the recent turns would fill most
    of what a cut keeps, pushing out the conversation itself; once such a turn is answered its recall message is
    the cheapest thing to give up (a later turn that refers back gets one of its own). A recall message smaller
    than its turn (an agent's turn of tool output) stays and ages out with it. The newest user message's recall
    message, and anything after it (the turn in progress), stay.
    """
    if fixed + sum(seg.tokens for seg in segs) <= limits.low:
        return segs
    recall_units = [i for i, seg in enumerate(segs) if seg.kind == "user" and all(map(is_recall, seg.messages))]
    if not recall_units:
        return segs
    users = [i for i, seg in enumerate(segs) if seg.kind == "user" and not any(map(is_recall, seg.messages))]
    newest = users[-1] if users else len(segs)
    dropped: set[int] = set()
    for i in recall_units:
        if i + 1 >= newest:
            break
        # the turn it served: that user message and what answered it, up to the next user unit (or recall)
        turn_end = next((k for k in range(i + 2, newest) if segs[k].kind == "user"), newest)
        turn = sum(segs[k].tokens for k in range(i + 1, turn_end) if segs[k].kind != "system")
        if segs[i].tokens > turn:
            dropped.add(i)
    return [seg for i, seg in enumerate(segs) if i not in dropped] if dropped else segs


def summary_ask(limits: Limits) -> int:
    """What each summary of dropped units is asked for: ``max_summary_tokens``, at most a quarter of the low mark."""
    return min(limits.max_summary_tokens, max(limits.low // 4, 32))


def compact(
    segs: list[Segment],
    summary: str | None,
    limits: Limits,
    counter: TokenCounter,
    store: OffloadStore,
    *,
    recall_in_view: bool = True,
) -> Generator[SummaryRequest, str | None, Outcome]:
    """Run every step in order; a generator so the caller decides how summaries are awaited.

    ``recall_in_view=False`` says the caller knows ``segs`` hold no recall message (with a nonzero count), so the
    search for old ones to give up first is skipped (it would find none to drop).
    """
    work = Compaction(segs, summary, limits, counter, store)
    if recall_in_view:
        kept = without_old_recall(segs, limits, work.total - sum(seg.tokens for seg in segs))
        if kept is not segs:
            work = Compaction(kept, summary, limits, counter, store)
    work.clear_tool_results()
    work.clear_replies()
    return (yield from finish(work))


def finish(work: Compaction) -> Generator[SummaryRequest, str | None, Outcome]:
    """The steps after clearing: summarize and drop the oldest units before the turn in progress; if the turn
    (with the summary) is still over the budget, clear its older results to pointers, then drop into it (its
    request stays pinned); last, cut what alone is too large."""
    yield from work.drop_oldest()
    limit = work.limits.hard
    if work.total > limit and work.in_progress:
        logger.info(
            "the turn in progress alone is over the budget (%d > %d tokens with the summary): its older tool "
            "results are cleared to restorable pointers",
            work.total,
            limit,
        )
        work.clear_tool_results(in_progress=True)
        work.max_drop = len(work.ns)
        if work.total > limit:
            yield from work.drop_oldest()
    work.truncate_oversized()
    work.fit_summary()
    return work.outcome()


@dataclass
class ColdPlan:
    """A compaction set up on the newest part of a cold history (tool results and replies already cleared)."""

    work: Compaction
    start: int
    """Index of the first message read; every earlier non-system message is dropped unread."""
    raw_tokens: int
    """Exact tokens of the messages read (from ``start``, plus earlier system messages) before clearing."""


def _has_tool_activity(messages: Sequence[Message]) -> bool:
    return any(m.role == "tool" or (m.role == "assistant" and m.tool_call_ids()) for m in messages)


def plan_cold(
    messages: Sequence[Message],
    summary: str | None,
    limits: Limits,
    counter: TokenCounter,
    store: OffloadStore,
) -> ColdPlan | None:
    """Set up the compaction of a long unseen history on its newest part only, or None when nothing is certain.

    The newest part starts at a user message that opens a turn (a unit boundary, so grouping it alone gives the
    same units; and not a line sent right after tool results, which belongs to the turn before it:
    `Compaction._turn_in_progress`) and is
    taken large enough that, with everything clearable in it cleared, the view is still over the low watermark
    by more than a summary could add, and its raw size reaches the high watermark. Then the full compaction
    would clear every clearable result in it too (the view never drops to the low mark while clearing), could
    cut nowhere before it, and would reach every later decision with the same numbers; so older messages are
    certainly dropped and need not be read. The guess of how far back to read is checked exactly, and doubled
    until it holds or the history's start is reached (None: the caller counts everything).
    """
    n = len(messages)
    if n < COLD_PLAN_MIN_MESSAGES:
        return None
    count = counter.count_message
    reserve = summary_ask(limits) + _SUMMARY_SLACK if limits.summarize else 0
    need = limits.low + reserve
    clear_from = {"tool": limits.clear_min_tokens, "assistant": limits.reply_min_tokens}
    estimate = 0
    target = need
    start = n
    while True:
        while start > 0 and (estimate < target or not opens_turn(messages, start)):
            start -= 1
            msg = messages[start]
            size = count(msg)
            threshold = clear_from.get(msg.role)
            estimate += min(size, _CLEARED_ESTIMATE) if threshold is not None and size >= threshold else size
        if start == 0:
            return None
        earlier = messages[:start]
        systems = [m for m in earlier if m.role == "system"]
        segs = segments([*systems, *messages[start:]], counter)
        dropped = [m for m in earlier if m.role != "system"]
        agentic = _has_tool_activity(dropped) or any(s.kind not in ("system", "user", "assistant") for s in segs)
        work = Compaction(segs, summary, limits, counter, store, agentic=agentic, dropped_unread=dropped)
        raw = sum(s.tokens for s in segs)
        work.clear_tool_results()
        work.clear_replies()
        if work.total > need and limits.other_tokens + work.summary_tokens + raw >= limits.high:
            return ColdPlan(work, start, raw)
        target = 2 * max(target, estimate)


def message_tokens(segs: Sequence[Segment]) -> int:
    return sum(s.tokens for s in segs)


__all__ = [
    "COLD_PLAN_MIN_MESSAGES",
    "ColdPlan",
    "Compaction",
    "Limits",
    "Outcome",
    "Segment",
    "SummaryRequest",
    "compact",
    "extend_segments",
    "finish",
    "plan_cold",
]
