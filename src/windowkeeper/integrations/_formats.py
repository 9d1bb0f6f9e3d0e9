"""Reading a caller's provider-shaped list into `Message`s and writing an assembled prompt back in that shape.

`Window` takes whatever list a provider SDK (or LangChain) holds. A list in the wrong shape is the most common
mistake when wiring it in (Responses items handed to a Chat Completions window, Gemini contents to an Anthropic
one), and the converters alone would sometimes accept it silently (a Chat Completions reader keeps unknown keys).
So before converting, each item is checked for keys that belong to another provider's shape, and every error
names the index, the key, the shape expected and, when it can tell, the format the list looks like.
"""

from __future__ import annotations

import functools
import itertools
import logging
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, cast, get_args

from .._cache import LRUCache
from ..errors import FormatError
from ..llm.formats import from_responses_input
from ..llm.formats._common import plain
from ..llm.formats._source import WriteMemo
from ..llm.formats.anthropic import CacheBreakpoint
from ..llm.formats.registry import ProviderFormat, formats, get_format
from ..llm.formats.registry import guess_format as _guess
from ..messages import Message
from ..prompt import join_sections, scratchpad_section, summary_section, system_message, system_message_text
from ..prompt.sections import stable_id, system_flags

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage

    from ..llm.formats.wire import (
        AnthropicMessage,
        AnthropicSystem,
        GeminiContent,
        GeminiSystemInstruction,
        OpenAIChatMessage,
        ResponsesItem,
    )

logger = logging.getLogger(__name__)

_NOT_LISTS = (str, bytes, Mapping)
"""What looks like a sequence but is no list of messages (a class tuple built once, not a union per call)."""

WireMessages: TypeAlias = (
    "list[OpenAIChatMessage] | list[ResponsesItem] | list[AnthropicMessage] | list[GeminiContent] | list[BaseMessage]"
)
"""What `write_messages` returns for some format (which one is known at run time only)."""
WireSystem: TypeAlias = "AnthropicSystem | GeminiSystemInstruction | None"

WindowFormat = Literal["openai_chat", "openai_responses", "anthropic", "gemini", "langchain"]
"""The built-in formats (a format registered with ``register_format`` is accepted too, typed as ``str``)."""
WINDOW_FORMATS: tuple[WindowFormat, ...] = get_args(WindowFormat)


class _Titles(Mapping[str, str]):
    """Format name -> a registry attribute, looked up when asked (formats registered later are included)."""

    def __init__(self, attribute: str) -> None:
        self._attribute = attribute

    def __getitem__(self, name: str) -> str:
        return str(getattr(get_format(name), self._attribute))

    def __iter__(self) -> Iterator[str]:
        return iter(formats())

    def __len__(self) -> int:
        return len(formats())


NAMES: Mapping[str, str] = _Titles("title")
EXPECTED: Mapping[str, str] = _Titles("expected")


def check_format(fmt: object) -> WindowFormat:
    """``fmt`` when it names a registered format (a `ConfigurationError` naming the registered ones otherwise)."""
    return cast(WindowFormat, get_format(fmt).name)


def foreign_shape(fmt: WindowFormat, item: Any) -> tuple[str, str | None] | None:
    """``(key, guessed_format)`` when ``item`` carries a key that ``fmt``'s messages never have, else None."""
    return get_format(fmt).foreign(item)


def guess_format(item: Any) -> str | None:
    """The format ``item`` most likely belongs to, for error hints (None when nothing is distinctive)."""
    return _guess(item)


def _shape_error(fmt: WindowFormat, index: int, key: str, guess: str | None, detail: str) -> FormatError:
    # a guess of the window's own format says nothing: the item is that format's, damaged
    hint = (
        f"; it looks like {NAMES[guess]}: pass format={guess!r} if the list is in that shape"
        if guess and guess != fmt
        else ""
    )
    return FormatError(
        f"{detail}; Window(format={fmt!r}) expects {EXPECTED[fmt]}{hint}",
        index=index,
        key=key,
    )


@dataclass
class ReadCache:
    """What the previous read of a thread's list produced, so the next read converts only the new tail.

    ``items`` are the caller's items as last read (this cache's own list, grown in place) and ``marks`` the
    ``(item index, messages read before it)`` points a tail may start at, ascending. ``reused`` is how many
    leading messages the last read took from the read before it, and ``replaced`` the messages of that earlier
    read it re-read instead (a tail restarted before the previous end), so a caller can compare them.
    """

    items: list[Any] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)
    marks: list[tuple[int, int]] = field(default_factory=lambda: [(0, 0)])
    reused: int = 0
    replaced: list[Message] = field(default_factory=list)


