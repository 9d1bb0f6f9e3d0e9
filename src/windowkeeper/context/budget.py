"""`TokenBudgetContextManager`: a token budget with high/low watermarks that keeps provider prompt caches hitting.

Trimming a little on every call (a sliding window) changes the start of the prompt every time, so a provider's
prompt cache never hits and every call pays full price for every token. This manager does nothing while the view
is below the high watermark: the view it returns is the previous view plus the new messages, byte for byte. Once
the view reaches the high watermark it frees a large chunk at once, down to the low watermark, and then leaves the
prefix alone again. Most calls therefore reuse the whole previous prompt from the cache.

A user message that refers back to what left the view (recall finds it a passage) while the room left cannot
hold its recall message makes the manager free the chunk at once, before the recall message is placed.

Freeing goes from the least to the most destructive step: old tool results become restorable pointers, then old long
assistant replies do (their first sentence, the heads of the items they listed and their size stay in view), then the
oldest units are summarized (when a summarizer is given, from their original text) and dropped. Cuts fall only between
units, a pending tool call is never touched, and when the oldest kept unit is not a user message the user message that
started it stays pinned, so the view remains valid for OpenAI and Anthropic without inventing a message. A unit that
alone exceeds the budget is cut in the middle with a visible marker instead of vanishing.

Work per call is proportional to what is new: each thread's previous view and its running token total are kept,
so a call that appends a few messages counts only those (the counter memoizes per message anyway).
"""

from __future__ import annotations

import logging
import operator
import time
from collections.abc import Callable, Generator, Hashable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from .._cache import LRUCache
from .._validate import check_int, check_timeout
from ..errors import ConfigurationError
from ..messages import Message, edit_epoch, edited_since, same_message
from ..prompt import SystemCost, summary_tokens, system_costs, system_message_text, tool_schema_tokens
from ..prompt.recall import is_recall, recall_flags
from ..state import AgentState
from ..summarize.limits import DEFAULT_INPUT_LIMIT, input_limit_of
from ..tokens import TokenCounter, counting_once, default_counter
from ._compaction import (
    ColdPlan,
    Limits,
    Segment,
    SummaryRequest,
    compact,
    extend_segments,
    finish,
    plan_cold,
)
from ._recall_step import RecallStep, make_recall
from ._view_values import ViewValues
from .base import BaseContextManager, S, ThreadSeed, adapt_summarizer
from .metrics import Measured, Numbers, thread_key
from .pointers import DEFAULT_OFFLOAD_CACHE_BYTES, OffloadStore, is_offloaded
from .recall import Recall, newest_user

logger = logging.getLogger(__name__)

_REQUEST_TOOL_TOKENS: ContextVar[int] = ContextVar("windowkeeper_request_tool_tokens", default=0)


@contextmanager
def request_tools(tokens: int) -> Iterator[None]:
    """Plan the trims inside this block for a request whose tool definitions cost ``tokens``: a caller that knows
    the request (`Window`: its ``tools=`` of this call) says so, because a manager's own ``tools`` are fixed when it
    is made, and a request may carry more (a recall tool a host adapter adds, a handoff, a middleware's tools).
    The larger of the two is counted. Per task (a context variable), so concurrent calls do not mix."""
    token = _REQUEST_TOOL_TOKENS.set(tokens)
    try:
        yield
    finally:
        _REQUEST_TOOL_TOKENS.reset(token)


SUMMARY_FAILURE_LOG = "summarizer failed; cutting the oldest units with a marker in the summary instead"
_MAX_TRACKED_THREADS = 1024
RECALL_ROOM = 0.1
"""Share of the budget under which the room left is checked against what a user message that refers back needs
(`TokenBudgetContextManager._wants_recall_room`); with more room left the index is not asked."""


@dataclass(slots=True)
class _Track:
    """What a thread's previous call produced, so the next call only has to look at what was appended."""

    view: tuple[Message, ...]
    source: tuple[Message, ...]
    message_tokens: int
    segments: list[Segment]
    covered: int
    summary: str | None
    scratchpad: str | None
    scan: _Scan
    cost: SystemCost
    epoch: int = 0
    """`edit_epoch` when this call began: while it is unchanged no message was edited in place since."""
    keys: _Keys = field(default_factory=lambda: _Keys())
    """Ids, fingerprints and laid-out values of ``view``'s first messages, taken when a reloaded copy was first
    compared with it and kept while later views start with the same (or equal) messages."""
    arrived: dict[Hashable, tuple[Message, int]] = field(default_factory=dict)
    """Counts of the messages after ``covered`` by message id, taken once when they arrived.

    A compaction groups those messages into segments; reading their counts here spares the counter's memo,
    whose key would need each message's fingerprint. The message is kept with its count and a lookup must find
    the same object (or, after a checkpointer reload, an equal one). Shared by successive tracks of a thread
    while no compaction happens.
    """


