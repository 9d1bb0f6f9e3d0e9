"""The managing step of one request: which thread, what the manager makes of the list, what body goes upstream.

`Gateway.plan` never changes what the client sent unless the conversation needs it: under budget the upstream body
is the client's own bytes; over budget only the message list (and the system text, where the summary goes)
is replaced, with every item the manager left as it was put back as the client's original (`projection`).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._cache import LRUCache
from ..context import TokenBudgetContextManager
from ..integrations._formats import read_messages
from ..storage import SessionStore
from .config import ServeConfig
from .identity import Match, Recognizer, explicit_thread, internal_id, scope_of, session_of
from .metrics import Metrics
from .projection import (
    DIGEST,
    PLAIN,
    ItemCache,
    dumps_body,
    item_key,
    project,
    restore_originals,
    with_fields,
)
from .protocols import PROTOCOLS, Protocol
from .recall import declared, offer, tool_name
from .threads import Clean, Fixed, Thread, Threads

logger = logging.getLogger(__name__)

PENDING_GRACE = 10.0
"""Seconds `Gateway.close` waits for the windows of requests already answered to finish their bookkeeping."""
HOLD_SECONDS = 30.0
"""Longest a request's window waits for its response to be relayed (`Gateway.behind`): a response relayed for
longer (a long generation) has its window run beside it."""


class BadRequest(ValueError):
    """A request the gateway can tell is malformed: answered with 400 in the upstream's error shape."""


class Unmanaged(Exception):
    """The request's tools and system text alone leave the manager no room (`Threads.fixed_over`): it goes as the
    client sent it, and stays placed on its thread (``thread``), which the next request that fits continues."""

    def __init__(self, thread: str, fixed: Fixed) -> None:
        super().__init__(f"thread {thread}: tools and system text cost {fixed.tokens} tokens of {fixed.limit}")
        self.thread = thread
        self.fixed = fixed


class _Branched(Exception):
    """Under its thread's lock, a recognized request no longer continues the thread's list (`Gateway._manage`)."""


class ManagementError(Exception):
    """Managing a request failed inside the gateway (the request is then forwarded as the client sent it)."""

    def __init__(self, thread: str, cause: BaseException) -> None:
        super().__init__(f"thread {thread}: {type(cause).__name__}")
        self.thread = thread
        self.kind = type(cause).__name__


@dataclass
class Placement:
    """A request placed in its thread (the first half of `Gateway.plan`; `Gateway.manage` does the rest)."""

    protocol: Protocol
    body: dict[str, Any]
    items: list[Any]
    raw: bytes
    scope: str
    name: str
    match: Match | None
    cache: ItemCache
    system: Any
    tools: list[Any] | None
    seq: int = 0
    """The order in which requests were placed in this process (`Thread.seq`)."""


@dataclass
class Behind:
    """The window of a request answered before it (`Gateway.behind`): its task, and the release that lets it run."""

    task: asyncio.Task[Plan | None]
    event: asyncio.Event

    def release(self) -> None:
        """The response has been relayed (or failed): the window may run now."""
        self.event.set()


@dataclass
class Plan:
    """What to send upstream for one request, and what the gateway did."""

    protocol: Protocol
    body: bytes
    json: dict[str, Any]
    thread: Thread
    name: str
    tokens_before: int
    tokens_after: int
    recall: str | None
    echo: dict[str, Any] = field(default_factory=dict)
    """The reply's fields that echo the request, as the client sent them (`Protocol.echoed`)."""


def check_items(protocol: Protocol, body: Mapping[str, Any]) -> list[Any]:
    """The client's list, or `BadRequest` naming what is wrong with it."""
    key = protocol.list_key
    if key not in body:
        raise BadRequest(f"'{key}' is required: the conversation as a list of {protocol.fmt} items")
    items = body[key]
    if not isinstance(items, list):
        raise BadRequest(f"'{key}' must be a list, got {type(items).__name__}")
    if not all(map(isinstance, items, itertools.repeat(dict))):  # in C: every call checks the whole list
        index, item = next((i, x) for i, x in enumerate(items) if not isinstance(x, dict))
        raise BadRequest(f"'{key}[{index}]' must be an object, got {type(item).__name__}")
    return items


