"""The provider formats, one object each, in one registry: what `Window`, the adapters and the CLI ask of a format.

A `ProviderFormat` owns everything windowkeeper knows about one provider's message shape: reading a caller's list
into `Message`\\ s (keeping each item as its source, see `_source`), writing messages back (passing unchanged
items through verbatim, writing new shapes only for what windowkeeper made or changed), where the system text
goes, which keys mark an item as this format's (to tell a caller that handed one format's list to another's
window), where a partial re-read may start, and the shape of a tool definition. The five built-in formats
register themselves from their own modules; a new format is one module defining a subclass plus one
`register_format` call, and every caller (``Window``, the adapters, ``guess_format``) picks it up.
"""

from __future__ import annotations

import importlib
import logging
import threading
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from ..._cache import LRUCache
from ...blocks import tool_output_text
from ...errors import ConfigurationError, FormatError
from ...messages import Message
from ._common import CleanSource, Source, plain, unknown_block
from ._source import (
    cut_from,
    keep_source,
    key_paths,
    original_items,
    own_parts_in,
    source_record,
    warn_lost,
    with_own_item_keys,
)
from .rules import RoundTripRules

logger = logging.getLogger(__name__)

_MAX_SOURCES = 4096
"""Sources whose lost fields (and whether they were reported) a format remembers."""

_BUILTIN_MODULES = ("openai_chat", "openai_responses", "anthropic", "gemini", "langchain")
"""The modules of the built-in formats, imported (and so registered) on the first lookup."""

_FORMATS: dict[str, ProviderFormat] = {}
_lock = threading.Lock()
_loaded = False
_sorted: dict[str, ProviderFormat] | None = None
_BUILTIN_CLASSES_FROM = frozenset(f"{__package__}.{module}" for module in _BUILTIN_MODULES)
_builtins_only = True
"""Whether every registered format is one of the built-in classes (see `builtins_only`)."""


def in_place(
    lead: Sequence[Message], messages: Sequence[Message], anchors: Mapping[int, Message | None] | None
) -> list[Message]:
    """``lead`` then ``messages``, except that a system message ``anchors`` ties to a message (by ``id()`` of the
    system message) goes right before that message when it is among ``messages`` (at the end when tied to None),
    where the caller said it; one whose message left the view stays in the lead."""
    if not anchors:
        return [*lead, *messages]
    present = {id(m) for m in messages}
    before: dict[int, list[Message]] = {}
    last: list[Message] = []
    front: list[Message] = []
    for message in lead:
        key = id(message)
        if key not in anchors:
            front.append(message)
            continue
        anchor = anchors[key]
        if anchor is None:
            last.append(message)
        elif id(anchor) in present:
            before.setdefault(id(anchor), []).append(message)
        else:
            front.append(message)
    out = front
    for message in messages:
        out.extend(before.get(id(message), ()))
        out.append(message)
    out.extend(last)
    return out


