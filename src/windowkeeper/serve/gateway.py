"""The managing step of one request: which thread, what the manager makes of the list, what body goes upstream.

`Gateway.plan` never changes what the client sent unless the conversation needs it: under budget the upstream body
is the client's own bytes; over budget only the message list (and the system text, where the summary goes)
is replaced, with every item the manager left as it was put back as the client's original (`projection`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..storage import SessionStore
from .config import ServeConfig
from .identity import Match, Recognizer, explicit_thread, internal_id, scope_of, session_of
from .metrics import Metrics
from .projection import (
    PLAIN,
    ItemCache,
    dumps_body,
    item_key,
    project,
    restore_originals,
    system_value,
    with_fields,
)
from .protocols import Protocol
from .recall import declared, offer, tool_name
from .threads import Thread, Threads

logger = logging.getLogger(__name__)


class BadRequest(ValueError):
    """A request the gateway can tell is malformed: answered with 400 in the upstream's error shape."""


class ManagementError(Exception):
    """Managing a request failed inside the gateway (the request is then forwarded as the client sent it)."""

    def __init__(self, thread: str, cause: BaseException) -> None:
        super().__init__(f"thread {thread}: {type(cause).__name__}")
        self.thread = thread
        self.kind = type(cause).__name__


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


def system_text(value: Any) -> str | None:
    """The text of a system value: a string, or the text blocks of a list (other blocks are not text)."""
    if isinstance(value, str):
        return value or None
    if isinstance(value, list):
        parts = [b["text"] for b in value if isinstance(b, Mapping) and isinstance(b.get("text"), str)]
        return "\n\n".join(parts) or None
    return None


def check_items(protocol: Protocol, body: Mapping[str, Any]) -> list[Any]:
    """The client's list, or `BadRequest` naming what is wrong with it."""
    key = protocol.list_key
    if key not in body:
        raise BadRequest(f"'{key}' is required: the conversation as a list of {protocol.fmt} items")
    items = body[key]
    if not isinstance(items, list):
        raise BadRequest(f"'{key}' must be a list, got {type(items).__name__}")
    for index, item in enumerate(items):
        if not isinstance(item, dict):
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
    if item is None:
        return None
    content = item.get("content")
    return content if isinstance(content, str) else system_text(content)


def _added(original: str | None, managed: str | None) -> str | None:
    """What the manager added to the system text (the summary), or None when it is the client's own."""
    if (managed or None) == (original or None) or not managed:
        return None
    if original and original in managed:
        return managed.replace(original, "", 1).strip() or None
    return managed


class Gateway:
    """Threads, recognition and metrics for one process."""

    def __init__(self, config: ServeConfig, store: SessionStore) -> None:
        self.config = config
        self.threads = Threads(config, store)
        self.recognizer = Recognizer(store)
        self.metrics = Metrics()

    def _head(self, protocol: Protocol, items: list[Any], system: Any) -> str:
        plain_of = PLAIN[protocol.fmt]
        first = _leading_system(protocol, items)
        leading = [item_key(plain_of(i)) for i in items[:first]]
        sys_key = item_key(system_text(system)) if system is not None else ""
        return Recognizer.head_of("\x1f".join([sys_key, *leading]), item_key(plain_of(items[first])))

    async def plan(
        self, protocol: Protocol, headers: Mapping[str, str], body: dict[str, Any], items: list[Any], raw: bytes
    ) -> Plan:
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
            head = self._head(protocol, items, system)
            match = await self.recognizer.candidates(scope, session_of(headers, body), head)
            cache = project(protocol.fmt, items, self._nearest(scope, match))
            name = Recognizer.choose(match, cache).name
        try:
            return await self._manage(protocol, body, items, raw, scope, name, match, cache, system, tools)
        except BadRequest:
            raise
        except Exception as exc:
            raise ManagementError(name, exc) from exc

    async def _manage(
        self,
        protocol: Protocol,
        body: dict[str, Any],
        items: list[Any],
        raw: bytes,
        scope: str,
        name: str,
        match: Match | None,
        cache: ItemCache,
        system: Any,
        tools: list[Any] | None,
    ) -> Plan:
        internal = internal_id(scope, name)
        lead = _leading_system(protocol, items)
        text = system_text(system) if lead == 0 else "\n\n".join(filter(None, (_content_text(i) for i in items[:lead])))
        async with self.threads.lock(internal):
            recall = tool_name(protocol, body) if self.config.recall else None
            told = declared(protocol, tools, recall)
            thread, fit = await self.threads.fit(internal, protocol.fmt, cache.plains[lead:], text or None, told)
            thread.items = cache
            if match is not None:
                await self.recognizer.remember(match, cache)
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
            sent_system = system_value(system, fit.system, text)
            if sent_system is not system:
                unchanged = False
                changes[protocol.system_key] = sent_system
        before = after + (thread.removed or 0)
        recall = recall if not unchanged else None
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
        return Plan(protocol, out, out_json, thread, name, before, after, recall)

    def _nearest(self, scope: str, match: Match) -> ItemCache | None:
        """The item cache of the locally known candidate with the longest list (its prefix is likely ours)."""
        known = sorted((match.threads or {}).items(), key=lambda kv: kv[1][0], reverse=True)
        for name, _ in known:
            local = self.threads.local(internal_id(scope, name))
            if local is not None and local.items is not None:
                return local.items
        return None

    async def close(self) -> None:
        await self.threads.close()