def _leading_system(protocol: Protocol, items: list[Any]) -> int:
    """How many leading Chat Completions items are system or developer messages (kept as the client sent them)."""
    if protocol.fmt != "openai_chat":
        return 0
    lead = 0
    while lead < len(items) - 1 and items[lead].get("role") in ("system", "developer"):
        lead += 1
    return lead


def _content_text(item: Mapping[str, Any] | None) -> str | None:
    """The text of a Chat Completions system message (a string, or text parts)."""
    if item is None:
        return None
    return PROTOCOLS["/v1/chat/completions"].system_text(item.get("content"))


def _added(original: str | None, managed: str | None) -> str | None:
    """What the manager added to the system text (the summary), or None when it is the client's own."""
    if (managed or None) == (original or None) or not managed:
        return None
    if original and original in managed:
        return managed.replace(original, "", 1).strip() or None
    return managed


MOVED_MIN_ITEMS = 2
"""Items after the system text a thread's list needs before a list under another system text may continue it:
the opening message and the model's reply. Two conversations that only open alike under two system prompts (an
agent's sub-agents, one task under two prompts) stay two threads."""


def _continues_after(
    cache: ItemCache, lead: int, known: ItemCache, known_lead: int, minimum: int = MOVED_MIN_ITEMS
) -> bool:
    """Whether ``cache``'s items after its ``lead`` system items continue ``known``'s whole list after its own
    ``known_lead``, which holds at least ``minimum`` items.

    One digest compared when the lists agree from their first item (a turn that continues the thread, the usual
    case), else the item hashes after the system items (a slice compared in C: 0.2 ms for 100,000 items)."""
    length = len(known) - known_lead
    if length < minimum or len(cache) - lead < length:
        return False
    if lead == known_lead and cache.digest(len(known)) == known.digest(len(known)):
        return True
    return (
        cache.hashes[lead * DIGEST : (lead + length) * DIGEST]
        == known.hashes[known_lead * DIGEST : (known_lead + length) * DIGEST]
    )


def _moved_on(known: ItemCache | None, known_lead: int, cache: ItemCache, lead: int) -> bool:
    """Whether a thread, which this list was found to continue, has gone on here with a list (``known``) this one
    does not continue: a conversation alike but for its system prompt took the thread (`Gateway._opened`), or,
    checked again under the thread's lock against the list its window last ran on, a sibling in flight beside this
    one ran first. This list is then a conversation of its own (a new thread), not a turn that would start that
    thread's window over, and the other's next turn start it over again."""
    return known is not None and not _continues_after(cache, lead, known, known_lead, minimum=0)


def new_tokens(counter: Any, fmt: str, plains: Sequence[Any]) -> int | None:
    """What ``plains`` (items appended to a list the window counted) add to its count, or None when they cannot
    be read on their own (the window then counts the whole request, and the response waits for it).

    Counted from scratch, not through the counter's memo: these messages' ids differ from the ones the window
    gives them, so memo entries for them would never be found again.
    """
    if not plains:
        return 0
    try:
        messages = read_messages(fmt, list(plains))  # type: ignore[arg-type]
        price = getattr(counter, "count_message_uncached", None) or counter.count_message
        return sum(int(price(m)) for m in messages)
    except Exception:
        logger.debug("the new items cannot be counted on their own", exc_info=True)
        return None