def _safe_start(fmt: WindowFormat, items: Sequence[Any], index: int) -> bool:
    """Whether reading may start at ``items[index]`` without state from the items before it."""
    return get_format(fmt).safe_start(items, index)


BOUNDARY_ITEMS = 4
"""Items just before a mark that are always compared; before them the comparison steps back by doubling strides."""


def same_prefix(items: Sequence[Any], known: Sequence[Any], n: int) -> bool:
    """Whether ``items[:n]`` are still ``known[:n]``, judged at the boundary: the last `BOUNDARY_ITEMS` items, then
    log-spaced ones back to the first (O(log n) comparisons, identity first). An item replaced deep inside the
    history between two of those points goes unnoticed; rewriting history means starting the thread over."""
    if n > len(items) or n > len(known):
        return False
    i, step = n - 1, 1
    while i >= 0:
        mine, theirs = items[i], known[i]
        if mine is not theirs and mine != theirs:
            return False
        if n - 1 - i >= BOUNDARY_ITEMS:
            step *= 2
        i -= step
    return n == 0 or items[0] is known[0] or items[0] == known[0]


def read_messages_cached(fmt: WindowFormat, messages: Any, cache: ReadCache | None) -> tuple[list[Message], ReadCache]:
    """`read_messages` that re-reads only what is new since ``cache`` (the same result, ids included).

    The leading items read last time (recognized at the boundary, see `same_prefix`) are taken from the cache, up
    to the last point a read can restart from; the rest is read with the id chain continued. Work per call is
    proportional to what is new, not to the history: the cache is updated in place and the returned list is the
    cache's own (valid until the next read). Items must not be edited in place: replace an item to change history.
    """
    if cache is None or (fmt == "openai_responses" and isinstance(messages, str)):
        return _fresh(fmt, messages)
    _check_list(fmt, messages)
    chosen = 0
    for index in range(len(cache.marks) - 1, 0, -1):
        item_index = cache.marks[index][0]
        if (
            item_index <= len(messages)
            and _safe_start(fmt, messages, item_index)
            and same_prefix(messages, cache.items, item_index)
        ):
            chosen = index
            break
    if chosen == 0:
        return _fresh(fmt, messages)
    start, count = cache.marks[chosen]
    tail = list(messages[start:])
    read: list[Message] = []
    if tail:  # a call with nothing new (the same list again) reads nothing
        _check_shapes(fmt, tail, offset=start)
        previous = str(cache.messages[count - 1].message_id) if count else None
        read = _guarded(fmt, messages, lambda: _read_tail(fmt, tail, start, previous))
    cache.replaced = cache.messages[count:]
    del cache.messages[count:]
    cache.messages.extend(read)
    del cache.items[start:]
    cache.items.extend(tail)
    del cache.marks[chosen + 1 :]
    cache.marks.append((len(messages), len(cache.messages)))
    cache.reused = count
    return cache.messages, cache


def _fresh(fmt: WindowFormat, messages: Any) -> tuple[list[Message], ReadCache]:
    out = read_messages(fmt, messages)
    items = [messages] if isinstance(messages, str) else list(messages)
    return out, ReadCache(items=items, messages=out, marks=[(0, 0), (len(items), len(out))])


def _read_tail(fmt: WindowFormat, tail: list[Any], offset: int, previous: str | None) -> list[Message]:
    return get_format(fmt).read(tail, offset=offset, previous=previous)


def _check_list(fmt: WindowFormat, messages: Any) -> None:
    if isinstance(messages, _NOT_LISTS) or not isinstance(messages, Sequence):
        raise FormatError(
            f"Window(format={fmt!r}) takes the whole conversation as a list of {EXPECTED[fmt]}, "
            f"got {type(messages).__name__}",
        )


def _check_shapes(fmt: WindowFormat, items: Sequence[Any], *, offset: int = 0) -> None:
    for i, item in enumerate(items, start=offset):
        foreign = foreign_shape(fmt, item)
        if foreign is not None:
            key, guess = foreign
            raise _shape_error(
                fmt,
                i,
                key,
                guess,
                f"this {type(plain(item)).__name__} has {key!r}, which {NAMES[fmt]} messages never carry",
            )


