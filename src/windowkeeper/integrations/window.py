"""`Window`: the one-object way in for code that keeps its own provider-shaped message list.

Most agents hold their conversation as a list of provider dicts (or LangChain messages) and re-send all of it on
every call. `Window.fit` takes that whole list, in the provider's own shape, and returns what to send instead:
the managed view in the same shape, with the running summary in the provider's native place for system text
(a leading system message for Chat Completions and LangChain, ``instructions`` for Responses, ``system`` for
Anthropic, ``system_instruction`` for Gemini).

The caller never has to keep windowkeeper objects. Each call re-reads the list (the converters derive message ids
from content and position, so the same list gives the same ids), recognizes the part it already managed by a
digest, and hands the manager its previous view plus only the new messages: the prompt prefix stays byte-stable
exactly as if the caller had kept `Message` objects, the summary and the offloaded originals carry over, and with
``store=`` all of it survives a restart of the process.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import logging
import operator
import os
import random
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar, cast, overload

from .._bridge import run_sync_anywhere
from .._cache import LRUCache, shared_prefix
from .._validate import check_int
from ..blocks import TextBlock
from ..context import BaseContextManager, TokenBudgetContextManager, TrimMetrics
from ..context.base import ThreadSeed
from ..context.budget import request_tools
from ..context.pointers import approx_bytes, is_offloaded, offloaded
from ..errors import ConfigurationError
from ..llm.formats._source import recall_for_next
from ..llm.formats.anthropic import MAX_CACHE_BREAKPOINTS, CacheBreakpoint, tool_cache_marks
from ..messages import Message, fingerprints
from ..prompt import AssembledPrompt, assemble, tool_schema_tokens
from ..prompt.recall import recall_flags
from ..state import AgentState
from ..storage import ConflictError, SessionStore, open_store
from ..tokenizing.calibration import feed_calibration
from ..tokens import RunningCount, TokenCounter
from ..tools.recall import RecallTool
from ._formats import (
    WindowFormat,
    check_format,
    lead_anchors,
    read_messages,
    read_messages_cached,
    section_message,
    system_lead,
    system_text,
    write_messages,
    write_plain,
)
from ._formats import laid_out as lay_out
from ._recall import WindowRecallTool, original_text, restore_tool_declared, without_restore_tool
from ._threads import StaleHeadError, ThreadMemory, ThreadStore, chain_hasher, ref_keys, restore_keys

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage

    # type checkers only (PEP 696 defaults; Python 3.11's TypeVar has none): a bare ``Window``/``FitResult`` is
    # ``[Any, Any]``, while ``Window(budget=..., format="anthropic")`` is ``Window[AnthropicMessage, ...]``
    from typing_extensions import TypeVar as DefaultTypeVar

    from ..llm.formats.wire import (
        AnthropicMessage,
        AnthropicSystem,
        GeminiContent,
        GeminiSystemInstruction,
        OpenAIChatMessage,
        ResponsesItem,
    )

    M = DefaultTypeVar("M", default=Any)
    Sys = DefaultTypeVar("Sys", default=Any)
else:
    M = TypeVar("M")
    Sys = TypeVar("Sys")

logger = logging.getLogger(__name__)
_ID = operator.attrgetter("message_id")
_ROLE = operator.attrgetter("role")


DEFAULT_RESERVE_TOKENS = 2000
"""Room a `Window` built from ``budget=`` leaves for the reply (at most a fifth of the budget)."""
MAX_WINDOW_THREADS = 1024
"""Threads whose view a `Window` keeps in memory, least recently used out first. A server handles many threads and
each kept view costs about a budget's worth of messages; an evicted thread is read back from the store, or without
one is managed afresh from the caller's list on its next call (as the manager does with the threads it forgets)."""
SAVE_ATTEMPTS = 8
"""Times one call is redone on the thread as the store holds it when another window or process commits the thread
between this window's read and its save; past them the call raises `ConflictError` (the thread is too contended
to serve from several writers at once)."""