_Begun = tuple[float, str, int, _Track | None, int | None]
"""What `TokenBudgetContextManager._quick` hands the rest of a plan: the clock at the start, the thread, the edit
epoch, the thread's track (None: none, or a remembered message was edited in place) and the appended messages'
tokens when it counted them."""


@dataclass(frozen=True)
class _Scan:
    """What the prompt assembly treats apart in a view: system messages (sent in the system text) and recall."""

    system_texts: tuple[str, ...] = ()
    system_tokens: int = 0
    """Their tokens as separate messages, the way the segments count them; the system text replaces them."""
    recall_tokens: int = 0


_ROLE = operator.attrgetter("role")


def _scan(messages: Sequence[Message], counter: TokenCounter, base: _Scan | None = None) -> _Scan:
    """``base`` extended by ``messages``: the texts and tokens of their system messages, the tokens of recall.

    ``base`` itself when ``messages`` hold neither (the common case of a call that appended a turn).
    """
    if base is not None and "system" not in map(_ROLE, messages) and not any(recall_flags(messages)):
        return base  # two C passes: this runs on every call, over what it appended
    found = [m for m in messages if m.role == "system" or is_recall(m)]
    texts = list(base.system_texts) if base is not None else []
    system_tokens = base.system_tokens if base is not None else 0
    recall_tokens = base.recall_tokens if base is not None else 0
    for message in found:
        if message.role == "system":
            text = system_message_text(message)
            if text:
                texts.append(text)
            system_tokens += counter.count_message(message)
        else:
            recall_tokens += counter.count_message(message)
    return _Scan(tuple(texts), system_tokens, recall_tokens)


def _edited(track: _Track) -> bool:
    """Whether a message this track remembers by identity was edited in place after the track was made.

    Costs nothing unless some message in the process was edited; then one lookup per remembered message.
    """
    if track.epoch == edit_epoch():
        return False
    epoch = track.epoch
    return any(edited_since(m, epoch) for m in track.view) or (
        track.source is not track.view and any(edited_since(m, epoch) for m in track.source)
    )


_ID = operator.attrgetter("message_id")
_PRIVATE = operator.attrgetter("__pydantic_private__")
_MEMO = operator.methodcaller("get", "_fingerprint")


class _Keys:
    """Ids, fingerprints and laid-out values of the first messages of a remembered view, kept while later views
    extend it.

    A view read back by a new checkpointer every call, or from the caller's own JSON, is compared with the
    remembered one by value; the remembered side's keys are taken once (its own messages, so hashing one it never
    hashed happens once) and only those of what the view appended are added on later calls.
    """

    __slots__ = ("fingerprints", "ids", "laid_out", "values")

    def __init__(self) -> None:
        self.ids: list[Hashable] = []
        self.fingerprints: list[str] = []
        self.values = ViewValues()
        self.laid_out = 0
        """How many of the view's first messages ``values`` holds."""

    @classmethod
    def after(
        cls, keys: _Keys, before: tuple[Message, ...], view: tuple[Message, ...], copies: Sequence[Message]
    ) -> _Keys:
        """Keys for ``view``, a view that no longer starts with ``before`` (a compaction changed its head), given
        ``keys``, ``before``'s. ``copies`` are the caller's messages this call found equal to ``before``'s first
        ones, place for place, after a reload (a compacted view keeps the caller's objects).

        When ``before`` was laid out (its thread's views arrive as copies, so the next one will be compared with
        ``view``), ``view`` is laid out now, each run of messages ``before`` (or ``copies``) held in a row taken
        from its layout (`ViewValues.extend_from`): a compaction keeps most of the view, which was otherwise laid
        out again in full on the next call. Those are the same objects, or copies `same_message` as them, unedited
        since: ``before`` passed the in-place edit check at the start of this call, and the copies were compared
        in it. A live thread has nothing laid out and pays nothing.
        """
        made = cls()
        old = keys.values
        if not keys.laid_out or not old.laid_out:
            return made
        where: dict[int, int] = {}
        for held in (before[: keys.laid_out], copies[: keys.laid_out]):
            where.update(zip(map(id, held), range(len(held)), strict=True))
        values = made.values
        n = len(view)
        done = j = 0
        while j < n:
            i = where.get(id(view[j]))
            if i is None:
                j += 1
                continue
            run = 1
            while j + run < n and where.get(id(view[j + run])) == i + run:
                run += 1
            values.extend(view[done:j])
            values.extend_from(old, i, i + run)
            j += run
            done = j
        values.extend(view[done:])
        made.laid_out = n
        return made

    def ids_of(self, view: tuple[Message, ...]) -> list[Hashable]:
        known = len(self.ids)
        if known < len(view):
            self.ids.extend(map(_ID, view[known:]))
        return self.ids

    def fingerprints_of(self, view: tuple[Message, ...]) -> list[str]:
        """Taken only when the view read back brought fingerprints to compare with: a view from the caller's own
        JSON brings none, and hashing the remembered side would then be work for nothing."""
        known = len(self.fingerprints)
        if known < len(view):
            self.fingerprints.extend(map(Message.fingerprint, view[known:]))
        return self.fingerprints

    def values_of(self, view: tuple[Message, ...]) -> ViewValues:
        """Laid out only when a copy without fingerprints is compared (the caller's own JSON), then extended."""
        if self.laid_out < len(view):
            self.values.extend(view[self.laid_out :])
            self.laid_out = len(view)
        return self.values