def read_messages(fmt: WindowFormat, messages: Any) -> list[Message]:
    """The caller's list as our messages (deterministic ids); never mutates ``messages``."""
    if fmt == "openai_responses" and isinstance(messages, str):
        return from_responses_input(messages, keep_source=False)
    _check_list(fmt, messages)
    _check_shapes(fmt, messages)
    return _guarded(fmt, messages, lambda: _read_all(fmt, list(messages)))


def _read_all(fmt: WindowFormat, items: list[Any]) -> list[Message]:
    return get_format(fmt).read(items)


def _guarded(fmt: WindowFormat, messages: Sequence[Any], read: Callable[[], list[Message]]) -> list[Message]:
    """``read()``, its `FormatError` completed with the shape this window expects and the format it looks like."""
    try:
        return read()
    except FormatError as exc:
        index = exc.index
        guess = guess_format(messages[index]) if index is not None and 0 <= index < len(messages) else None
        detail = str(exc)
        prefix = ", ".join(
            part
            for part in (f"message {index}" if index is not None else None, f"key {exc.key!r}" if exc.key else None)
            if part
        )
        if prefix and detail.startswith(prefix + ": "):
            detail = detail[len(prefix) + 2 :]
        error = _shape_error(fmt, index if index is not None else 0, exc.key or "", guess, detail)
        error.index, error.key = exc.index, exc.key
        raise error from None


_SYSTEMS: LRUCache[int, tuple[Any, Any, str, str | None]] = LRUCache(256)
"""``system=`` objects read last (by identity, held so the id stays theirs, with their ``content`` object and the
format): a host hands the same SystemMessage to every model call, and reading one converts it to a message."""


def system_text(fmt: WindowFormat, system: Any) -> str | None:
    """The ``system=`` argument as one text: a string, Anthropic text blocks, a Gemini content, a SystemMessage."""
    if system is None or isinstance(system, str | list | dict):
        return get_format(fmt).read_system(system)  # plain values may be edited in place: read every time
    content = getattr(system, "content", None)
    known = _SYSTEMS.get(id(system))
    if known is not None and known[0] is system and known[1] is content and known[2] == fmt:
        return known[3]
    text = get_format(fmt).read_system(system)
    _SYSTEMS.put(id(system), (system, content, fmt, text))
    return text


def write_messages(
    fmt: WindowFormat,
    system: str | None,
    messages: Sequence[Message],
    *,
    cache_breakpoints: Sequence[CacheBreakpoint] | None = None,
    cache_reserved: int = 0,
    developer: bool = False,
    system_messages: Sequence[Message] | None = None,
    system_anchors: Mapping[int, Message | None] | None = None,
    system_source: Any = None,
    memo: WriteMemo | None = None,
) -> tuple[WireMessages, WireSystem]:
    """``(messages, system)`` in ``fmt``: system in its native place (in the list for Chat Completions/LangChain);
    every message unchanged since it was read is the caller's own item, the rest written anew.

    ``system_messages`` (see `system_lead`) are the messages ``system`` was joined from: a format that carries
    system text as messages of its list (Chat Completions) writes them one by one, so the caller's own system and
    developer messages leave as they came, those said mid-conversation where they were (``system_anchors``, see
    `lead_anchors`). ``system_source`` is the caller's ``system=`` value as given: a format
    whose system slot holds blocks or parts (Anthropic, Gemini) passes it through, the summary after it.
    ``cache_reserved`` counts the cache markers the request's tools carry (Anthropic allows four in all). ``memo``
    (one per conversation) lets a format that writes one item per
    message skip the messages it wrote the same way last time (see `WriteMemo`)."""
    out, out_system = get_format(fmt).write(
        system,
        messages,
        cache_breakpoints=cache_breakpoints,
        developer=developer,
        system_id=stable_id("system", system) if system else None,
        system_messages=system_messages,
        system_anchors=system_anchors,
        system_source=system_source,
        memo=memo,
        cache_reserved=cache_reserved,
    )
    return cast("WireMessages", out), cast("WireSystem", out_system)