@dataclass(frozen=True, repr=False, eq=False)
class FitResult(Generic[M, Sys]):
    """What to send for one call, and what the manager did.

    ``messages`` is the managed conversation in the window's format, ready to pass to the SDK. ``system`` is the
    system text for formats that carry it outside the list (Anthropic ``system``, which is a list with a
    ``cache_control`` block when prompt caching is on; Responses ``instructions``; Gemini ``system_instruction``),
    with the summary merged in; None for Chat Completions and LangChain, whose list starts with it. Both are
    typed by the window's format (``M``, ``Sys``; see `Window` and ``windowkeeper.llm.formats.wire``).

    `Window.fit` writes both before returning. The LangChain middleware and hook hand their host the host's own
    objects (from ``prompt``), so their results are written only if ``messages`` is read; the write depends only
    on the call's prompt, so it gives the same items whenever it happens.
    """

    _write: Callable[[], tuple[list[M], Sys]]
    metrics: TrimMetrics | None
    summary: str | None
    prompt: AssembledPrompt
    thread_id: str
    _joined: int = 0
    """Tokens the format saves by writing recall notes into the user turns they serve (see `joined_recall`)."""
    _laid_out: Callable[[], list[Message] | None] | None = None
    """The messages ``messages`` is written from, in order, each written alone (see `_formats.laid_out`; None
    from it for a format that lays its list out otherwise): an adapter that hands the host its own objects for
    most of them writes only the rest, instead of the whole view on every call."""

    @functools.cached_property
    def _written(self) -> tuple[list[M], Sys]:
        return self._write()

    @property
    def messages(self) -> list[M]:
        return self._written[0]

    @property
    def system(self) -> Sys:
        return self._written[1]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FitResult):
            return NotImplemented
        return (self.messages, self.system, self.metrics, self.summary, self.prompt, self.thread_id) == (
            other.messages,
            other.system,
            other.metrics,
            other.summary,
            other.prompt,
            other.thread_id,
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        # short on purpose: asyncio formats a finished task's result, and a full view can be thousands of lines
        summary = "yes" if self.summary else "no"
        return (
            f"FitResult(thread_id={self.thread_id!r}, messages={len(self.prompt.messages)}, "
            f"input_tokens={self.input_tokens}, summary={summary})"
        )

    @property
    def view(self) -> list[Message]:
        """The managed conversation as windowkeeper messages (without the system text)."""
        return list(self.prompt.messages)

    @property
    def input_tokens(self) -> int:
        """The exact token count of what is sent (the manager's counter): the prompt's, less the message frame
        of each recall note the format writes into the user turn it serves (one message on the wire, not two)."""
        return self.prompt.input_tokens - self._joined


def _default_manager(budget: object, tools: Sequence[Any] | None) -> TokenBudgetContextManager[AgentState]:
    from ..summarize import ExtractiveSummarizer

    max_tokens = check_int("budget", budget, minimum=2)
    reserve = min(DEFAULT_RESERVE_TOKENS, max_tokens // 5)
    return TokenBudgetContextManager(
        max_tokens,
        reserve_tokens=reserve,
        summarizer=ExtractiveSummarizer(),
        tools=[dict(t) for t in tools] if tools else None,
    )


class Window(Generic[M, Sys]):
    """Keep a provider-shaped message list inside the context window (see the module docstring).

    ``manager`` is any context manager; without one, ``budget`` (the model's context window in tokens) builds a
    `TokenBudgetContextManager` with the offline extractive summarizer, reserving ``min(2000, budget // 5)`` tokens
    for the reply and counting the tool schemas of the first call. ``format`` is the shape of the lists passed to
    `fit`: ``openai_chat``, ``openai_responses``, ``anthropic``, ``gemini`` or ``langchain``. ``store`` (a SQLite
    path, ``sqlite:///``, ``postgresql://`` or ``redis://`` URL, or a `SessionStore`) keeps the full history, the
    view, the summary and the offloaded originals, so a new process continues the thread. ``thread_id`` names the
    conversation; every method also takes ``thread_id=`` to serve several conversations from one window.
    ``prompt_cache`` (Anthropic only) marks the stable prefix with ``cache_control`` breakpoints.

    Calls on one thread must not overlap within one window; different threads may run concurrently from async
    code. Several windows or processes may serve one thread through one store (two workers behind a load
    balancer): a window reads a thread once and commits each call's head with a compare-and-set against the
    version it read, so a call whose read went stale (another writer committed the thread meanwhile) writes no
    head; the window then re-reads the thread and redoes the call on it. Every call thus answers what one window
    serving all calls in the order they committed answers, and nothing of either writer is lost or doubled. A
    thread that another writer commits before each of `SAVE_ATTEMPTS` tries raises `ConflictError`. Each redo
    costs a reload, so route a thread's calls to one window where you can.

    For type checkers a literal ``format`` fixes the message type of `fit`'s result (``Window[M, Sys]``, with the
    types of ``windowkeeper.llm.formats.wire``), so ``fit(...).messages`` passes type-checked to the SDK call:
    ``openai_chat`` -> ``OpenAIChatMessage``, ``anthropic`` -> the SDK's ``MessageParam``, ``openai_responses`` ->
    ``ResponsesItem``, ``gemini`` -> ``GeminiContent`` (REST spelling), ``langchain`` -> ``BaseMessage``.
    """

    @overload
    def __init__(
        self: Window[OpenAIChatMessage, None],
        manager: BaseContextManager[Any] | None = None,
        *,
        budget: int | None = None,
        format: Literal["openai_chat"] = "openai_chat",
        store: str | os.PathLike[str] | SessionStore | None = None,
        thread_id: str = "default",
        prompt_cache: bool = True,
    ) -> None: ...

    @overload
    def __init__(
        self: Window[ResponsesItem, str | None],
        manager: BaseContextManager[Any] | None = None,
        *,
        budget: int | None = None,
        format: Literal["openai_responses"],
        store: str | os.PathLike[str] | SessionStore | None = None,
        thread_id: str = "default",
        prompt_cache: bool = True,
    ) -> None: ...

    @overload
    def __init__(
        self: Window[AnthropicMessage, AnthropicSystem | None],
        manager: BaseContextManager[Any] | None = None,
        *,
        budget: int | None = None,
        format: Literal["anthropic"],
        store: str | os.PathLike[str] | SessionStore | None = None,
        thread_id: str = "default",
        prompt_cache: bool = True,
    ) -> None: ...

    @overload
    def __init__(
        self: Window[GeminiContent, GeminiSystemInstruction | None],
        manager: BaseContextManager[Any] | None = None,
        *,
        budget: int | None = None,
        format: Literal["gemini"],
        store: str | os.PathLike[str] | SessionStore | None = None,
        thread_id: str = "default",
        prompt_cache: bool = True,
    ) -> None: ...

    @overload
    def __init__(
        self: Window[BaseMessage, None],
        manager: BaseContextManager[Any] | None = None,
        *,
        budget: int | None = None,
        format: Literal["langchain"],
        store: str | os.PathLike[str] | SessionStore | None = None,
        thread_id: str = "default",
        prompt_cache: bool = True,
    ) -> None: ...

    @overload
    def __init__(
        self: Window[Any, Any],
        manager: BaseContextManager[Any] | None = None,
        *,
        budget: int | None = None,
        format: str,
        store: str | os.PathLike[str] | SessionStore | None = None,
        thread_id: str = "default",
        prompt_cache: bool = True,
    ) -> None: ...

    def __init__(
        self,
        manager: BaseContextManager[Any] | None = None,
        *,
        budget: int | None = None,
        format: str = "openai_chat",
        store: str | os.PathLike[str] | SessionStore | None = None,
        thread_id: str = "default",
        prompt_cache: bool = True,
    ) -> None:
        if manager is not None and budget is not None:
            raise ConfigurationError(
                "pass either manager=... or budget=..., not both (budget only builds the default manager)"
            )
        if manager is None and budget is None:
            raise ConfigurationError(
                "Window needs budget=<context window in tokens> (e.g. Window(budget=128_000)) or manager=<a context "
                "manager such as TokenBudgetContextManager(...)>"
            )
        if manager is not None and not isinstance(manager, BaseContextManager):
            raise ConfigurationError(
                f"manager must be a windowkeeper context manager (BaseContextManager), got {type(manager).__name__}"
            )
        if budget is not None:
            check_int("budget", budget, minimum=2)
        if not isinstance(thread_id, str) or not thread_id:
            raise ConfigurationError(f"thread_id must be a non-empty string, got {thread_id!r}")
        self.format: WindowFormat = check_format(format)
        self.thread_id = thread_id
        self.prompt_cache = prompt_cache
        self._manager = manager
        self._budget = budget
        self._tools_seen: tuple[tuple[int, ...], list[Any], int] | None = None
        self._threads: LRUCache[str, ThreadMemory] = LRUCache(MAX_WINDOW_THREADS)
        self._key = f"window-{uuid.uuid4().hex[:8]}"
        self._owns_store = store is not None and not isinstance(store, SessionStore)
        opened: SessionStore | None
        opened = store if store is None or isinstance(store, SessionStore) else open_store(store)
        self._store = ThreadStore(opened) if opened is not None else None

    def __repr__(self) -> str:
        return f"Window(format={self.format!r}, thread_id={self.thread_id!r}, manager={self._manager!r})"

    # -- configuration ------------------------------------------------------------------------------------------

    @property
    def manager(self) -> BaseContextManager[Any] | None:
        """The context manager (None until the first call when it is built from ``budget``)."""
        return self._manager

    @property
    def store(self) -> SessionStore | None:
        return self._store.store if self._store is not None else None

    def _manager_for(self, tools: Sequence[Any] | None) -> BaseContextManager[Any]:
        if self._manager is None:
            self._manager = _default_manager(self._budget, tools)
        return self._manager

    @property
    def _counter(self) -> TokenCounter | None:
        return self._manager.counter if self._manager is not None else None

    def _tool_tokens(self, manager: BaseContextManager[Any], tools: Sequence[Any] | None) -> int:
        """What this call's ``tools`` cost as `assemble` counts them, for the manager to plan under (its own
        ``tools`` were fixed when it was made). Remembered for the same tool objects: most callers pass the same
        definitions on every call, and a definition is not edited in place."""
        if not tools:
            return 0
        key = tuple(map(id, tools))
        known = self._tools_seen
        if known is not None and known[0] == key:
            return known[2]
        tokens = tool_schema_tokens([dict(t) for t in tools], manager.counter)
        self._tools_seen = (key, list(tools), tokens)  # the objects kept, so their ids are not reused
        return tokens

    # -- the public API -----------------------------------------------------------------------------------------

    def fit(
        self,
        messages: Any,
        *,
        system: Any = None,
        tools: Sequence[Any] | None = None,
        thread_id: str | None = None,
        summary: str | None = None,
    ) -> FitResult[M, Sys]:
        """Sync form of `afit`. Inside a running event loop the work runs on a worker thread (blocking until done),
        so hosts that call a sync hook from async code still work; prefer ``await afit(...)`` there."""
        return run_sync_anywhere(
            lambda: self.afit(messages, system=system, tools=tools, thread_id=thread_id, summary=summary)
        )

    def _fit_unwritten(
        self, messages: Any, *, system: Any = None, tools: Sequence[Any] | None = None, thread_id: str | None = None
    ) -> FitResult[M, Sys]:
        """`fit` whose result writes ``messages``/``system`` only when read (for adapters that use ``prompt``)."""
        return run_sync_anywhere(
            lambda: self._afit(messages, system=system, tools=tools, thread_id=thread_id, written=False)
        )

    async def _afit_unwritten(
        self, messages: Any, *, system: Any = None, tools: Sequence[Any] | None = None, thread_id: str | None = None
    ) -> FitResult[M, Sys]:
        """`afit` whose result writes ``messages``/``system`` only when read (for adapters that use ``prompt``)."""
        return await self._afit(messages, system=system, tools=tools, thread_id=thread_id, written=False)

    async def afit(
        self,
        messages: Any,
        *,
        system: Any = None,
        tools: Sequence[Any] | None = None,
        thread_id: str | None = None,
        summary: str | None = None,
    ) -> FitResult[M, Sys]:
        """The managed form of ``messages`` (the whole conversation, in the window's format) for one model call.

        ``system`` is the system prompt (a string, or the provider's own system value); ``tools`` the tool
        schemas sent with the call, counted in the request. The caller's list is never modified. ``summary`` is a
        running summary of what came before ``messages`` (kept elsewhere, or made by another manager): a thread
        that starts from this call (its first call, or a list that does not continue the last one) starts with it
        and extends it as it cuts, so one summary goes out; a thread that goes on keeps its own.
        """
        return await self._afit(
            messages, system=system, tools=tools, thread_id=thread_id, written=True, summary=summary
        )

    async def _afit(
        self,
        messages: Any,
        *,
        system: Any,
        tools: Sequence[Any] | None,
        thread_id: str | None,
        written: bool,
        summary: str | None = None,
    ) -> FitResult[M, Sys]:
        """`_afit_once`, redone on the thread as the store holds it when another writer committed it first."""
        tid = self._thread_id(thread_id)
        for attempt in range(1, SAVE_ATTEMPTS + 1):
            try:
                return await self._afit_once(
                    messages, system=system, tools=tools, tid=tid, written=written, summary=summary
                )
            except StaleHeadError:
                # what this window remembers of the thread is older than the store's: read it back, as a new
                # process would, and manage the call again on it
                self._threads.pop(tid)
                if self._manager is not None:
                    self._manager.forget(self._manager_key(tid))
                logger.info(
                    "thread %r: another window or process committed the thread first (attempt %d of %d); "
                    "reading it back and redoing the call",
                    tid,
                    attempt,
                    SAVE_ATTEMPTS,
                )
                if attempt < SAVE_ATTEMPTS:
                    # random and growing: a writer that keeps winning holds a current memory and commits at once,
                    # so the one redoing (a reload first) must leave it room, and two losers must not collide again
                    await asyncio.sleep(random.uniform(0, min(0.25, 0.004 * 2**attempt)))
        raise ConflictError(
            f"thread {tid!r}: another window or process committed the thread before each of {SAVE_ATTEMPTS} "
            "attempts of this call, so nothing of it was saved; serve a thread from one window at a time (route "
            "its calls to one worker), or retry the call",
            key=tid,
        )

    async def _afit_once(
        self,
        messages: Any,
        *,
        system: Any,
        tools: Sequence[Any] | None,
        tid: str,
        written: bool,
        summary: str | None = None,
    ) -> FitResult[M, Sys]:
        memory = await self._memory(tid)
        # what the last call worked out over its prompt, taken (a call that fails past here leaves none behind)
        carry: PromptCarry | None = memory.carry
        memory.carry = None
        incoming, memory.read_cache = read_messages_cached(self.format, messages, memory.read_cache)
        prompt_text = system_text(self.format, system)
        manager = self._manager_for(tools)
        head: list[Message] = [section_message(prompt_text)] if prompt_text else []
        if memory.needs_reseed:
            await self._reseed(tid, manager, memory, head, incoming[memory.source_count :])
            memory.needs_reseed = False

        count = memory.source_count
        before = memory.view
        went_on = False
        if count and len(incoming) >= count and _continues(memory, incoming):
            went_on = True
            new = incoming[count:]
            context = [*head, *before, *new]
            memory.hasher = chain_hasher(new, memory.hasher)
            memory.developer = memory.developer or _developer(new)
        else:
            if count:
                logger.info(
                    "thread %r: the list (%d messages) does not continue the %d messages managed so far; starting "
                    "the thread over from it (summary dropped, history re-planned)",
                    tid,
                    len(incoming),
                    count,
                )
                manager.forget(self._manager_key(tid))
                memory.summary = None
                memory.sent, memory.sent_system = (), None
            if summary is not None:
                memory.summary = summary or None
            new = list(incoming)
            context = [*head, *new]
            memory.hasher = chain_hasher(new)
            memory.developer = _developer(new)
        state = AgentState(context=context, context_summary=memory.summary, scratchpad=memory.scratchpad)
        state.execution_meta.thread_id = self._manager_key(tid)
        with request_tools(self._tool_tokens(manager, tools)):
            state = await manager.atrim_context(state)

        h = len(head)
        head_ids = {m.message_id for m in head}
        # one check in C: the manager handed back the head it was given (the one the view was filtered with), the
        # last view and the new messages, as they are (the common call); the passes below then look at the new
        # messages alone
        grown = (
            went_on
            and len(state.context) == h + len(before) + len(new)
            and len(memory.view_head) == h
            and shared_prefix(head, memory.view_head) == h
            and all(map(operator.is_, state.context, itertools.chain(head, before, new)))
        )
        # the last call's context was its head and view, so this one is that context and the new messages
        follows = grown and memory.laid and carry is not None
        if grown:
            added = _without(new, head_ids)
            memory.view = [*before, *added]
            memory.laid = len(added) == len(new)
        else:
            memory.view = _view_of(state.context, head, head_ids, before, memory.view_head)
            memory.laid = len(memory.view) == len(state.context) - h and shared_prefix(state.context, head) == h
        memory.view_head = head
        memory.summary = state.context_summary or None
        memory.scratchpad = state.scratchpad or None
        memory.source_count = len(incoming)
        memory.source_digest = memory.hasher.hexdigest()
        # the view's pointers, found once: the export, the rewrite below and the originals' bound need only them
        if grown:
            more = offloaded(added)
            pointers = [*memory.pointers, *more] if more else memory.pointers
        else:
            pointers = _pointers_of(memory.view, before, memory.pointers)
        same_pointers = _same_objects(pointers, memory.pointers)
        memory.pointers = pointers
        kept_more = False
        if not (same_pointers and _same_objects(pointers, memory.exported) and _exports_pointers_only(manager)):
            kept_more = True
            exported = manager.export_thread(self._manager_key(tid), memory.view)
            _keep_originals(memory, exported.originals)
            memory.recall_served = exported.recall_served
            # the next call need not ask again while the view holds these pointers: every original is kept
            memory.exported = pointers if len(exported.originals) == len(pointers) else []

        declared = restore_tool_declared(tools)
        # what this call's context as sent adds to the last call's (None: not known without comparing)
        sent_tail: list[Message] | None = None
        rewrote = False
        if memory.rewritten or (pointers and not declared):
            # the model has no recall tool: pointers say how the application restores instead (a request that
            # declares it, after one that did not, drops the rewrites; the head holds no pointer)
            if not declared:
                rewrote = True
                sent, tail = _rewritten_for_request(memory, state.context, pointers, new if follows else None)
                if carry is not None and carry.rewrote:
                    sent_tail = tail  # the last call sent its rewrites too: this call's are those and the tail's
                state = state.model_copy(update={"context": sent})
            else:
                memory.rewrite_from, memory.rewrite_sent = [], []
            if declared or not same_pointers:
                # rewrites of pointers that left the view go (the same pointers leave nothing to drop)
                live = {(str(m.message_id), m.fingerprint()) for m in pointers}
                memory.rewritten = {k: v for k, v in memory.rewritten.items() if k in live}
        else:
            memory.rewrite_from, memory.rewrite_sent = [], []
        if not rewrote and follows and carry is not None and not carry.rewrote:
            sent_tail = new  # neither call rewrote: what is sent is the manager's context, which only grew
        prompt, grew = _assembled(carry, state, tools, self._counter, memory.running, sent_tail)
        breakpoints = self._breakpoints(memory, prompt)
        if (
            grew
            and carry is not None
            and carry.developer == memory.developer
            and (carry.messages or not prompt.messages)
        ):
            lead, anchors = carry.lead, _anchors_after(carry, prompt.messages)
        else:
            lead = system_lead(
                state.context,
                prompt.system,
                summary=prompt.summary,
                scratchpad=prompt.scratchpad,
                made=head_ids,
                developer=memory.developer,
            )
            anchors = lead_anchors(state.context, lead)
        # the prompt's messages as written: the writer's memo may take the last call's for their leading part
        written_from = list(prompt.messages)
        fmt, developer, memo = self.format, memory.developer, memory.write_memo
        grew_from = carry.messages if grew and carry is not None else None

        def write() -> tuple[list[M], Sys]:
            if grew_from is not None:
                memo.grown(grew_from, written_from)
            out, out_system = write_messages(
                fmt,
                prompt.system,
                written_from,
                cache_breakpoints=breakpoints,
                cache_reserved=tool_cache_marks(tools) if breakpoints is not None else 0,
                developer=developer,
                system_messages=lead,
                system_anchors=anchors,
                system_source=system,
                memo=memo,
            )
            # the one crossing from the run-time format to the static one: ``write_messages`` wrote ``fmt``'s
            # shape, which is the shape the ``__init__`` overload bound to ``M``/``Sys``
            return cast("list[M]", out), cast("Sys", out_system)

        def laid_out() -> list[Message] | None:
            return lay_out(fmt, prompt.system, written_from, system_messages=lead, system_anchors=anchors)

        # what `_breakpoints` compares the next call with; no other format reads it, so none pays for it (the
        # fingerprints of a whole view on every call, and their text in every stored head)
        memory.sent = fingerprints(prompt.messages) if self.format == "anthropic" and self.prompt_cache else ()
        memory.sent_system = prompt.system
        memory.last_prompt = prompt
        if self._store is not None:
            await self._store.save(tid, self.format, memory, new)
        elif kept_more or not same_pointers:
            # without a store the originals change only above, and the bound depends on them and on the view's
            # pointers alone: with neither changed, they are as the last call's pruning left them (a sum over
            # every kept original, on every call, was the one part of a call that grew with the thread)
            memory.prune_originals(stored=False)
        notes_at: list[int] | None = None
        joined = 0
        if fmt in JOINING_FORMATS:
            known = len(carry.messages) if grew and carry is not None and carry.notes_at is not None else 0
            notes_at = _recall_at(memory, written_from, known, carry.notes_at if known and carry else None)
            joined = joined_recall(fmt, prompt.messages, prompt.counter, at=notes_at)
        result: FitResult[M, Sys] = FitResult(
            _write=write,
            metrics=manager.metrics_for(self._manager_key(tid)),
            summary=memory.summary,
            prompt=prompt,
            thread_id=tid,
            _joined=joined,
            _laid_out=laid_out,
        )
        memory.carry = PromptCarry(
            prompt=prompt,
            messages=written_from,
            inputs=(state.context_summary, state.scratchpad),
            rewrote=rewrote,
            developer=memory.developer,
            lead=lead,
            anchors=anchors,
            notes_at=notes_at,
        )
        if written:
            result.messages  # noqa: B018 - written now: a shape the format cannot write fails this call
        return result

    def observe_usage(self, prompt_tokens: int | None, *, thread_id: str | None = None) -> int:
        """Tell the window what the provider reported as the prompt size of the thread's last request.

        An estimated counter (`CalibratedCounter`, as used for Anthropic and Gemini models) moves toward the
        provider's real sizes; exact counters ignore it. Returns how many counters were calibrated. The adapters
        call this themselves where the host shows them the usage.
        """
        tid = self._thread_id(thread_id)
        if not prompt_tokens or prompt_tokens <= 0:
            return 0  # nothing reported: no counter to feed (the adapters call this after every reply)
        memory = self._threads.peek(tid)
        prompt = memory.last_prompt if memory is not None else None
        if prompt is None or self._manager is None:
            return 0
        tools = prompt.tools
        fmt = self.format

        def estimate(base: TokenCounter) -> int:
            # `count_request`'s definition; the tools here are in the provider's own shape, not an `LLMRequest`'s;
            # recall notes written into the turn they serve are one message on the wire. The request is built here,
            # for a counter that calibrates only: an exact counter (most hosts) never asks, and building it (a
            # system message made from the text) was most of what a reply cost the adapters
            joined = joined_recall(fmt, prompt.messages, base)
            return base.count_messages(prompt.to_messages()) + tool_schema_tokens(tools, base) - joined

        return feed_calibration((self._counter,), prompt_tokens, estimate)

    def continues(self, messages: Any, *, thread_id: str | None = None) -> bool:
        """Whether ``messages`` go on from the list the thread was last fitted to (a `fit` of them would continue
        the thread, not start it over); True for a thread nothing was fitted to. Nothing is changed."""
        return run_sync_anywhere(lambda: self.acontinues(messages, thread_id=thread_id))

    async def acontinues(self, messages: Any, *, thread_id: str | None = None) -> bool:
        """Async form of `continues`."""
        memory = await self._memory(self._thread_id(thread_id))
        count = memory.source_count
        if not count:
            return True
        saved = memory.read_cache, memory.hasher
        incoming, memory.read_cache = read_messages_cached(self.format, messages, memory.read_cache)
        try:
            return len(incoming) >= count and _continues(memory, incoming)
        finally:
            memory.read_cache, memory.hasher = saved

    @overload
    def restore(self, message: str, *, thread_id: str | None = None) -> M | list[M] | None: ...

    @overload
    def restore(self, message: Message, *, thread_id: str | None = None) -> Message: ...

    @overload
    def restore(self, message: M, *, thread_id: str | None = None) -> M | list[M]: ...

    def restore(self, message: Any, *, thread_id: str | None = None) -> Any:
        """Sync form of `arestore`."""
        return run_sync_anywhere(lambda: self.arestore(message, thread_id=thread_id))

    @overload
    async def arestore(self, message: str, *, thread_id: str | None = None) -> M | list[M] | None: ...

    @overload
    async def arestore(self, message: Message, *, thread_id: str | None = None) -> Message: ...

    @overload
    async def arestore(self, message: M, *, thread_id: str | None = None) -> M | list[M]: ...

    async def arestore(self, message: Any, *, thread_id: str | None = None) -> Any:
        """The original of a message the manager replaced with a pointer, in the form it was given.

        ``message`` is one message from an earlier `FitResult.messages` (a provider dict, a LangChain message), a
        windowkeeper `Message`, or the id a pointer shows (a tool call id or a message id, as in
        ``recall(pointer_id="...")``); the result is the original in the same form (in the window's format for an
        id; a list when the original takes several provider messages), ``message`` itself when it is not a
        pointer this thread made, or None for an id it does not know.
        """
        tid = self._thread_id(thread_id)
        memory = await self._memory(tid)
        if isinstance(message, str):
            found = await self._original_by_ref(tid, memory, message)
            if found is None:
                return None
            written = write_plain(self.format, [found])
            return written[0] if len(written) == 1 else written
        if isinstance(message, Message):
            return await self._find_original(tid, memory, message) or message
        converted = read_messages(self.format, [message])
        originals = [await self._find_original(tid, memory, m) for m in converted]
        if not any(o is not None for o in originals):
            return message
        restored = [o if o is not None else m for o, m in zip(originals, converted, strict=True)]
        out = write_plain(self.format, restored)
        return out[0] if len(out) == 1 else out

    async def arestore_text(self, pointer_id: str, *, thread_id: str | None = None) -> str | None:
        """What the model reads of the original a pointer id names (that call's output, or the reply's text), or
        None when the thread has no such original. The recall tool answers with this."""
        tid = self._thread_id(thread_id)
        found = await self._original_by_ref(tid, await self._memory(tid), pointer_id)
        return original_text(found, pointer_id) if found is not None else None

    def recall_tool(self, *, thread_id: str | None = None) -> WindowRecallTool:
        """The ``recall`` tool the window's pointers name, for ``thread_id`` (default: the window's thread).

        Declare ``tool.definition(window.format)`` in the request's tools and answer the model's call with
        ``await tool.ainvoke(arguments)`` (``tool.invoke(arguments)`` in sync code); with it in the tools passed to
        `fit`, pointers name it, without it they say how the application restores (`restore` with the id).
        """
        fixed = thread_id

        def thread_of() -> str:
            return self._thread_id(fixed)

        return WindowRecallTool(
            lambda tid, ref: self.arestore_text(ref, thread_id=tid), self._search_tool, self._manager_key, thread_of
        )

    def _search_tool(self) -> RecallTool | None:
        """A search over the manager's recall index (None when the manager keeps none)."""
        if self._manager is None:
            return None
        try:
            return RecallTool(self._manager)
        except ConfigurationError:
            return None

    async def adelete_thread(self, thread_id: str | None = None) -> None:
        """Forget a thread here, in the manager and in the store."""
        tid = self._thread_id(thread_id)
        self._threads.pop(tid)
        if self._manager is not None:
            self._manager.forget(self._manager_key(tid))
        if self._store is not None:
            await self._store.delete(tid)

    def delete_thread(self, thread_id: str | None = None) -> None:
        run_sync_anywhere(lambda: self.adelete_thread(thread_id))

    def summary(self, thread_id: str | None = None) -> str | None:
        """The thread's running summary as of the last call (None before any cut)."""
        memory = self._threads.peek(self._thread_id(thread_id))
        return memory.summary if memory is not None else None

    async def aclose(self) -> None:
        """Close the store if this window opened it from a path or URL."""
        if self._store is not None and self._owns_store:
            await self._store.store.close()

    def close(self) -> None:
        run_sync_anywhere(self.aclose)

    async def __aenter__(self) -> Window[M, Sys]:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __enter__(self) -> Window[M, Sys]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- internals ----------------------------------------------------------------------------------------------

    def _thread_id(self, thread_id: str | None) -> str:
        if thread_id is None:
            return self.thread_id
        if not isinstance(thread_id, str) or not thread_id:
            raise ConfigurationError(f"thread_id must be a non-empty string, got {thread_id!r}")
        return thread_id

    def _manager_key(self, thread_id: str) -> str:
        return f"{self._key}:{thread_id}"

    async def _memory(self, thread_id: str) -> ThreadMemory:
        memory = self._threads.get(thread_id)
        if memory is not None:
            return memory
        loaded = await self._store.load(thread_id) if self._store is not None else None
        memory = loaded if loaded is not None else ThreadMemory()
        self._threads.put(thread_id, memory)
        return memory

    async def _reseed(
        self,
        thread_id: str,
        manager: BaseContextManager[Any],
        memory: ThreadMemory,
        head: Sequence[Message],
        pending: Sequence[Message],
    ) -> None:
        """Hand a manager that never saw this thread what was kept about it in the process that stopped (the
        view's originals; the history, read from the store only when the manager wants it).

        ``pending`` are the call's messages beyond what the committed head covers. The log may hold them already
        (an attempt whose head write lost to another writer appended them, as may a process that stopped between
        the two writes); they are left out of the history, since the call hands them to the manager as new, and
        the manager must see the thread as the head left it, as one window serving every call would."""
        pointers = offloaded(memory.view)
        pairs = [(p, o) for p in pointers if (o := self._original(memory, p)) is not None]
        history: list[Message] = []
        if manager.wants_history and self._store is not None:
            logged = await self._store.history(thread_id)
            if pending:
                new_ids = {m.message_id for m in pending}
                logged = [m for m in logged if m.message_id not in new_ids]
            history = [*head, *logged]
        seed = ThreadSeed(view=memory.view, originals=pairs, history=history, recall_served=memory.recall_served)
        manager.import_thread(self._manager_key(thread_id), seed)

    async def _find_original(self, thread_id: str, memory: ThreadMemory, message: Message) -> Message | None:
        """The original of a pointer: kept in memory while the pointer is in the view (and, without a store, while
        the size bound allows), else read from the store."""
        found = self._original(memory, message)
        if found is not None or self._store is None:
            return found
        # a provider-shaped message read back carries no pointer mark: the store answers for any key it has
        return await self._store.original(thread_id, restore_keys(message))

    async def _original_by_ref(self, thread_id: str, memory: ThreadMemory, ref: str) -> Message | None:
        keys = ref_keys(ref)
        for key in keys:
            found = memory.originals.get(key)
            if found is not None:
                return found
        if self._store is not None:
            found = await self._store.original(thread_id, keys)
            if found is not None:
                return found
        # a pointer the window no longer keeps (no store, evicted): the manager may still hold it
        if self._manager is not None:
            for message in memory.view:
                if is_offloaded(message) and (str(message.message_id) == ref or ref in _result_ids(message)):
                    original = self._manager.restore(message)
                    return original if original is not message else None
        return None

    @staticmethod
    def _original(memory: ThreadMemory, message: Message) -> Message | None:
        for key in restore_keys(message):
            original = memory.originals.get(key)
            if original is not None:
                return original
        return None

    def _breakpoints(self, memory: ThreadMemory, prompt: AssembledPrompt) -> list[CacheBreakpoint] | None:
        """Anthropic cache breakpoints: the system text, the last message unchanged since the previous call, the
        last message (written now, read by the next call). At most `MAX_CACHE_BREAKPOINTS`."""
        if self.format != "anthropic" or not self.prompt_cache:
            return None
        marks: list[CacheBreakpoint] = ["system"] if prompt.system else []
        n = len(prompt.messages)
        if prompt.system == memory.sent_system:
            same = 0
            for previous, message in zip(memory.sent, prompt.messages, strict=False):
                if previous != message.fingerprint():
                    break
                same += 1
            if same:
                marks.append(same - 1)
        if n and (n - 1) not in marks:
            marks.append(n - 1)
        return marks[:MAX_CACHE_BREAKPOINTS]


JOINING_FORMATS = frozenset({"openai_chat", "openai_responses", "anthropic", "gemini"})
"""Formats whose writer puts a recall note into the user turn it serves (LangChain keeps it a message)."""


def joined_recall(
    fmt: str, messages: Sequence[Message], counter: TokenCounter, *, at: Sequence[int] | None = None
) -> int:
    """Tokens saved on the wire by writing each recall note into the user message it serves: the two messages'
    counts less the count of the one message they make (a frame each, as counted by ``counter``). ``at``, when
    the caller knows them, are the positions of the recall notes in ``messages`` (found otherwise)."""
    if fmt not in JOINING_FORMATS:
        return 0
    saved = 0
    # found in C when not given: a pass over the view
    for i in itertools.compress(itertools.count(), recall_flags(messages)) if at is None else at:
        message = messages[i]
        if recall_for_next(messages, i):
            following = messages[i + 1]
            joined = following.with_content([TextBlock(text=message.text()), *following.content])
            saved += counter.count_message(message) + counter.count_message(following) - counter.count_message(joined)
    return saved


def _result_ids(message: Message) -> list[str]:
    return [b.call_id for b in message.tool_result_blocks()]


def _keep_originals(memory: ThreadMemory, pairs: Sequence[tuple[Message, Message]]) -> None:
    """Remember the originals of the view's pointers under their restore keys (each kept once)."""
    for pointer, original in pairs:
        for key in memory.keys_of(pointer):
            if key not in memory.originals:
                memory.originals[key] = original
                memory.original_bytes[key] = approx_bytes(original)


def _view_of(
    context: list[Message], head: list[Message], head_ids: set[Any], before: list[Message], before_head: list[Message]
) -> list[Message]:
    """``context`` without the head's messages (ids in ``head_ids``), filtered in C. A context that is the same
    head objects ``before`` (the last view) was filtered with, then ``before``'s objects, then more, filters only
    the more: ``before`` holds no id of that head already (the whole context, every call, otherwise)."""
    h, n = len(head), len(before)
    if (
        n
        and len(context) >= h + n
        and len(before_head) == h
        and shared_prefix(head, before_head) == h
        and shared_prefix(context, [*head, *before]) == h + n
    ):
        return [*before, *_without(context[h + n :], head_ids)]
    return _without(context, head_ids)


def _without(messages: list[Message], ids: set[Any]) -> list[Message]:
    """``messages`` less those whose id is in ``ids`` (a copy), found in C."""
    if not ids:
        return list(messages)
    return list(itertools.compress(messages, map(operator.not_, map(ids.__contains__, map(_ID, messages)))))


def _pointers_of(view: list[Message], before: list[Message], pointers: list[Message]) -> list[Message]:
    """`offloaded` of ``view``, given ``pointers``, those of the view ``before`` it: a view that starts with the
    objects of the one before (it only grew at the end) looks only at what follows them (the whole view, the one
    pass of a call over every message it kept, otherwise)."""
    n = len(before)
    if n and len(view) >= n and shared_prefix(view, before) == n:
        return [*pointers, *offloaded(view[n:])]
    return offloaded(view)


def _rewritten_for_request(
    memory: ThreadMemory, context: list[Message], pointers: list[Message], new: list[Message] | None = None
) -> tuple[list[Message], list[Message] | None]:
    """`without_restore_tool` of ``context``, kept as the thread's carry: a context that starts with the objects
    of the last one rewritten takes that call's rewrites of them (its pointers' rewrites are still in
    ``memory.rewritten``, which keeps those of the view's pointers, so they are the same objects) and rewrites
    only what follows. ``new``, when the caller knows the context is the last call's and then ``new`` (the same
    objects), spares the comparison. Returned with the rewritten part that follows the last call's (None when
    rewritten whole)."""
    n = len(memory.rewrite_from)
    tail: list[Message] | None = None
    if n and new is not None and len(context) == n + len(new):
        tail = without_restore_tool(new, memory.rewritten)
    elif n and len(context) >= n and shared_prefix(context, memory.rewrite_from) == n:
        tail = without_restore_tool(context[n:], memory.rewritten)
    sent = (
        [*memory.rewrite_sent, *tail] if tail is not None else without_restore_tool(context, memory.rewritten, pointers)
    )
    memory.rewrite_from, memory.rewrite_sent = list(context), sent
    return sent, tail


@dataclass(frozen=True, eq=False)
class PromptCarry:
    """What one finished call worked out over its whole prompt, for the next call on the thread: a call whose
    context as sent is that call's and then messages of the conversation only (no system message among them), with
    the same summary and scratchpad, has that prompt with those messages added, the same system lead, and anchors
    and recall notes found among the added messages alone."""

    prompt: AssembledPrompt
    messages: list[Message]
    """``prompt.messages`` as written (this window's own list, never handed out)."""
    inputs: tuple[str | None, str | None]
    """The state's summary and scratchpad the prompt was assembled with."""
    rewrote: bool
    """Whether its context was sent with its pointers rewritten (``memory.rewrite_sent``)."""
    developer: bool
    lead: list[Message] | None
    anchors: dict[int, Message | None] | None
    notes_at: list[int] | None
    """Where the prompt's recall notes are (None: not looked for, the format does not join them)."""


def _assembled(
    carry: PromptCarry | None,
    state: AgentState,
    tools: Sequence[Any] | None,
    counter: TokenCounter | None,
    running: RunningCount,
    tail: list[Message] | None,
) -> tuple[AssembledPrompt, bool]:
    """`assemble` of ``state``, and whether it is the last call's prompt (``carry``) with ``tail`` added: the
    sent context is the last one and ``tail`` (None: not known), which holds no system message, and the summary
    and scratchpad are the same, so the system text is too (what `assemble` gives, without splitting the whole
    view again)."""
    if (
        carry is not None
        and tail is not None
        and carry.inputs == (state.context_summary, state.scratchpad)
        and "system" not in map(_ROLE, tail)
    ):
        last = carry.prompt
        prompt = AssembledPrompt(
            system=last.system,
            messages=[*carry.messages, *tail],
            tools=[dict(t) for t in tools] if tools else [],
            system_parts=last.system_parts,
            summary=last.summary,
            scratchpad=last.scratchpad,
            reserve_tokens=last.reserve_tokens,
            counter=counter if counter is not None else last.counter,
            running=running,
        )
        return prompt, True
    return assemble(state, tools=[dict(t) for t in tools] if tools else None, counter=counter, running=running), False


def _anchors_after(carry: PromptCarry, messages: list[Message]) -> dict[int, Message | None] | None:
    """`lead_anchors` of a prompt that is ``carry``'s with conversation messages added (``messages``): the same
    anchors, those of the system messages said last (None) now the first added message."""
    anchors = carry.anchors
    n = len(carry.messages)
    if not anchors or len(messages) == n or not any(v is None for v in anchors.values()):
        return anchors
    first = messages[n]
    return {k: first if v is None else v for k, v in anchors.items()}


def _recall_at(
    memory: ThreadMemory, messages: list[Message], known: int = 0, notes: list[int] | None = None
) -> list[int]:
    """The positions of the recall notes in ``messages`` (a prompt's), kept as the thread's carry: a prompt that
    starts with the messages of the last one takes that call's positions for them and looks only at what follows
    (whether a note joins the message after it is decided again for each, by `joined_recall`). ``known`` and
    ``notes``, when the caller knows it, are how many leading messages are the last prompt's and its positions."""
    n = len(memory.notes_from)
    if known and notes is not None:
        at = [*notes, *itertools.compress(itertools.count(known), recall_flags(messages[known:]))]
    elif n and len(messages) >= n and shared_prefix(messages, memory.notes_from) == n:
        tail = messages[n:]
        at = [*memory.notes_at, *itertools.compress(itertools.count(n), recall_flags(tail))]
    else:
        at = list(itertools.compress(itertools.count(), recall_flags(messages)))
    memory.notes_from, memory.notes_at = list(messages), at
    return at


def _same_objects(a: Sequence[Message], b: Sequence[Message]) -> bool:
    """Whether ``a`` and ``b`` are the same messages (objects) in the same order."""
    return a is b or (len(a) == len(b) and shared_prefix(a, b) == len(a))


def _exports_pointers_only(manager: BaseContextManager[Any]) -> bool:
    """Whether what ``manager.export_thread`` gives depends on the view's pointers alone: the base export (each
    pointer's original, by `restore`) without recall (whose served turn moves from call to call). Its answer for
    the pointers of the call before is then the one it gave then."""
    return type(manager).export_thread is BaseContextManager.export_thread and manager.recall is None


def _developer(messages: Sequence[Message]) -> bool:
    return any(m.role == "system" and m.metadata.get("openai_role") == "developer" for m in messages)


def _continues(memory: ThreadMemory, incoming: Sequence[Message]) -> bool:
    """Whether ``incoming`` starts with the ``memory.source_count`` messages managed so far, at a cost that does
    not grow with them: the read cache recognized them (re-reading at most the last few, compared here), or, once
    after a load from a store or a list of new objects, their digest matches."""
    count = memory.source_count
    cache = memory.read_cache
    if memory.hasher is not None and cache is not None and cache.reused:
        if cache.reused >= count:
            return True
        again = incoming[cache.reused : count]
        before = cache.replaced[: count - cache.reused]
        if len(again) == len(before) and all(
            a.message_id == b.message_id and a.fingerprint() == b.fingerprint()
            for a, b in zip(again, before, strict=True)
        ):
            return True
    hasher = chain_hasher(incoming[:count])
    if hasher.hexdigest() != memory.source_digest:
        return False
    memory.hasher = hasher
    return True


def as_window(
    manager_or_budget: Window | BaseContextManager[Any] | int,
    *,
    format: str,
    store: str | os.PathLike[str] | SessionStore | None = None,
    owner: str,
) -> Window:
    """The `Window` an adapter runs on: given, built around a manager, or built from a budget in tokens."""
    if isinstance(manager_or_budget, Window):
        if manager_or_budget.format != format:
            raise ConfigurationError(
                f"{owner} exchanges {format} messages but was given a Window(format={manager_or_budget.format!r}); "
                f"pass Window(..., format={format!r}) or a manager or budget"
            )
        if store is not None:
            raise ConfigurationError(f"{owner}: pass store= to the Window, not beside it")
        return manager_or_budget
    if isinstance(manager_or_budget, BaseContextManager):
        return Window(manager_or_budget, format=format, store=store)
    if isinstance(manager_or_budget, int) and not isinstance(manager_or_budget, bool):
        return Window(budget=manager_or_budget, format=format, store=store)
    raise ConfigurationError(
        f"{owner} needs a context manager (e.g. TokenBudgetContextManager(...)), a budget in tokens (e.g. 128_000) "
        f"or a Window, got {type(manager_or_budget).__name__} {manager_or_budget!r:.80}"
    )