def _extends(messages: Sequence[Message], prefix: tuple[Message, ...], keys: _Keys | None = None) -> bool:
    """Whether ``messages`` starts with exactly the message objects of ``prefix`` (or equal ones, after a reload).

    ``keys``, when given, are ``prefix``'s (see `_Keys`).
    """
    n = len(prefix)
    if len(messages) < n:
        return False
    if all(map(operator.is_, messages, prefix)):
        return True
    # after a reload: equal ids and fingerprints, compared list to list (the fingerprints came with the messages
    # from the store, so this is a few C-level passes, not a Python call per message)
    head = messages[:n]
    ids = keys.ids_of(prefix) if keys is not None else list(map(_ID, prefix))
    if list(map(_ID, head)) != ids:
        return False
    if keys is None:
        return all(map(same_message, prefix, head))
    # read back with fingerprints (a checkpointer stores them): compared list to list. A copy from the caller's own
    # JSON brings none, which its first message shows without reading every message's private storage
    first = head[0].__pydantic_private__ if n else None
    if first is not None and first.get("_fingerprint") is not None:
        try:
            mine = list(map(_MEMO, map(_PRIVATE, head)))
        except AttributeError:  # a message without pydantic private storage (built with model_construct)
            return all(map(same_message, prefix, head))
        if None not in mine and mine == keys.fingerprints_of(prefix):
            return True
    # equal messages without fingerprints: their values laid out flat and compared in C (`ViewValues`); what that
    # cannot show the same is compared message by message (`same_message`)
    return keys.values_of(prefix).matches(head) or all(map(same_message, prefix, head))


def _still_extends(view: tuple[Message, ...], track: _Track, incoming: Sequence[Message], reloaded: bool) -> bool:
    """`_extends` of the previous view by this call's ``view`` (a compaction or a recall message changed it).

    A reloaded ``incoming`` was already found equal to the previous view; when ``view`` still starts with those
    very objects the answer is known without comparing them by value a second time.
    """
    n = len(track.view)
    if reloaded and len(view) >= n and all(map(operator.is_, view, incoming[:n])):
        return True
    # a compaction changed the view: its remembered keys would be laid out only to differ (`_Keys.values_of`)
    return _extends(view, track.view)


def _count_arrived(
    messages: Sequence[Message], count_once: Callable[[Message], int], counted: dict[Hashable, tuple[Message, int]]
) -> int:
    """Tokens of messages new to this thread, each counted once and recorded in ``counted`` for a compaction."""
    total = 0
    for message in messages:
        n = count_once(message)
        counted[message.message_id] = (message, n)
        total += n
    return total


def _appended_tokens(track: _Track, state: AgentState, count_once: Callable[[Message], int]) -> int | None:
    """Tokens of the messages ``state.context`` appends to the very objects of ``track``'s view (each counted once
    and recorded in ``track.arrived``), or None, counting nothing, unless this call is that and only that: none of
    them a system or recall message, and the summary and scratchpad as ``track`` left them (the system text, and so
    its cost, is then unchanged). Called only while no message was edited since ``track`` was made."""
    incoming = state.context
    view = track.view
    n = len(view)
    if (
        len(incoming) < n
        or (state.context_summary or None) != track.summary
        or (state.scratchpad or None) != track.scratchpad
        or not all(map(operator.is_, incoming, view))
    ):
        return None
    arrived = incoming[n:]
    if "system" in map(_ROLE, arrived) or any(recall_flags(arrived)):
        return None
    return _count_arrived(arrived, count_once, track.arrived)


def _unread_tokens(messages: Sequence[Message], plan: ColdPlan) -> int:
    """Tokens of the messages a cold plan dropped unread, estimated from their characters.

    Reading them exactly is the cost the plan avoids. The rate of tokens per character is the one of the part it
    did count, so for a history of one kind of content the estimate of ``tokens_before`` stays close.
    """
    unread = 0
    read = 0
    for msg in messages[: plan.start]:
        if msg.role == "system":
            read += len(msg.text())
        else:
            unread += len(msg.text())
    read += sum(len(m.text()) for m in messages[plan.start :])
    return round(unread * plan.raw_tokens / read) if read else 0


def _check_fraction(name: str, value: object) -> float:
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise ConfigurationError(f"{name} must be a number between 0 and 1, got {value!r}")
    return float(value)