def laid_out(
    fmt: WindowFormat,
    system: str | None,
    messages: Sequence[Message],
    *,
    system_messages: Sequence[Message] | None = None,
    system_anchors: Mapping[int, Message | None] | None = None,
) -> list[Message] | None:
    """The messages `write_messages` writes for these arguments, in order, each written alone, for a format that
    lays its list out so (LangChain; see `ProviderFormat.laid_out`), else None."""
    return get_format(fmt).laid_out(
        system,
        messages,
        {
            "system_id": stable_id("system", system) if system else None,
            "system_messages": system_messages,
            "system_anchors": system_anchors,
        },
    )


def system_lead(
    context: Sequence[Message],
    system: str | None,
    *,
    summary: str | None,
    scratchpad: str | None,
    made: Collection[str | int],
    developer: bool,
) -> list[Message] | None:
    """The system text ``system`` of a request on ``context`` as the messages it is joined from: the context's
    system messages in order (the caller's own, to be passed through unchanged), then the summary and scratchpad
    sections as one system message windowkeeper writes. Messages windowkeeper made (ids in ``made``, the
    ``system=`` prompt) and that last one take the developer role when the caller used it (``developer``).

    None when the context holds no system message of the caller's (nothing to pass through: the system zone is
    written as one text, as before), or when the pieces do not join to ``system`` (the one text every other format
    sends and the budget counts), so a writer falls back to that text rather than sending something else."""
    lead: list[Message] = []
    # the system messages found in C: this runs on every call over the whole view
    systems = itertools.compress(context, system_flags(context))
    for message in systems:
        if not system_message_text(message):
            continue  # assemble leaves empty system texts out of the zone
        lead.append(_as_developer(message) if developer and message.message_id in made else message)
    if all(m.message_id in made for m in lead):
        return None  # no system message of the caller's: the one joined text, as ever
    tail = join_sections([summary_section(summary), scratchpad_section(scratchpad)])
    if tail:
        lead.append(_as_developer(section_message(tail)) if developer else section_message(tail))
    if join_sections(system_message_text(m) for m in lead) != system:
        return None
    return lead


def lead_anchors(context: Sequence[Message], lead: Sequence[Message] | None) -> dict[int, Message | None] | None:
    """For each system message of ``lead`` said after the conversation began, the message of ``context`` that
    followed it (None: it came last), by ``id()`` of the system message: a writer that carries system text as
    messages puts it back there, so an instruction given at turn N does not read as given from the start. None
    when there is none."""
    if not lead:
        return None
    flags = system_flags(context)  # in C, as `system_lead` splits the view
    try:
        began_at = flags.index(False)
    except ValueError:
        return None
    if True not in flags[began_at:]:
        return None  # every system message leads: nothing said mid-conversation (the common case, no loop)
    wanted = {id(m) for m in lead}
    anchors: dict[int, Message | None] = {}
    waiting: list[int] = []  # lead messages said since the last message of the conversation
    for message in context[began_at:]:  # it opens with the conversation's first message
        if id(message) in wanted:
            waiting.append(id(message))
        elif waiting and message.role != "system":
            anchors.update(dict.fromkeys(waiting, message))
            waiting.clear()
    anchors.update(dict.fromkeys(waiting))
    return anchors or None


@functools.lru_cache(maxsize=256)
def section_message(text: str) -> Message:
    """`system_message` of ``text``, made once per text: the summary section of a thread is the same text for
    many calls, and the writer recognizes a message it wrote before by identity (see `WriteMemo`)."""
    return system_message(text)


def _as_developer(message: Message) -> Message:
    return message.model_copy(update={"metadata": {**message.metadata, "openai_role": "developer"}})


def write_plain(fmt: WindowFormat, messages: Sequence[Message]) -> list[Any]:
    """Messages in ``fmt`` without any system handling (for `Window.restore`)."""
    return get_format(fmt).write_plain(messages)


def format_object(fmt: WindowFormat) -> ProviderFormat:
    """The registry's object for ``fmt`` (read, write, system placement, shape checks, tool shape)."""
    return get_format(fmt)


__all__ = [
    "EXPECTED",
    "NAMES",
    "WINDOW_FORMATS",
    "WindowFormat",
    "check_format",
    "foreign_shape",
    "guess_format",
    "ReadCache",
    "read_messages",
    "read_messages_cached",
    "same_prefix",
    "laid_out",
    "lead_anchors",
    "system_lead",
    "system_text",
    "format_object",
    "write_messages",
    "write_plain",
]