class ProviderFormat(ABC):
    """One provider's message format. Subclass it, set the class attributes, implement `read_items` and
    `write_messages`, and `register_format` an instance."""

    name: ClassVar[str]
    """The ``format=`` value (``"openai_chat"``)."""
    title: ClassVar[str]
    """How messages name the format (``"OpenAI Chat Completions"``)."""
    expected: ClassVar[str]
    """The shape this format's lists have, for error messages (an example item)."""
    priority: ClassVar[int] = 100
    """Where the format comes in `guess_format` and the shape checks (lower first): a format whose items could
    look like another's (LangChain messages dump to dicts with a ``type``) goes before it."""
    round_trip: ClassVar[RoundTripRules] = RoundTripRules()
    """What a round trip through this format keeps (``compare.canonical`` applies it in tests)."""
    system_in_list: ClassVar[bool] = False
    """Whether the system text is the first item of the list (Chat Completions, LangChain) rather than a separate
    request field (Responses ``instructions``, Anthropic ``system``, Gemini ``system_instruction``)."""

    parts_key: ClassVar[str | None] = None
    """The key under which one of this format's items holds its list of content parts (Chat and Responses
    ``content``), for `refill`; None when a format does not refill."""

    def __init__(self) -> None:
        # bounded (a long-running process reads many sources); read with `peek`, so the oldest entry goes first
        self._lost: LRUCache[str, frozenset[str]] = LRUCache(_MAX_SOURCES)
        self._reported: LRUCache[str, bool] = LRUCache(_MAX_SOURCES)
        self._lost_lock = threading.Lock()

    # -- reading ------------------------------------------------------------------------------------------------

    @abstractmethod
    def read_items(
        self, items: Sequence[Any], *, offset: int, previous: str | None, sources: list[Source] | None
    ) -> list[Message]:
        """Items ``offset``, ``offset + 1``, ... of a list as messages (``previous``: the id of the message read
        before them), appending ``(item, messages)`` to ``sources`` for each group read when it is given."""

    def read(self, items: Sequence[Any], *, offset: int = 0, previous: str | None = None) -> list[Message]:
        """`read_items` with every message's source kept (`Message.raw`), for lossless pass-through."""
        sources: list[Source] = []
        messages = self.read_items(items, offset=offset, previous=previous, sources=sources)
        self.keep_all(sources)
        return messages

    def keep_all(self, sources: Sequence[Source]) -> None:
        """`keep` each ``(item, messages)`` group a reader collected: the one way a source is recorded, for `read`
        and for the public ``from_X`` converters alike, so both pass the same items through."""
        plain_keep = type(self).keep is ProviderFormat.keep
        for entry in sources:
            source, group = entry
            if plain_keep and type(entry) is CleanSource:
                # an item the id chain found to be plain ASCII JSON: kept as it is, without a cleaning walk
                keep_source(self.name, group, [source], clean=True)
            else:
                self.keep(source, group)

    def keep(self, source: Any, messages: Sequence[Message]) -> None:
        """Record ``source`` on the ``messages`` read from it (override to record which blocks each part holds)."""
        keep_source(self.name, messages, source if isinstance(source, list) else [source])

    def safe_start(self, items: Sequence[Any], index: int) -> bool:
        """Whether reading may start at ``items[index]`` without state from the items before it."""
        return True

    def read_system(self, system: Any) -> str | None:
        """The ``system=`` value a caller passes beside the list (the provider's own spelling) as one text."""
        if system is None:
            return None
        if isinstance(system, str):
            return system or None
        raise FormatError(
            f"system= must be a string for format {self.name!r}, got {type(system).__name__}: pass its text, or "
            "put it in the list as a system (or developer) message, where it passes through as it is",
            key="system",
        )

    # -- writing ------------------------------------------------------------------------------------------------

    @abstractmethod
    def write_messages(self, messages: Sequence[Message], *, options: Mapping[str, Any]) -> list[Any]:
        """``messages`` in this format, unchanged messages as the items they were read from."""

    def write(self, system: str | None, messages: Sequence[Message], **options: Any) -> tuple[list[Any], Any]:
        """``(items, system value)``: the system text in this format's place, the messages after it.

        Option ``system_messages``: the messages ``system`` was joined from, for a format that writes system text
        as messages of its list and can so pass the caller's own through unchanged (Chat Completions, LangChain:
        see `lead_written`)."""
        return self.write_messages(messages, options=options), system

    def system_tail(self, source: Any, system: str | None) -> str | None:
        """What windowkeeper adds after the caller's own system value in the joined system text ``system``.

        ``source`` is the value the caller passed as ``system=`` (write option ``system_source``). The tail is what
        follows the caller's text, the summary and scratchpad sections ("" when there are none); None when
        ``system`` does not open with the caller's text. A writer that passes the caller's value through (its
        blocks, their ``cache_control``) puts the tail after it. Only for formats whose lists hold no system
        messages (Anthropic, Gemini): in the others, their texts would follow the caller's in ``system`` too."""
        if source is None or not system:
            return None
        own = self.read_system(source)
        if not own:
            return None
        if system == own:
            return ""
        # joined as the prompt layer joins the system zone's sections (``prompt.sections.SECTION_SEPARATOR``)
        head = own + "\n\n"
        return system[len(head) :] if system.startswith(head) else None

    def lead_written(self, messages: Sequence[Message], options: Mapping[str, Any]) -> list[Any] | None:
        """For a format whose list carries the system text as messages: the system zone written as the messages it
        was joined from (option ``system_messages``), then ``messages``. The caller's unchanged system (and
        developer) messages leave as the items they came as (one said mid-conversation where it was: option
        ``system_anchors``, see `in_place`), and what windowkeeper made (the summary) is written after the leading
        ones. None when there is no such lead, or pass-through is off: the caller writes one system text."""
        lead = options.get("system_messages")
        if lead is None or not options.get("passthrough", True):
            return None
        anchors = options.get("system_anchors")
        laid = in_place(lead, messages, anchors)
        memo = options.get("memo")
        if memo is not None and not anchors:
            memo.composed(laid, lead, messages)  # ``lead`` then ``messages``: the memo may know their parts
        return self.write_messages(laid, options=options)

    def laid_out(
        self, system: str | None, messages: Sequence[Message], options: Mapping[str, Any]
    ) -> list[Message] | None:
        """For a format that writes each message as items of its own (none depending on its neighbours), with the
        system zone as messages of the list: the messages `write` writes, in order (``write``'s output is theirs,
        each written alone, one after the other), so that an adapter holding the host's own objects for most of
        them writes only the others. None for a format that lays out otherwise (the default)."""
        return None

    def refill(self, message: Message, written: list[Any]) -> list[Any]:
        """``written`` (the item written anew for ``message``, which changed since it was read in this format) with
        the caller's own part wherever a content block is as it was read: a turn cut to fit keeps its image's
        ``detail``, its file's name, every key of the parts it did not cut. Only when the parts and blocks pair
        one to one (else ``written`` as it is)."""
        key = self.parts_key
        record = source_record(message)
        if key is None or record is None or record.get("format") != self.name or record.get("parts") != 1:
            return written
        items = record.get("items")
        if len(written) != 1 or not isinstance(items, list) or len(items) != 1:
            return written
        if message.role == "tool" and isinstance(items[0], Mapping) and isinstance(written[0], Mapping):
            output = self.output_key(items[0])
            if output is not None:
                return [self._refill_output(message, written[0], items[0], output)]
        theirs = items[0].get(key) if isinstance(items[0], Mapping) else None
        ours = written[0].get(key) if isinstance(written[0], Mapping) else None
        n = len(message.content)
        if not (isinstance(theirs, list) and isinstance(ours, list) and len(theirs) == len(ours) == n):
            return written
        try:
            again = self.read_items(items, offset=0, previous=None, sources=None)
        except FormatError:
            return written
        if len(again) != 1 or len(again[0].content) != n:
            return written
        pairs = zip(theirs, ours, message.content, again[0].content, strict=True)
        item = {**written[0], key: [own if block == read else new for own, new, block, read in pairs]}
        modelled = self.modelled_keys(items[0])
        if not any(k not in item and k not in modelled for k in items[0]):
            return [item]
        # the caller's keys the reader does not model (a vendor key, a Responses message's id and status), in the
        # caller's order: the item changed in its parts only
        out = {k: item.get(k, v) for k, v in items[0].items() if k in item or k not in modelled}
        out.update((k, v) for k, v in item.items() if k not in out)
        return [out]

    def modelled_keys(self, item: Mapping[str, Any]) -> frozenset[str]:
        """The keys of the caller's ``item`` that its reader makes the message from (what is written anew from
        the message); `refill` gives any other key of the caller's back to an item written anew for a change of
        its parts."""
        return frozenset({"role", self.parts_key or "content"})

    def output_key(self, item: Mapping[str, Any]) -> str | None:
        """Where the caller's tool output ``item`` holds its text and parts (Chat ``content``, Responses
        ``output``), for `refill`; None for an item that is no tool output whose text a cut may shorten."""
        return None

    def output_text(self, item: Mapping[str, Any], key: str) -> str | None:
        """The text the reader reads from the caller's tool output ``item`` (its output under ``key``), when that can
        be told without reading the item (None: read it to know). A reader that takes a string output as it is
        (the boundary rule applied, `clean_text`) gives it here; `_refill_output` compares it first."""
        return None

    output_parts: ClassVar[frozenset[str]] = frozenset()
    """The part types of a tool output the reader models; it reads a part of any other type as the text
    `unknown_block` writes for it."""

    def _refill_output(
        self, message: Message, written: Mapping[str, Any], client: Mapping[str, Any], key: str
    ) -> Mapping[str, Any]:
        """A tool output the manager cut to fit, written anew (``written``), with what the cut did not change as the
        caller sent it (``client``): every key of the item, and each part the reader does not model in its own
        shape instead of the text it was read as. Any other change (a pointer standing for a cleared result) is
        windowkeeper's own item, written as it is."""
        now = [tool_output_text(b.output) for b in message.tool_result_blocks()]
        if len(now) != 1:
            return written
        # a pointer standing for a cleared result (most outputs written anew) is told from a cut without reading the
        # caller's item again, when its text can be had so (a re-read of a ~1,200-character result cost ~20 us)
        text = self.output_text(client, key)
        if text is not None and not cut_from(now[0], text):
            return written
        try:
            again = self.read_items([client], offset=0, previous=None, sources=None)
        except FormatError:
            return written
        own = [tool_output_text(b.output) for m in again for b in m.tool_result_blocks()]
        if len(own) != 1 or not cut_from(now[0], own[0]):
            return written
        item = with_own_item_keys(written, client)
        call = client.get("tool_call_id", client.get("call_id"))
        item[key] = own_parts_in(
            item.get(key), client.get(key), self.output_parts, _stand_in, what=f"the output of tool call {call!r}"
        )
        return item

    def write_plain(self, messages: Sequence[Message]) -> list[Any]:
        """Messages in this format with no system handling (`Window.restore`)."""
        return self.write_messages(messages, options={})

    def lost_fields(self, message: Message) -> frozenset[str]:
        """Key paths of the items ``message`` was read from that a new shape written for it cannot carry.

        Worked out once per source (read the items again, write them anew without pass-through, compare key
        paths) and remembered for the 4,096 sources seen last: only changed messages with a source ask.
        """
        record = source_record(message)
        if record is None:
            return frozenset()
        fmt = get_format(str(record.get("format")))
        group = f"{record.get('format')}:{record.get('group')}:{record.get('part')}"
        with self._lost_lock:
            known = self._lost.peek(group)
        if known is not None:
            return known
        items = original_items(message, fmt.name)
        if not items and record.get("part"):
            return frozenset()
        lost = fmt.fields_lost(items, record)
        with self._lost_lock:
            self._lost.put(group, lost)
        return lost

    def fields_lost(self, items: Sequence[Any], record: Mapping[str, Any]) -> frozenset[str]:
        """What of ``items`` (read from this format) a fresh write in this format leaves out."""
        try:
            read = self.read_items(items, offset=0, previous=None, sources=None)
            fresh = self.write_messages(read, options={"passthrough": False})
        except (FormatError, ValueError, TypeError):
            return frozenset()
        before: set[str] = set()
        for item in items:
            before |= key_paths(item)
        after: set[str] = set()
        for item in fresh:
            after |= key_paths(item)
        return frozenset(before - after)

    def report(self, message: Message, target: str) -> None:
        """Say what ``message`` (with a source) loses when written anew in ``target``: a warning naming the fields
        when that is another format (a conversion), a debug line when windowkeeper changed it in its own format
        (a pointer replacing a tool result drops what the result carried), once per source either way."""
        record = source_record(message)
        if record is None:
            return
        origin = str(record.get("format"))
        if origin == target and not logger.isEnabledFor(logging.DEBUG):
            return  # only a debug line would say it: the lost fields are not worked out for nobody
        key = f"{origin}:{record.get('group')}:{record.get('part')}:{target}"
        with self._lost_lock:
            if key in self._reported:
                return
            self._reported.put(key, True)
        lost = get_format(origin).lost_fields(message)
        if origin != target:
            warn_lost(f"message {message.message_id!r} read from {origin} and written in {target}", lost)
        elif lost:
            logger.debug("message %r changed and was written anew: %s left out", message.message_id, sorted(lost))

    # -- shape checks -------------------------------------------------------------------------------------------

    def distinctive(self, item: Any) -> str | None:
        """The key (path) that marks ``item`` as this format's and no other's, or None."""
        return None

    def tolerates(self, item: Any, key: str) -> bool:
        """Whether this format's items may carry ``key`` although another format claims it."""
        return False

    def foreign(self, item: Any) -> tuple[str, str | None] | None:
        """``(key, guessed format)`` when ``item`` carries a key this format's items never have, else None."""
        for other in _registered():
            if other is self:
                continue
            key = other.distinctive(item)
            if key is not None and not self.tolerates(item, key):
                return key, other.name
        return None

    # -- tools --------------------------------------------------------------------------------------------------

    @abstractmethod
    def tool(self, name: str, description: str, parameters: Mapping[str, Any]) -> Any:
        """A tool definition in this format's own shape (what the request's ``tools`` take)."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"


def _stand_in(part: Mapping[str, Any]) -> str:
    """The text a reader reads a part of a type it does not model as (`unknown_block`)."""
    return unknown_block(str(part.get("type")), part).text


def register_format(fmt: ProviderFormat, *, replace: bool = False) -> ProviderFormat:
    """Make ``fmt`` available as ``format=fmt.name`` everywhere (``replace`` to override a registered one)."""
    if not isinstance(fmt, ProviderFormat):
        raise ConfigurationError(f"register_format takes a ProviderFormat instance, got {type(fmt).__name__}")
    with _lock:
        if fmt.name in _FORMATS and not replace and _FORMATS[fmt.name] is not fmt:
            raise ConfigurationError(f"a format named {fmt.name!r} is registered already; pass replace=True")
        global _sorted, _builtins_only
        _FORMATS[fmt.name] = fmt
        _sorted = None
        _builtins_only = all(type(f).__module__ in _BUILTIN_CLASSES_FROM for f in _FORMATS.values())
    return fmt


def builtins_only() -> bool:
    """Whether the registry holds only the built-in formats, whose shape checks a format may then answer for in
    one test (`ProviderFormat.foreign`, asked for every item read) instead of asking each of them."""
    _load_builtins()
    return _builtins_only


def _load_builtins() -> None:
    global _loaded
    if _loaded:
        return
    for module in _BUILTIN_MODULES:
        importlib.import_module(f"{__package__}.{module}")
    _loaded = True


def formats() -> dict[str, ProviderFormat]:
    """Every registered format by name, built-ins first (in registration order)."""
    _load_builtins()
    with _lock:
        return dict(_ordered())


def _ordered() -> dict[str, ProviderFormat]:
    """The registry sorted by priority, sorted again only after a registration (the shape checks ask per item).
    Call with ``_lock`` held."""
    global _sorted
    if _sorted is None:
        _sorted = dict(sorted(_FORMATS.items(), key=lambda kv: kv[1].priority))
    return _sorted


def _registered() -> tuple[ProviderFormat, ...]:
    """The registered formats in priority order, without copying the registry (for per-item checks)."""
    _load_builtins()
    with _lock:
        return tuple(_ordered().values())


def get_format(name: object) -> ProviderFormat:
    """The format registered as ``name``; a `ConfigurationError` naming the registered ones otherwise."""
    _load_builtins()
    with _lock:
        fmt = _ordered().get(name) if isinstance(name, str) else None
    if fmt is not None:
        return fmt
    registered = formats()
    fmt = registered.get(name) if isinstance(name, str) else None
    if fmt is None:
        order = {n: k for k, n in enumerate(_BUILTIN_MODULES)}
        names = sorted(registered, key=lambda n: order.get(n, len(order)))
        raise ConfigurationError(f"format={name!r} is not supported; use one of {', '.join(map(repr, names))}")
    return fmt


def guess_format(item: Any) -> str | None:
    """The format ``item`` most likely belongs to (for error hints; None when nothing is distinctive)."""
    for fmt in formats().values():
        if fmt.distinctive(item) is not None:
            return fmt.name
    return None


def convert(items: Sequence[Any], source: str, target: str) -> list[Any]:
    """A list in format ``source`` as format ``target``, warning (naming the fields) for what the target loses."""
    read = get_format(source).read(items)
    return get_format(target).write_plain(read)


def content_part_types(content: Any) -> list[tuple[int, str]]:
    """``(position, type)`` of the typed parts of a content list (for the formats' `distinctive` checks)."""
    if not isinstance(content, list):
        return []
    out = []
    for j, part in enumerate(content):
        p = plain(part)
        if isinstance(p, Mapping) and isinstance(p.get("type"), str):
            out.append((j, p["type"]))
    return out


__all__ = [
    "ProviderFormat",
    "content_part_types",
    "convert",
    "formats",
    "get_format",
    "guess_format",
    "register_format",
]