class TokenBudgetContextManager(BaseContextManager[S]):
    """Keep the view under ``max_tokens - reserve_tokens`` with watermark hysteresis (see the module docstring).

    ``max_tokens`` is the model's context window and ``reserve_tokens`` the room left for the reply. The view counted
    against the budget is everything sent: ``system_prompt`` and ``tools`` schemas (when the agent adds them at call
    time), system messages, the summary, the scratchpad and the messages. ``keep_tool_results`` newest tool turns keep
    their outputs; older outputs of at least ``clear_min_tokens`` tokens are cleared to pointers first. Next, assistant
    replies without a tool call of at least ``clear_reply_min_tokens`` tokens, except the newest ``keep_replies``,
    become pointers holding their first sentence and the heads of the items they listed (None turns this off): in a chat
    the long replies would otherwise push the user's own statements out of view. Both kinds of pointer are restorable
    byte for byte (`restore`, `restore_context`). Each summarizer call is asked for at most ``max_summary_tokens``.

    ``summary_mode="append"`` (default) summarizes only the units leaving the view and appends the result to
    ``state.context_summary`` after a blank line, so earlier summaries are never rewritten; once the running summary
    exceeds ``summary_budget`` tokens it is condensed by the summarizer (or, failing that, cut in the middle with a
    marker). By default ``summary_budget`` is a third of the low watermark (at most ``4 * max_summary_tokens``)
    while the view holds tool calls, and half the low watermark in a plain chat, where the summary is the only
    record of everything the user said before the kept turns. ``"update"`` hands the summarizer the previous
    summary and replaces it with the result, for summarizers that fold earlier summaries in themselves
    (`LLMSummarizer`, `ExtractiveSummarizer`).
    """

    _log: ClassVar[logging.Logger] = logger

    def __init__(
        self,
        max_tokens: int,
        reserve_tokens: int = 2000,
        high_watermark: float = 1.0,
        low_watermark: float = 0.65,
        counter: TokenCounter | None = None,
        summarizer: Any = None,
        *,
        system_prompt: str | None = None,
        tools: Sequence[dict[str, Any]] | None = None,
        keep_tool_results: int = 3,
        clear_min_tokens: int = 100,
        keep_replies: int = 3,
        clear_reply_min_tokens: int | None = 100,
        max_summary_tokens: int = 600,
        summary_budget: int | None = None,
        summary_instructions: str | None = None,
        summary_timeout: float = 120.0,
        summary_mode: Literal["append", "update"] = "append",
        offload_cache_bytes: int = DEFAULT_OFFLOAD_CACHE_BYTES,
        recall: bool | Recall = True,
    ) -> None:
        self.max_tokens = check_int("max_tokens", max_tokens, minimum=1)
        self.reserve_tokens = check_int("reserve_tokens", reserve_tokens, minimum=0)
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
        self.keep_tool_results = check_int("keep_tool_results", keep_tool_results, minimum=0)
        self.clear_min_tokens = check_int("clear_min_tokens", clear_min_tokens, minimum=0)
        self.keep_replies = check_int("keep_replies", keep_replies, minimum=0)
        self.clear_reply_min_tokens = (
            None
            if clear_reply_min_tokens is None
            else check_int("clear_reply_min_tokens", clear_reply_min_tokens, minimum=0)
        )
        self.max_summary_tokens = check_int("max_summary_tokens", max_summary_tokens, minimum=1)
        self.summary_timeout = check_timeout("summary_timeout", summary_timeout)
        self.summary_instructions = summary_instructions
        if summary_mode not in ("append", "update"):
            raise ConfigurationError(f"summary_mode must be 'append' or 'update', got {summary_mode!r}")
        self.summary_mode = summary_mode
        if counter is not None and not all(
            callable(getattr(counter, name, None)) for name in ("count_text", "count_message", "count_messages")
        ):
            raise ConfigurationError(
                f"counter must be a TokenCounter (count_text, count_message, count_messages), got {counter!r}",
            )
        self.counter: TokenCounter = counter if counter is not None else default_counter()
        self._count_once = counting_once(self.counter)
        self.summarizer = adapt_summarizer(summarizer) if summarizer is not None else None
        self.summary_input_limit = input_limit_of(summarizer) or DEFAULT_INPUT_LIMIT

        self.budget = max_tokens - reserve_tokens
        self.high_limit = int(self.budget * high)
        self.low_limit = int(self.budget * low)
        self.recall_room = int(self.budget * RECALL_ROOM)
        if summary_budget is None:
            self.summary_budget = max(min(4 * max_summary_tokens, self.low_limit // 3), 1)
            self.chat_summary_budget = max(self.low_limit // 2, 1)
        else:
            self.summary_budget = check_int("summary_budget", summary_budget, minimum=1)
            self.chat_summary_budget = self.summary_budget

        self.system_prompt = system_prompt
        self.tools = [dict(t) for t in tools] if tools else []
        # the request is counted as `windowkeeper.prompt.assemble` builds it: tools and reply priming are fixed,
        # the system text (prompt, system messages, summary, scratchpad) is priced per call by `system_costs`
        self._prompt_parts: tuple[str, ...] = (system_prompt,) if system_prompt else ()
        self._tool_tokens = tool_schema_tokens(self.tools, self.counter)
        self._priming_tokens = self.counter.count_messages([])
        prompt_tokens = system_costs(self._prompt_parts, None, None, self.counter).system
        self._fixed_tokens = self._tool_tokens + prompt_tokens + self._priming_tokens
        if self._fixed_tokens >= self.low_limit:
            raise ConfigurationError(
                f"system_prompt and tools alone cost {self._fixed_tokens} tokens, which leaves no room under the "
                f"low watermark ({self.low_limit} tokens of a {self.budget}-token budget); raise max_tokens",
            )
        self._tracks: LRUCache[str, _Track] = LRUCache(_MAX_TRACKED_THREADS)
        self._offloaded = OffloadStore(check_int("offload_cache_bytes", offload_cache_bytes, minimum=0))
        self.recall: Recall | None = make_recall(recall, self.counter)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(max_tokens={self.max_tokens}, reserve_tokens={self.reserve_tokens}, "
            f"high_watermark={self.high_watermark}, low_watermark={self.low_watermark})"
        )

    # -- restoring --------------------------------------------------------------------------------------------

    @property
    def offloaded(self) -> OffloadStore:
        """The cache (bounded by ``offload_cache_bytes``) of the originals this manager cleared or truncated."""
        return self._offloaded

    def restore(self, message: Message, log: Sequence[Message] | None = None) -> Message:
        """The original of a cleared or truncated message, else ``message``.

        Recent originals come from the in-process cache; older ones, or any after a restart, from ``log``: the
        thread's message log (``checkpointer.get_messages(thread_id)``), which holds every original once.
        """
        return self._offloaded.restore_all([message], log)[0]

    def restore_context(self, state: AgentState, log: Sequence[Message] | None = None) -> list[Message]:
        """``state.context`` with every pointer and truncated body put back; ``state`` itself is not changed.

        Pass the thread's message log as ``log`` to restore originals this process no longer caches (evicted,
        or cleared by another process before a restart); a pointer whose original is found nowhere stays as is.
        """
        return self._offloaded.restore_all(state.context, log)

    async def arestore_context(self, state: AgentState, checkpointer: Any) -> list[Message]:
        """`restore_context` with the log read from ``checkpointer`` (any object with ``aget_messages``)."""
        restored = self._offloaded.restore_all(state.context)
        if not any(map(is_offloaded, restored)):
            return restored
        log = await checkpointer.aget_messages(thread_key(state))
        return self._offloaded.restore_all(restored, log)

    # -- the callers' contract (`BaseContextManager`) ---------------------------------------------------------------

    def counted_request(self) -> tuple[str | None, list[dict[str, Any]]] | None:
        return self.system_prompt or None, list(self.tools)

    # -- handing a thread over (the `BaseContextManager` contract) ------------------------------------------------

    def import_thread(self, thread_id: str, seed: ThreadSeed) -> None:
        """The originals of the view's pointers go to the offload cache (so `restore` works); recall, when on, is
        seeded by the base (`BaseContextManager.import_thread`: the history in order, everything that left the
        view, the turn it had served)."""
        for pointer, original in seed.originals:
            self._offloaded.keep(original, pointer)
        super().import_thread(thread_id, seed)

    # -- the public API -----------------------------------------------------------------------------------------

    def forget(self, thread_id: str | None = None) -> None:
        """Drop what is remembered about a thread (all threads this manager tracks when None); its next call starts
        from scratch. With recall on, the thread's recall state and indexed passages go too (a deleted thread must
        not stay searchable, nor keep its index in memory)."""
        threads = list(self._tracks) if thread_id is None else [thread_id]
        if thread_id is None:
            self._tracks.drop()
        else:
            self._tracks.pop(thread_id)
        self._offloaded.forget(thread_id)
        self.forget_recall(threads)

    # -- summaries (`BaseContextManager.asummarize` makes them) --------------------------------------------------

    async def asummarize(self, request: SummaryRequest) -> str | None:
        """The fail-safe summary; a failure is logged here too, and the core falls back to a marked cut."""
        text = await super().asummarize(request)
        if text is None and self.summarizer is not None:
            logger.error(SUMMARY_FAILURE_LOG)
        return text

    # -- the core (shared by sync and async) --------------------------------------------------------------------

    def _system_cost(
        self, track: _Track | None, scan: _Scan, summary: str | None, scratchpad: str | None
    ) -> SystemCost:
        """The marginal tokens of the system text's parts; reused while its texts are unchanged."""
        if (
            track is not None
            and track.summary == summary
            and track.scratchpad == scratchpad
            and track.scan.system_texts == scan.system_texts
        ):
            return track.cost
        return system_costs((*self._prompt_parts, *scan.system_texts), summary, scratchpad, self.counter)

    def _total(self, cost: SystemCost, scan: _Scan, message_tokens: int) -> int:
        """The count of the request `assemble` makes of this view (system messages move into the system text)."""
        return self._tools_now() + self._priming_tokens + cost.total + message_tokens - scan.system_tokens

    def _tools_now(self) -> int:
        """Tokens of the tool definitions of the request being planned (see `request_tools`)."""
        return max(self._tool_tokens, _REQUEST_TOOL_TOKENS.get())

    def _begin(self, state: S) -> Generator[SummaryRequest, str | None, S] | None:
        # the common call (`_quick`) is finished without making the planning core, a generator
        if type(self).plan is not TokenBudgetContextManager.plan:
            return self.plan(state)  # a subclass planning its own way
        begun = self._quick(state)
        return None if begun is None else self._plan(state, begun)

    def plan(self, state: S) -> Generator[SummaryRequest, str | None, S]:
        begun = self._quick(state)
        if begun is None:
            return state
        return (yield from self._plan(state, begun))

    def _quick(self, state: S) -> _Begun | None:
        """Finish the common call here and return None: messages appended to the very objects of the previous
        view, with no system message among them and the summary and scratchpad unchanged, leaving the total under
        the high watermark (`_appended`); everything else about the view carries over from the previous call.
        Otherwise what the rest of the plan starts from (`_Begun`): the clock, the thread, the edit epoch, the
        thread's track (None when a remembered message was edited in place) and the appended messages' tokens
        when they were counted here."""
        started = time.perf_counter()
        key = thread_key(state)
        epoch = edit_epoch()
        track = self._tracks.peek(key)
        if track is None:
            return (started, key, epoch, None, None)
        if track.epoch != epoch and _edited(track):
            # an edited message's count and segments are stale: plan this call from scratch
            logger.debug("thread %s: a message of the previous view was edited in place; recounting", key)
            return (started, key, epoch, None, None)
        if self.recall is not None:
            return (started, key, epoch, track, None)
        appended = _appended_tokens(track, state, self._count_once)
        if appended is not None:
            tools = max(self._tool_tokens, _REQUEST_TOOL_TOKENS.get())  # `_tools_now`, inline
            message_tokens = track.message_tokens + appended
            total = tools + self._priming_tokens + track.cost.total + message_tokens - track.scan.system_tokens
            if total < self.high_limit:
                self._appended(key, track, state.context, message_tokens, total, tools, epoch, started)
                return None
        return (started, key, epoch, track, appended)

    def _plan(self, state: S, begun: _Begun) -> Generator[SummaryRequest, str | None, S]:
        started, key, epoch, track, appended = begun
        incoming = state.context
        count = self.counter.count_message
        count_once = self._count_once
        summary = state.context_summary or None
        scratchpad = state.scratchpad or None

        working: list[Message]
        known: list[Segment] = []
        covered = 0
        plan = None
        arrived: Sequence[Message] = incoming
        counted: dict[Hashable, tuple[Message, int]] = {}
        reloaded = False
        extended_view = False  # incoming starts with the remembered view (or equal copies of it)
        compacted = False
        if track is not None and _extends(incoming, track.view, track.keys):
            extended_view = True
            working = incoming
            arrived = incoming[len(track.view) :]
            reloaded = bool(track.view) and incoming[len(track.view) - 1] is not track.view[-1]
            counted = track.arrived
            # counted already when the common call above found itself over the high watermark
            new_tokens = _count_arrived(arrived, count_once, counted) if appended is None else appended
            message_tokens = track.message_tokens + new_tokens
            known, covered = track.segments, track.covered
            scan = _scan(arrived, self.counter, track.scan)
            cost = self._system_cost(track, scan, summary, scratchpad)
        elif track is not None and track.source is not track.view and _extends(incoming, track.source):
            new = arrived = incoming[len(track.source) :]
            working = [*track.view, *new]
            counted = track.arrived
            message_tokens = track.message_tokens + _count_arrived(new, count_once, counted)
            known, covered = track.segments, track.covered
            scan = _scan(new, self.counter, track.scan)
            cost = self._system_cost(track, scan, summary, scratchpad)
        else:
            working = incoming
            scan = _scan(incoming, self.counter)
            cost = self._system_cost(track, scan, summary, scratchpad)
            plan = plan_cold(incoming, summary, self._limits(cost, scan), self.counter, self._offloaded.for_thread(key))
            if plan is None:
                message_tokens = _count_arrived(incoming, count_once, counted)
            else:
                message_tokens = plan.raw_tokens + _unread_tokens(incoming, plan)
        previous_summary = track.summary if track is not None else None
        # recall counts in this manager's budget: the core calls the step's parts where its running totals say
        step = RecallStep(self.recall, key) if self.recall is not None else None

        total = self._total(cost, scan, message_tokens)
        tokens_before = total
        cleared = 0
        summaries = 0
        if plan is not None or total >= self.high_limit or self._wants_recall_room(step, working, arrived, total):
            if plan is not None:
                outcome = yield from finish(plan.work)
            else:
                # the caller's copies of remembered messages (after a reload) were found equal to them above
                copies: dict[int, Message] = {}
                if reloaded and track is not None and covered < len(track.view):
                    copies = dict(zip(map(id, incoming[covered : len(track.view)]), track.view[covered:], strict=True))

                def recorded(message: Message) -> int:
                    hit = counted.get(message.message_id)
                    if hit is not None and (
                        hit[0] is message or copies.get(id(message)) is hit[0] or same_message(hit[0], message)
                    ):
                        return hit[1]
                    return count(message)

                segs = extend_segments(known, covered, working, self.counter, recorded)
                limits = self._limits(cost, scan)
                offloads = self._offloaded.for_thread(key)
                outcome = yield from compact(
                    segs, summary, limits, self.counter, offloads, recall_in_view=scan.recall_tokens > 0
                )
            if step is not None:
                # the originals of what the compaction took out (dropped messages, cleared bodies) are indexed
                unread = plan.start if plan is not None else 0
                step.hand_over(working, outcome.messages, restore=self._offloaded.restore, unread=unread)
            working, summary = outcome.messages, outcome.summary
            compacted = True
            cleared, summaries = outcome.cleared, outcome.summaries
            known, covered = outcome.segments, len(working)
            counted = {}
            message_tokens = sum(s.tokens for s in known)
            if scan.recall_tokens:
                scan = _scan(working, self.counter)
            # else: a compaction never drops, clears or cuts a system message, so without recall the scan holds
            cost = self._system_cost(track, scan, summary, scratchpad)
            total = self._total(cost, scan, message_tokens)
            if total > self.budget:
                logger.warning(
                    "view still costs %d tokens after compaction, over the %d-token budget: system messages, the "
                    "summary, the scratchpad or content that cannot be cut (media, tool-call arguments, items no "
                    "format models) fill it",
                    total,
                    self.budget,
                )

        if step is not None:
            step.observe(arrived)
            # after a reload the view starts with equal copies of the remembered messages: recall is shown this
            # manager's own objects for them, as it was on the previous call
            own = track.view if reloaded and not compacted and track is not None else None
            placed = self._place_recall(step, working, arrived, total, known, covered, own)
            if placed is not None:
                working, tokens, known, covered = placed
                total += tokens
                message_tokens += tokens
                scan = _Scan(scan.system_texts, scan.system_tokens, scan.recall_tokens + tokens)

        if working is not incoming:
            state.context = working
        if summary != (state.context_summary or None):
            state.context_summary = summary
        # the view still starts with the remembered one (or its equal copies) unless it was compacted; a recall
        # message goes after it, before the user message that just arrived
        n = len(track.view) if track is not None else 0
        same_head = (
            extended_view and not compacted and (working is incoming or all(map(operator.is_, working[:n], incoming)))
        )
        # when the caller's view is an equal copy of the one remembered (read back by a new checkpointer, or from
        # the caller's own JSON), keep remembering this manager's own objects: the copies are then freed with the
        # caller's state, not here, and the keys taken of the remembered view stay valid
        keep_own = same_head and reloaded and track is not None
        view = (*track.view, *working[n:]) if track is not None and keep_own else tuple(working)
        if working is incoming:
            source = view
        elif track is not None and keep_own:
            # likewise for the list as the caller gave it (a recall message was placed in the view): holding the
            # copies until the next call freed them inside it, ~0.05 ms a call at a 32k budget
            source = (*track.view, *incoming[n:])
        else:
            source = tuple(incoming)
        # the keys of the remembered view stay valid while the new view starts with the same (or equal) messages
        if track is not None and same_head:
            keys = track.keys
            if reloaded and keys.laid_out:
                # this call's view came as a copy, so the next one likely will: what arrived is laid out now, while
                # it is in the cache from being counted, not at the start of the next call (~0.04 ms a call at a
                # 32k budget)
                keys.values_of(view)
        elif track is not None and extended_view and reloaded:
            keys = _Keys.after(track.keys, track.view, view, incoming[:n])
        else:
            keys = _Keys()
        remembered = _Track(
            view=view,
            source=source,
            message_tokens=message_tokens,
            segments=known,
            covered=covered,
            summary=summary,
            scratchpad=scratchpad,
            scan=scan,
            cost=cost,
            epoch=epoch,
            arrived=counted,
            keys=keys,
        )
        self._tracks.put(key, remembered)

        stable: bool | None = None
        if track is not None:
            # an extended view that was not compacted is the previous view plus new messages by construction
            extended = known is track.segments and tokens_before == total and summary == previous_summary
            stable = extended or (summary == previous_summary and _still_extends(view, track, incoming, reloaded))
        zones = self._zones(cost, self._tools_now(), scan, message_tokens)
        self._record(
            (
                tokens_before,
                total,
                len(incoming),
                len(working),
                cleared,
                summaries,
                stable,
                time.perf_counter() - started,
                zones,
            ),
            key,
        )
        return state

    def _appended(
        self,
        key: str,
        track: _Track,
        incoming: list[Message],
        message_tokens: int,
        total: int,
        tools: int,
        epoch: int,
        started: float,
    ) -> None:
        """Finish a call that only appended messages to ``track``'s view and stays under the high watermark: the
        view is the caller's list as it is, every other part of the track carries over, and the prefix is stable.

        What `plan`'s general tail would work out for this case, written out (~4 us a call less on the 3,000-turn
        tau session; most calls are this one).
        """
        view = tuple(incoming)
        self._tracks.put(
            key,
            _Track(
                view,
                view,
                message_tokens,
                track.segments,
                track.covered,
                track.summary,
                track.scratchpad,
                track.scan,
                track.cost,
                epoch,
                track.keys,
                track.arrived,
            ),
        )
        n = len(view)
        cost, scan = track.cost, track.scan
        zones = self._zones(cost, tools, scan, message_tokens)  # and `_record`, inline
        numbers = (total, total, n, n, 0, 0, True, time.perf_counter() - started, zones)
        self._metrics.publish_measured(key, Measured(numbers))

    def _zones(self, cost: SystemCost, tools: int, scan: _Scan, message_tokens: int) -> tuple[int, ...]:
        """A call's tokens per zone, in `windowkeeper.prompt.ZONES` order: system, tools, summary, scratchpad,
        recall, recent (the view's other messages, with the format's priming), reserve."""
        return (
            cost.system,
            tools,
            cost.summary,
            cost.scratchpad,
            scan.recall_tokens,
            message_tokens - scan.system_tokens - scan.recall_tokens + self._priming_tokens,
            self.reserve_tokens,
        )

    # -- recall ---------------------------------------------------------------------------------------------------

    def _wants_recall_room(
        self, step: RecallStep | None, working: Sequence[Message], arrived: Sequence[Message], total: int
    ) -> bool:
        """Whether a user message that just arrived refers back while the room left cannot hold even its smallest
        recall message: the view is then compacted now, before the recall message is placed, instead of at a later
        call (it is near the top of the budget anyway), so the turn that asks is never answered without it. Asks
        the index only when less than `RECALL_ROOM` of the budget is left."""
        if step is None or self.budget - total >= self.recall_room:
            return False
        i = newest_user(arrived)
        if i is None or step.served() == str(arrived[i].message_id):
            return False
        return step.recall.least_room(step.key, arrived[i], working) > self.budget - total

    def _place_recall(
        self,
        step: RecallStep,
        working: list[Message],
        arrived: Sequence[Message],
        total: int,
        known: list[Segment],
        covered: int,
        own: tuple[Message, ...] | None = None,
    ) -> tuple[list[Message], int, list[Segment], int] | None:
        """Insert the recall message for a user message that just arrived, sized to the room left in the budget.
        ``own``, after a reload, is this manager's view that ``working`` starts with equal copies of (recall is
        shown those objects, see `place_recall`'s ``seen``).

        Only a user message among ``arrived`` starts a turn, so a tool step costs a scan of what it appended. The
        recall is decided once per user message; once placed it is part of the view like any message.
        """
        if not any(m.role == "user" and not is_recall(m) for m in arrived):
            return None
        seen = (*own, *working[len(own) :]) if own is not None else None
        found = step.place(working, self.budget - total, seen=seen)
        if found is None:
            return None
        placed, i, tokens = found
        if i < covered:
            # segments before the recall still describe the view; the rest is regrouped on the next call
            n = 0
            keep: list[Segment] = []
            for seg in known:
                if n + len(seg.messages) > i:
                    break
                keep.append(seg)
                n += len(seg.messages)
            known, covered = keep, n
        return placed, tokens, known, covered

    def _record(self, numbers: Numbers, thread_id: str) -> None:
        """Publish one call's metrics through the base class's recorder.

        The recorder's own ``record`` recounts both whole views; this manager already knows every number from its
        running totals, so it hands them over (the model is built when read, `Measured`) and keeps the per-call
        cost independent of the history's length.
        """
        self._metrics.publish_measured(thread_id, Measured(numbers))

    def _limits(self, cost: SystemCost, scan: _Scan) -> Limits:
        """Settings for a compaction; its total is the request's count (system messages priced in the system text)."""
        parts = (*self._prompt_parts, *scan.system_texts)
        counter = self.counter
        return Limits(
            low=self.low_limit,
            high=self.high_limit,
            other_tokens=self._tools_now() + self._priming_tokens + cost.system + cost.scratchpad - scan.system_tokens,
            summary_cost=lambda text: summary_tokens(text, counter, parts),
            keep_tool_results=self.keep_tool_results,
            clear_min_tokens=self.clear_min_tokens,
            keep_replies=self.keep_replies,
            reply_min_tokens=self.clear_reply_min_tokens,
            max_summary_tokens=self.max_summary_tokens,
            summary_budget=self.summary_budget,
            chat_summary_budget=self.chat_summary_budget,
            summary_mode=self.summary_mode,
            summary_instructions=self.summary_instructions,
            summarize=self.summarizer is not None,
            summary_input_limit=self.summary_input_limit,
            budget=self.budget,
        )