class Gateway:
    """Threads, recognition and metrics for one process."""

    def __init__(self, config: ServeConfig, store: SessionStore) -> None:
        self.config = config
        self.threads = Threads(config, store)
        self.recognizer = Recognizer(store, config.max_index_entries, self._orphaned)
        self.threads.on_leave = self._left
        self._deferred: LRUCache[str, str] = LRUCache(config.max_threads, name="max_threads")
        """Orphaned threads still in use here (store id -> name): deleted when they leave memory (`_left`)."""
        self._due: list[str] = []
        self._closing = False
        self.metrics = Metrics()
        self._pending: dict[asyncio.Task[Plan | None], asyncio.Event] = {}
        self._hints: LRUCache[tuple[str, str], str] = LRUCache(config.max_threads, name="max_threads")
        """(index session, head) -> the thread last served here under it (`_hinted`)."""
        self._openers: LRUCache[tuple[str, str], tuple[str, int]] = LRUCache(config.max_threads, name="max_threads")
        """(index session, opener) -> the thread last served here with that first item, and its list's leading
        system items (`_opened`)."""
        self._placed = itertools.count(1)
        self._waiting: Counter[str] = Counter()
        """Calls per thread in `manage` (their answer waits for the window): none may be passed by an early one."""
        self._unmanaged: LRUCache[str, int] = LRUCache(config.max_threads, name="max_threads")
        """Threads whose requests go unmanaged (`Unmanaged`), warned about once until one is managed again."""

    def _head(self, protocol: Protocol, items: list[Any], system: Any) -> tuple[str, str, int]:
        """The list's head (its system text and first item: where recognition looks), its opener (the first item
        alone, `_opened`) and how many leading items are system text."""
        plain_of = PLAIN[protocol.fmt]
        first = _leading_system(protocol, items)
        leading = [item_key(plain_of(i)) for i in items[:first]]
        sys_key = item_key(protocol.system_text(system)) if system is not None else ""
        first_key = item_key(plain_of(items[first]))
        return Recognizer.head_of("\x1f".join([sys_key, *leading]), first_key), Recognizer.head_of("", first_key), first

    async def plan(
        self, protocol: Protocol, headers: Mapping[str, str], body: dict[str, Any], items: list[Any], raw: bytes
    ) -> Plan:
        """What to send upstream for this request (`place`, then `manage`)."""
        return await self.manage(await self.place(protocol, headers, body, items, raw))

    async def place(
        self, protocol: Protocol, headers: Mapping[str, str], body: dict[str, Any], items: list[Any], raw: bytes
    ) -> Placement:
        """Which thread the request belongs to, and its items projected against that thread's last list."""
        scope = scope_of(headers)
        try:
            explicit = explicit_thread(headers)
        except ValueError as exc:
            raise BadRequest(str(exc)) from None
        system = body.get(protocol.system_key) if protocol.system_key else None
        tools = body.get("tools") if isinstance(body.get("tools"), list) else None
        match: Match | None = None
        if explicit is not None:
            name = explicit
            local = self.threads.local(internal_id(scope, name))
            cache = project(protocol.fmt, items, local.items if local is not None else None)
        else:
            head, opener, lead = self._head(protocol, items, system)
            index_session = Recognizer.index_session(scope, session_of(headers, body))
            hinted = self._hinted(protocol, items, scope, index_session, head)
            if hinted is not None:
                match, cache = hinted
            else:
                match = await self.recognizer.candidates(index_session, head)
                nearest = self._nearest(scope, match)
                opened = self._opened(scope, index_session, opener) if nearest is None else None
                cache = project(protocol.fmt, items, nearest if opened is None else opened[2])
                Recognizer.choose(match, cache)
                local = self.threads.local(internal_id(scope, match.name))
                if match.how == "continued" and local is not None and _moved_on(local.items, local.lead, cache, lead):
                    match.name = Recognizer.new_name()
                    match.how = "new"
                if match.how == "new" and opened is not None and _continues_after(cache, lead, opened[2], opened[1]):
                    match.name, match.how = opened[0], "continued"
                match.opener, match.lead = opener, lead
                if match.how == "new" and opened is None:
                    # no thread here opened so: one another process (or this one before a restart) served may have
                    moved = await self.recognizer.moved(match, cache, lead, MOVED_MIN_ITEMS)
                    known = self.threads.local(internal_id(scope, moved)) if moved is not None else None
                    if moved is not None and (known is None or not _moved_on(known.items, known.lead, cache, lead)):
                        match.name, match.how = moved, "continued"
            match.opener, match.lead = opener, lead
            name = match.name
        return Placement(protocol, body, items, raw, scope, name, match, cache, system, tools, next(self._placed))

    def _hinted(
        self, protocol: Protocol, items: list[Any], scope: str, index_session: str, head: str
    ) -> tuple[Match, ItemCache] | None:
        """The thread this process last served under the same head, when the list continues its last list (the
        request is then placed without reading the recognition index; its entry is read when it is written).

        The index names the same thread unless another process has, since, made a second thread whose last list
        this one also continues and is longer (two conversations that were one list until now), which takes two
        clients sending the same conversation at once; the window still reads the thread's committed state.
        """
        name = self._hints.peek((index_session, head))
        local = self.threads.local(internal_id(scope, name)) if name is not None else None
        known = local.items if local is not None else None
        if name is None or known is None or len(items) < len(known):
            return None
        cache = project(protocol.fmt, items, known)
        if cache.digest(len(known)) != known.digest(len(known)):
            return None
        return Match(name=name, how="continued", index_session=index_session, head=head, version=-1), cache

    def _hint(self, match: Match) -> None:
        if match.index_session is None or match.head is None:
            return
        key = (match.index_session, match.head)
        self._hints.put(key, match.name)
        if match.opener is not None:
            self._openers.put((match.index_session, match.opener), (match.name, match.lead))

    def _opened(self, scope: str, index_session: str, opener: str) -> tuple[str, int, ItemCache] | None:
        """The thread this process last served a list opening with ``opener`` (its first item after the system
        text), with the count of its list's leading system items and its list, for a list whose head (system text
        and first item) no thread has: its system text changed, as an agent's does when it carries the date or a
        memory block. The request continues that thread when its items after the system text continue the
        thread's whole list after its own (`_continues_after`): the same conversation under a new system text.

        Known to this process only; a process that does not know the thread's list finds it in the store
        (`Recognizer.moved`).
        """
        seen = self._openers.peek((index_session, opener))
        if seen is None:
            return None
        local = self.threads.local(internal_id(scope, seen[0]))
        if local is None or local.items is None:
            return None
        return seen[0], seen[1], local.items

    async def manage(self, placed: Placement) -> Plan:
        """Run the thread's window on the placed request (under the thread's lock) and build the upstream body."""
        internal = internal_id(placed.scope, placed.name)
        self._waiting[internal] += 1
        try:
            return await self._guarded(placed, None)
        finally:
            self._waiting[internal] -= 1
            if not self._waiting[internal]:
                del self._waiting[internal]

    async def _guarded(self, placed: Placement, hold: asyncio.Event | None) -> Plan:
        try:
            return await self._manage(placed, hold)
        except (BadRequest, Unmanaged):
            raise
        except Exception as exc:
            raise ManagementError(placed.name, exc) from exc

    def passes_through(self, placed: Placement) -> int | None:
        """The request's size when the window is certain to leave it as the client sent it, so that it can go
        upstream at once and the window's bookkeeping (log, view, counters) can run after it (`behind`); else None.

        Certain means: this process served the thread's last call, and that call went out unchanged with nothing
        ever taken out of the thread; no call of the thread waits for its window here; the list continues that
        call's (same digest at its length) with the same system text and tools; and that call's exact size plus an
        upper bound of what was added (its JSON bytes: a token is at least one byte) stays under the manager's high
        watermark, below which it changes nothing. Another process may have served the thread since: that changes
        nothing here, because a list under the watermark goes out unchanged from any window (one that cut the
        thread had a longer list than this one, which continues it, or this list starts the thread over); the
        window behind reads the committed state before it runs, as always.

        The size returned is that call's exact size plus the count of the new items alone (the window's count is
        additive per message), so the response headers need not wait for the window.
        """
        internal = internal_id(placed.scope, placed.name)
        thread = self.threads.local(internal)
        if thread is None or thread.clean is None or thread.removed != 0 or self._waiting.get(internal):
            return None
        clean, known = thread.clean, thread.items
        manager = thread.window.manager
        if known is None or not isinstance(manager, TokenBudgetContextManager):
            return None
        count = len(placed.items)
        if (
            clean.fmt != placed.protocol.fmt
            or count < clean.length
            or placed.cache.digest(clean.length) != known.digest(clean.length)
            or placed.system != clean.system
            or placed.tools != clean.tools
        ):
            return None
        added = len(dumps_body(placed.items[clean.length :])) if count > clean.length else 0
        if clean.tokens + added + 8 * (count - clean.length) >= manager.high_limit:
            return None
        new = new_tokens(manager.counter, placed.protocol.fmt, placed.cache.plains[clean.length :])
        if new is None:
            return None
        # what the window will record for this call, recorded now: the thread's next call compares with it even
        # while this call's window is still queued behind the response
        thread.items, thread.lead, thread.seq = placed.cache, _leading_system(placed.protocol, placed.items), placed.seq
        thread.clean = Clean(clean.fmt, count, clean.tokens + new, clean.system, clean.tools)
        return clean.tokens + new

    def behind(self, placed: Placement, tokens: int) -> Behind:
        """Run the window on a request already sent as the client sent it (`passes_through`), as a task of its
        own that takes the thread's lock at once and then waits for `Behind.release` (the response relayed), so
        the window's few milliseconds never delay the answer. Calls of the thread keep their order: a next call
        that needs the window waits for the lock; one that passes through again queues its own task behind."""
        release = asyncio.Event()
        task = asyncio.ensure_future(self._behind(placed, tokens, release))
        self._pending[task] = release
        task.add_done_callback(lambda done: self._pending.pop(done, None))
        return Behind(task, release)

    async def _behind(self, placed: Placement, tokens: int, release: asyncio.Event) -> Plan | None:
        route = placed.protocol.name
        try:
            plan = await self._guarded(placed, release)
        except Unmanaged:
            return None  # sent as the client sent it, which is what an unmanaged request sends
        except Exception as exc:
            self.failed_open(route, exc)  # the request went as the client sent it, which is what failing open sends
            return None
        if plan.body is not placed.raw:
            # cannot happen while passes_through holds: its bound is above what the window counts
            self.metrics.count("early_misses", route)
            logger.warning(
                "%s: thread %s: the window changed a request already sent unchanged (%d -> %d tokens)",
                route,
                plan.name,
                plan.tokens_before,
                plan.tokens_after,
            )
        elif plan.tokens_after != tokens:
            self.metrics.count("early_recounts", route)
            logger.debug(
                "%s: thread %s: sent as %d tokens, the window counts %d", route, plan.name, tokens, plan.tokens_after
            )
        return plan

    def failed_open(self, route: str, exc: BaseException) -> None:
        """Count and log (one warning naming the thread, never the body) a request forwarded unchanged after a
        failure inside the gateway."""
        self.metrics.count("fail_open", route)
        thread, kind = (exc.thread, exc.kind) if isinstance(exc, ManagementError) else ("?", type(exc).__name__)
        logger.warning(
            "%s: managing the request failed (%s in thread %s); forwarding it unchanged", route, kind, thread
        )
        logger.debug("management failure", exc_info=True)

    async def _manage(self, placed: Placement, hold: asyncio.Event | None) -> Plan:
        try:
            return await self._run(placed, hold)
        except _Branched:
            # another call of the thread ran first with a list this one does not continue: a sibling in flight
            # beside it (an agent's side call), which is a branch of its own, not a reason to start the thread's
            # window over (and the conversation's next turn, which continues the other, to start it over again)
            match = placed.match
            assert match is not None
            placed.name = match.name = Recognizer.new_name()
            match.how = "new"
            logger.debug(
                "%s: a call branched off its thread while in flight; thread %s", placed.protocol.name, match.name
            )
            return await self._run(placed, None)

    async def _run(self, placed: Placement, hold: asyncio.Event | None) -> Plan:
        protocol, body, items, raw = placed.protocol, placed.body, placed.items, placed.raw
        scope, name, match, cache = placed.scope, placed.name, placed.match, placed.cache
        system, tools = placed.system, placed.tools
        internal = internal_id(scope, name)
        lead = _leading_system(protocol, items)
        text = (
            protocol.system_text(system)
            if lead == 0
            else "\n\n".join(filter(None, (_content_text(i) for i in items[:lead])))
        )
        async with self.threads.lock(internal):
            if hold is not None:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(hold.wait(), HOLD_SECONDS)
            ran = self.threads.local(internal)
            if (
                match is not None
                and match.how == "continued"
                and ran is not None
                and _moved_on(ran.ran, ran.ran_lead, cache, lead)
            ):
                raise _Branched
            recall = tool_name(protocol, body) if self.config.recall else None
            told = declared(protocol, tools, recall)
            fixed = self.threads.fixed_over(internal, text or None, told, len(raw))
            if fixed is not None:
                await self._leave(placed, internal, fixed)
            if self._unmanaged.pop(internal) is not None:
                logger.info("%s: thread %s: its tools and system text fit again; managing it", protocol.name, name)
            thread, fit = await self.threads.fit(
                internal,
                protocol.fmt,
                cache.plains[lead:],
                text or None,
                told,
                weight=len(placed.raw),
            )
            # a later request sent before its window ran (`passes_through`) already holds the thread's latest list
            # and count: this window, running late, leaves them (the next request compares with those)
            latest = placed.seq >= thread.seq
            if latest:
                thread.items, thread.lead, thread.seq = cache, lead, placed.seq
            thread.ran, thread.ran_lead = cache, lead
            if match is not None:
                await self.recognizer.remember(match, cache)
                self._hint(match)
            if self._due:
                await self._collect()
        managed = list(fit.messages)
        changes: dict[str, Any] = {}
        if lead:
            # Chat Completions: the client's leading system/developer items stay as sent; a summary follows them
            head = managed.pop(0) if managed and managed[0].get("role") in ("system", "developer") else None
            added = _added(text, _content_text(head) if head is not None else None)
            kept = list(items[:lead])
            if added:
                kept.append({"role": items[lead - 1].get("role", "system"), "content": added})
        metrics = fit.metrics
        after = fit.input_tokens
        removed = max(0, metrics.tokens_before - metrics.tokens_after) if metrics is not None else 0
        thread.removed = None if thread.removed is None else thread.removed + removed
        if thread.removed == 0 and fit.summary is None and len(managed) == len(items) - lead:
            # nothing was ever taken out of this thread and nothing added: the manager's list is the client's
            written, unchanged = list(items[lead:]), True
        else:
            written, unchanged = restore_originals(managed, items, cache, offset=lead)
        if lead:
            written = [*kept, *written]
            unchanged = unchanged and not added
        if protocol.system_key is not None:
            sent_system = protocol.sent_system(system, fit.system, text)
            if sent_system is not system:
                unchanged = False
                changes[protocol.system_key] = sent_system
        before = after + (thread.removed or 0)
        recall = recall if not unchanged else None
        clean = unchanged and thread.removed == 0 and fit.summary is None
        if latest:
            thread.clean = Clean(protocol.fmt, len(items), after, system, tools) if clean else None
        if unchanged:
            out_json, out = body, raw
        else:
            out_json = with_fields(body, **{protocol.list_key: written}, **changes)
            if recall is not None:
                out_json = offer(protocol, out_json, thread, recall)
            out = dumps_body(out_json)
        self.metrics.managed_call(
            protocol.name,
            before,
            after,
            cut=not unchanged,
            summarized=bool(metrics and metrics.summaries_made),
            stable=metrics is None or metrics.prefix_stable is not False,
        )
        echo = protocol.echoed(body, out_json) if out_json is not body else {}
        return Plan(protocol, out, out_json, thread, name, before, after, recall, echo)

    async def _leave(self, placed: Placement, internal: str, fixed: Fixed) -> None:
        """Keep an unmanageable request on its thread (hold its lock): its list recorded as the thread's last, so
        that the conversation's next request continues this thread whether or not it fits, then `Unmanaged`.

        The thread's window is not run: it keeps the last list it managed, and the next request that fits continues
        that list (the client's list only grows), so the window takes in everything sent meanwhile as new.
        """
        route, name = placed.protocol.name, placed.name
        thread = self.threads.local(internal)
        if thread is not None:
            if placed.seq >= thread.seq:
                thread.items, thread.lead = placed.cache, _leading_system(placed.protocol, placed.items)
                thread.seq = placed.seq
            thread.clean = None  # the window did not count this call: no next call may go out on its count
        if placed.match is not None:
            await self.recognizer.remember(placed.match, placed.cache)
            self._hint(placed.match)
        self.metrics.count("unmanaged", route)
        if self._unmanaged.peek(internal) is None:
            logger.warning(
                "%s: thread %s: its tools and system text alone cost %d tokens, at or over the %d the %d-token budget "
                "leaves them; forwarding its requests unmanaged until they fit (raise the budget, or declare fewer "
                "or shorter tools)",
                route,
                name,
                fixed.tokens,
                fixed.limit,
                self.config.budget,
            )
        self._unmanaged.put(internal, fixed.tokens)
        raise Unmanaged(name, fixed)

    def _nearest(self, scope: str, match: Match) -> ItemCache | None:
        """The item cache of the locally known candidate with the longest list (its prefix is likely ours)."""
        known = sorted((match.threads or {}).items(), key=lambda kv: kv[1][0], reverse=True)
        for name, _ in known:
            local = self.threads.local(internal_id(scope, name))
            if local is not None and local.items is not None:
                return local.items
        return None

    def _in_use(self, internal: str) -> bool:
        """A call on the thread is in flight here, or (while the process runs) its window is in memory."""
        if self._waiting.get(internal):
            return True
        return self.threads.busy(internal, memory=not self._closing)

    async def _orphaned(self, internal: str, name: str) -> None:
        """No index record leads to the thread any more (`Recognizer._unlinked`): its stored data is deleted, now
        or, while it is in use here, when it leaves memory (a client going on with it meanwhile lists it again)."""
        if self._in_use(internal):
            self._deferred.put(internal, name)
            return
        await self._delete(internal, name)

    def _left(self, internal: str) -> None:
        """A thread left this process's memory (`Threads._evict`): an orphan waiting for that is due now."""
        if self._deferred.peek(internal) is not None:
            self._due.append(internal)

    async def _collect(self) -> None:
        """Delete the orphans that left memory meanwhile, unless a head lists them again or they came back."""
        due, self._due = self._due, []
        for internal in due:
            name = self._deferred.pop(internal)
            if name is None or self._in_use(internal):
                continue
            try:
                linked = await self.recognizer.linked(internal)
            except Exception:
                # the call goes on; the data stays, for `windowkeeper store prune`
                logger.warning("thread %s: could not read its index links (%s)", name, internal, exc_info=True)
                continue
            if not linked:
                await self._delete(internal, name)

    async def _delete(self, internal: str, name: str) -> None:
        try:
            await self.threads.delete(internal)
        except Exception:
            # the data stays; `windowkeeper store prune` finds it later
            logger.warning("thread %s: could not delete its stored data (%s)", name, internal, exc_info=True)
            return
        for key in [key for key in self._hints if self._hints.peek(key) == name]:
            self._hints.pop(key)
        logger.info(
            "thread %s: no recognition index record leads to it any more; its stored data (%s) is deleted",
            name,
            internal,
        )

    async def close(self) -> None:
        if self._pending:
            # windows still doing the bookkeeping of requests already answered: let them commit first
            for release in self._pending.values():
                release.set()
            await asyncio.wait(list(self._pending), timeout=PENDING_GRACE)
        self._closing = True
        try:
            await self.recognizer.save()
            # the orphans kept only because their windows were in memory: memory goes with the process
            self._due = [internal for internal in self._deferred]
            await self._collect()
        except Exception:
            # shutting down goes on: the next process then bounds only the records it touches itself
            logger.warning("could not leave the recognition index's records to the next process", exc_info=True)
        await self.threads.close()
