"""Reversible body replacements for messages in a view: cleared tool results and replies, cut oversized bodies.

A budget manager shrinks a message without removing it: an old tool result becomes a one-line pointer that
says which call produced it and how big it was, an old long assistant reply becomes a pointer holding its first
sentence, the heads of the items it listed and its size, and a message too large for the whole budget is cut in
the middle with a visible marker. Either way the replacement keeps the message id, the role and every tool call
id, so the view stays structurally valid, and the original is kept in an `OffloadStore` so it can be put back
byte-identical (for a restore tool, an audit, or a bigger model).

The store is a cache bounded by size, not an archive: the archive is the message log a checkpointer keeps (every
message once, as first produced). Each replacement records the fingerprint of its original, so after an eviction
or a restart `OffloadStore.restore_all` finds the original in a log handed to it and checks it is the same one.
"""

from __future__ import annotations

import itertools
import json
import logging
import operator
import re
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from json.encoder import encode_basestring, encode_basestring_ascii
from types import EllipsisType
from typing import Any, Literal

from .._cache import SizedCache
from .._cut import Cut, cut_to_tokens
from ..blocks import (
    UNKNOWN_PREFIX,
    ContentBlock,
    MediaRef,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    make_block,
    tool_output_text,
    unknown_kind,
)
from ..messages import Message, kept_whole
from ..tokenizing.pieces import PieceCounts, piece_counts
from ..tokens import CachingCounter, TokenCounter

logger = logging.getLogger(__name__)

OFFLOAD_KEY = "windowkeeper_offload"
"""Metadata key marking a replaced body; its value says how (``kind``) and how big the original was."""

OffloadKind = Literal["cleared", "truncated"]

_ARGS_PREVIEW_CHARS = 200
_FIRST_LINE_CHARS = 160
_FIRST_LINE_SCAN = 4096
_SENTENCE_END = re.compile(r"(?<=[.!?:])\s")
_MIN_SENTENCE_CHARS = 24
_REPLY_HEAD_CHARS = 100
_OUTLINE_SHARE = 8
"""A reply pointer's outline holds at most this fraction (1/8) of the reply's characters."""
_ITEM_HEAD_CHARS = 48
_LIST_ITEM = re.compile(r"^\s*(?:[-*\u2022]|\d{1,3}[.)])\s+(.+)$")
_BOLD_LEAD = re.compile(r"^\*\*(.+?)\*\*|^__(.+?)__")
_ITEM_HEAD_END = re.compile(r":\s|\s[-\u2013\u2014]\s|(?<=[.!?])\s")
TRUNCATE_CUT = Cut(marker="\n… [truncated {omitted} tokens] …\n", fallback="… [truncated {omitted} tokens] …")
"""How a body too large for the whole budget is cut: the marker says how many tokens were left out."""
RESTORE_TOOL = "recall"
"""Name of the tool pointer texts tell the model to call (`windowkeeper.tools.recall_tool`)."""
DEFAULT_OFFLOAD_CACHE_BYTES = 8 * 1024 * 1024
"""Default bound of the in-process cache of originals (estimated bytes); older originals come from the log."""
_MESSAGE_BYTES = 600
"""Rough fixed cost of one cached message object (the model, its lists and dicts), added to its text size."""
_JSON = json.JSONEncoder(ensure_ascii=False)
_SORTED_JSON = json.JSONEncoder(ensure_ascii=False, sort_keys=True, default=str)
_LOOSE_JSON = json.JSONEncoder(ensure_ascii=False, default=str)
"""Encoders built once (``json.dumps`` with options builds one per call; the output is the same)."""
_MAKE_C_ENCODER: Callable[..., Callable[[Any, int], Any]] | None = getattr(json.encoder, "c_make_encoder", None)
_SORTED_JSON_CHUNKS = (
    _MAKE_C_ENCODER(None, str, encode_basestring, None, ": ", ", ", True, False, True) if _MAKE_C_ENCODER else None
)
"""`_SORTED_JSON`'s C encoder made once, without the cycle check: ``JSONEncoder.encode`` builds one per call (with
a fresh dict of the containers it is in), which was three quarters of the ~4.4 us a cleared result's call
signature cost. Same arguments as ``JSONEncoder.iterencode`` passes for ``_SORTED_JSON`` (None: no C encoder in
this Python; the encoder object is used)."""
_JSON_CONTAINERS = (dict, list)
"""A class tuple built once: ``dict | list`` written in a loop makes a union object on every test."""


def offload_info(message: Message) -> dict[str, Any] | None:
    """The replacement record of ``message`` (kind, tokens before/after), or None for an untouched message."""
    info = message.metadata.get(OFFLOAD_KEY)
    return info if isinstance(info, dict) else None


def is_offloaded(message: Message) -> bool:
    return offload_info(message) is not None


def offloaded(messages: Sequence[Message]) -> list[Message]:
    """The pointers among ``messages``, in order: `is_offloaded` of each computed in C (`map` of attribute,
    ``get`` and ``isinstance``), for the per-call passes over a whole view (a Python call per message was most of
    their cost)."""
    found = map(isinstance, map(_OFFLOAD_OF, map(_METADATA, messages)), itertools.repeat(dict))
    return list(itertools.compress(messages, found))


_METADATA = operator.attrgetter("metadata")
_OFFLOAD_OF = operator.methodcaller("get", OFFLOAD_KEY)


def _first_line(text: str) -> str:
    """The first non-blank line of ``text``, stripped and clipped to `_FIRST_LINE_CHARS`.

    A tool output can be megabytes; splitting all of it into lines to read the first one allocated every line, so
    only a head is split when the answer is in its complete lines (the same lines a full split gives).
    """
    head = text[:_FIRST_LINE_SCAN]
    lines = head.splitlines()
    cut = len(head) < len(text)
    if cut:
        lines.pop()  # possibly cut short: judged from the whole text when no earlier line is kept
    found = _first_nonblank(lines)
    if found is None and cut:
        found = _first_nonblank(text.splitlines())
    return found or ""


def _first_nonblank(lines: Iterable[str]) -> str | None:
    for line in lines:
        stripped = line.strip()
        if stripped:
            return stripped if len(stripped) <= _FIRST_LINE_CHARS else stripped[: _FIRST_LINE_CHARS - 1] + "…"
    return None


def _call_signature(name: str | None, call: ToolCallBlock | None) -> str:
    shown = name or (call.name if call else None) or "tool"
    if call is None or not call.args:
        return f"{shown}()"
    args = _sorted_json(call.args)
    if len(args) > _ARGS_PREVIEW_CHARS:
        args = args[: _ARGS_PREVIEW_CHARS - 1] + "…"
    return f"{shown}({args})"


def _sorted_json(value: dict[str, Any]) -> str:
    """``_SORTED_JSON.encode(value)``, through the encoder made once when the C one exists.

    Without the cycle check a self-containing value recurses until Python's limit; that error sends the value to
    the encoder object, which raises what it always raised for it (a ValueError naming the circular reference).
    """
    if _SORTED_JSON_CHUNKS is None:
        return _SORTED_JSON.encode(value)
    try:
        return "".join(_SORTED_JSON_CHUNKS(value, 0))
    except RecursionError:
        return _SORTED_JSON.encode(value)


def pointer_text(result: ToolResultBlock, call: ToolCallBlock | None) -> str:
    """The stand-in a model reads instead of a cleared tool output.

    It names the call and its arguments (so the model can re-run it), gives the size and first line (so the
    model can tell whether it needs the output again) and says how to get the output back: the recall tool
    (`windowkeeper.tools.recall_tool`) restores it by the call id.
    """
    return "".join(_pointer_pieces(result, call))


def _pointer_pieces(result: ToolResultBlock, call: ToolCallBlock | None) -> list[str]:
    """`pointer_text` in parts that meet at pre-token boundaries of every encoding in `PIECEWISE_ENCODINGS`, so its
    count is the sum of theirs (`PieceCounts.total`). Each seam is safe whatever the parts hold:

    - after ``context:`` and ``line:``: punctuation before a space, which no pre-token crosses (a run of
      punctuation takes only line breaks and ``/`` after it);
    - after the signature and the id part (each always ends in ``)``) and the quoted first line (it ends in
      ``".``): the same;
    - after ``returned``, ``in``, ``lines`` and the digits of a number: a letter or digit run ends where a space
      starts, and the next part's space opens its own pre-token (a space before a letter joins that letter);
    - after ``pointer_id``: a letter run ends at the ``=`` that opens the next part.

    The parts that vary are first in their own pre-tokens and last before a safe seam, so each is split alone as
    it is in the whole text (tests check the sums against the real encoders with generated calls and outputs).
    """
    output = result.output
    text = output if type(output) is str else tool_output_text(output)
    lines = text.count("\n") + 1 if text else 0
    call_id = result.call_id
    # the JSON of a string straight from the encoders' C functions (what ``json.dumps`` and ``_JSON.encode`` of a
    # str return); a pointer is made for every cleared result
    quoted_id = _quote_ascii(call_id) if type(call_id) is str else json.dumps(call_id)
    return [
        "[tool result cleared from context:",
        " " + _call_signature(result.name, call),
        " returned",
        f" {len(text)}",
        " chars in",
        f" {lines}",
        " lines; first line:",
        f" {_quote(_first_line(text))}.",
        _POINTER_RESTORE,
        f"={quoted_id})",
        _POINTER_END,
    ]


_POINTER_RESTORE = f" The full output is kept: restore it with {RESTORE_TOOL}(pointer_id"
_POINTER_END = " or re-run the call.]"
_quote = encode_basestring
_quote_ascii = encode_basestring_ascii


def clear_tool_results(message: Message, calls: Mapping[str, ToolCallBlock], *, tokens_before: int) -> Message:
    """``message`` with every tool result replaced by a pointer (same id, role, call ids, names and status).

    Other blocks a tool message may carry (images, text) are folded into the pointer's note; they come back
    with `OffloadStore.restore`. A message its format marks `kept_whole` (a computer-use screenshot) comes back
    as it is: its item cannot hold a pointer, so clearing it gains nothing and only dropping its unit frees it.
    """
    return _clear_tool_results(message, calls, tokens_before)[0]


def clear_tool_results_counted(
    message: Message,
    calls: Mapping[str, ToolCallBlock],
    *,
    tokens_before: int,
    counter: TokenCounter,
    count: Callable[[Message], int],
    pieces: PieceCounts | EllipsisType | None = ...,
) -> tuple[Message, int]:
    """`clear_tool_results` and the replacement's count (``count`` of it, the counter's `count_message`).

    A budget manager prices every pointer it makes; for a counter `pointer_counts` finds exact, the count is summed
    from the pointer's parts (`_pointer_pieces`), whose fixed words and recurring values are memoized, instead of
    tokenizing the whole note: a pointer's template is about a third of its tokens, and calls and first lines
    recur in agent sessions. ``pieces``, when given, is `pointer_counts` of ``counter`` (looked up once by a caller
    that clears many results).
    """
    replacement, notes = _clear_tool_results(message, calls, tokens_before)
    if not notes or message.reasoning or message.tools_calls:
        return replacement, count(replacement)
    if pieces is ...:
        pieces = pointer_counts(counter)
    if pieces is None:
        return replacement, count(replacement)
    assert isinstance(counter, CachingCounter)  # `pointer_counts` found it one
    # the id part (the next to last) is the call's own: counted, not memoized
    total = sum(pieces.total_with(parts, -2) for parts in notes) if len(notes) > 1 else pieces.total_with(notes[0], -2)
    return replacement, total + counter.message_overhead * len(notes)


def _clear_tool_results(
    message: Message, calls: Mapping[str, ToolCallBlock], tokens_before: int
) -> tuple[Message, list[list[str]]]:
    """`clear_tool_results` and the parts of each note (none when the message comes back as it is)."""
    if kept_whole(message):
        return message, []
    results = message.tool_result_blocks()
    extra = len(message.content) - len(results)
    blocks: list[ContentBlock] = []
    notes: list[list[str]] = []
    for result in results:
        call = calls.get(result.call_id)
        parts = _pointer_pieces(result, call)
        if extra:
            # the last part ends the note, so changing it moves no seam
            parts[-1] = parts[-1][:-1] + f" ({extra} non-text block(s) of this message were cleared too.)]"
            extra = 0
        notes.append(parts)
        # `make_block`: one is made per cleared result, and the constructor's validation cost as much as the note
        name = result.name or (call.name if call else None)
        blocks.append(
            make_block("tool_result", call_id=result.call_id, output="".join(parts), status=result.status, name=name)
        )
    return _replaced(message, blocks, "cleared", tokens_before), notes


def pointer_counts(counter: TokenCounter) -> PieceCounts | None:
    """The memo of pointer parts for ``counter`` when a pointer message's count can be summed from them: the
    counter prices messages as `CachingCounter` does (framing plus each body's text) and text piecewise exactly
    (`windowkeeper.tokenizing.pieces.piece_counts`); None for any other counter (pointers are then counted whole).
    """
    if not isinstance(counter, CachingCounter):
        return None
    kind = type(counter)
    if (
        kind.count_message is not CachingCounter.count_message
        or kind.count_message_uncached is not CachingCounter.count_message_uncached
    ):
        return None
    return piece_counts(counter)


def _first_sentence(text: str) -> str:
    """The opening sentence of ``text`` (its first non-empty line up to the first sentence end), clipped.

    A sentence end closer to the start than `_MIN_SENTENCE_CHARS` (a list number, "Hi!") does not count.
    """
    line = _first_line(text)
    match = _SENTENCE_END.search(line, _MIN_SENTENCE_CHARS)
    return line[: match.start()] if match else line


def _outline(text: str) -> list[str]:
    """The heads of the list items in ``text`` (a bold lead, else the item up to its first colon, dash or sentence
    end, clipped), in order, while they fit in `_OUTLINE_SHARE` of its characters; none when it holds no list of
    at least two items.

    A reply that lists options ("1. **Lavender Gin Fizz**: gin, lemon, ...") names in its heads what a later turn
    refers to; its first sentence ("Here are a few ideas!") names none of them. Lines inside a fenced code block
    are not items.
    """
    heads: list[str] = []
    fenced = False
    for line in text.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced  # a code block's "- " lines (a diff, YAML) are no items of the reply
            continue
        item = None if fenced else _LIST_ITEM.match(line)
        if item is None:
            continue
        body = item.group(1).strip()
        bold = _BOLD_LEAD.match(body)
        if bold is not None:
            head = (bold.group(1) or bold.group(2) or "").strip()
        else:
            end = _ITEM_HEAD_END.search(body)
            head = body[: end.start()] if end else body
        head = head.strip(" *_:.").strip()
        if len(head) > _ITEM_HEAD_CHARS:
            head = head[: _ITEM_HEAD_CHARS - 1] + "…"
        if head:
            heads.append(head)
    if len(heads) < 2:
        return []
    room = len(text) // _OUTLINE_SHARE
    kept: list[str] = []
    for head in heads:
        room -= len(head) + 4
        if room < 0:
            break
        kept.append(head)
    return kept if len(kept) >= 2 else []


def reply_pointer_text(text: str, ref: str | int | None = None, held: Sequence[str] = ()) -> str:
    """The stand-in a model reads instead of a cleared assistant reply: how it began, the heads of the items it
    listed (`_outline`: at most an eighth of its characters), how long it was, the kinds of the parts no format
    models it also held (``held``: a server-side web search and its results), and (given the message id ``ref``)
    the recall tool call that restores it."""
    how = f" with {RESTORE_TOOL}(pointer_id={json.dumps(str(ref))})" if ref is not None else ""
    kinds = ", ".join(dict.fromkeys(held))
    if not text:  # a turn of such parts alone (a computer-use step): nothing was said to quote
        return f"[earlier assistant turn cleared from context, kept and restorable{how}; it held {kinds}]"
    first = _first_sentence(text)
    if len(first) > _REPLY_HEAD_CHARS:
        first = first[: _REPLY_HEAD_CHARS - 1] + "…"
    also = f"; it also held {kinds}" if kinds else ""
    heads = _outline(text)
    listed = f"; it listed {'; '.join(map(_JSON.encode, heads))}" if heads else ""
    return (
        f"[earlier assistant reply of {len(text)} chars cleared from context, kept and restorable{how}; "
        f"it began {_JSON.encode(first)}{listed}{also}]"
    )


def clear_reply(message: Message, *, tokens_before: int) -> Message | None:
    """``message`` (an assistant reply without tool calls) with its text replaced by a pointer, or None.

    Only the text blocks go: reasoning, media and any other blocks stay as they are, so nothing a provider
    checks (signatures, ids) changes. The stand-ins of parts no format models are text blocks too and go with the
    text (a server-side tool's call and its result, in one reply, leave together); the pointer names their kinds
    and quotes only what was said. None when the message has no text to clear.
    """
    texts = [b.text for b in message.content if isinstance(b, TextBlock)]
    if not texts or message.tool_call_blocks():
        return None
    held = [kind for kind in map(unknown_kind, texts) if kind is not None]
    said = "".join(t for t in texts if not t.startswith(UNKNOWN_PREFIX)) if held else "".join(texts)
    pointer: ContentBlock | None = make_block("text", text=reply_pointer_text(said, message.message_id, held))
    blocks: list[ContentBlock] = []
    for block in message.content:
        if not isinstance(block, TextBlock):
            blocks.append(block)
        elif pointer is not None:
            blocks.append(pointer)
            pointer = None
    return _replaced(message, blocks, "cleared", tokens_before)


def _replaced(message: Message, blocks: Sequence[ContentBlock], kind: OffloadKind, tokens_before: int) -> Message:
    previous = offload_info(message)
    original = previous.get("original") if previous else message.fingerprint()
    record: dict[str, Any] = {
        "kind": kind,
        "tokens_before": int(previous["tokens_before"]) if previous else tokens_before,
    }
    if isinstance(original, str):
        record["original"] = original
    return message.with_content(blocks, metadata={**message.metadata, OFFLOAD_KEY: record})


def _cut_middle(text: str, keep_tokens: int, counter: TokenCounter) -> str:
    """``text`` cut to at most ``keep_tokens`` tokens (`TRUNCATE_CUT`: head and tail around a marker that says
    how many tokens were left out)."""
    return cut_to_tokens(text, keep_tokens, counter.count_text, TRUNCATE_CUT)


def truncate_message(message: Message, max_tokens: int, counter: TokenCounter) -> Message | None:
    """``message`` with its largest text or tool-result bodies cut in the middle until it costs ``max_tokens``.

    Returns None when nothing in it can be cut (tool-call arguments, media, reasoning and the stand-ins of parts no
    format models are left alone, because cutting them would corrupt a call, a provider signature or the item the
    caller sent). The result may still exceed ``max_tokens`` when the uncuttable part alone does.
    """
    before = counter.count_message(message)
    if before <= max_tokens:
        return message
    blocks: list[ContentBlock] = list(message.content)
    current = before
    changed = False
    tried: set[int] = set()
    while current > max_tokens:
        sizes = []
        for index, block in enumerate(blocks):
            if index in tried:
                continue
            if isinstance(block, TextBlock) and not block.text.startswith(UNKNOWN_PREFIX):
                sizes.append((counter.count_text(block.text), index))
            elif isinstance(block, ToolResultBlock):
                sizes.append((counter.count_text(tool_output_text(block.output)), index))
        if not sizes:
            break
        size, index = max(sizes)
        tried.add(index)
        keep = max(size - (current - max_tokens), 0)
        block = blocks[index]
        assert isinstance(block, TextBlock | ToolResultBlock)
        body = block.text if isinstance(block, TextBlock) else tool_output_text(block.output)
        cut = _cut_middle(body, keep, counter)
        if counter.count_text(cut) >= size:
            continue  # a short text (the question of the turn) would only grow into the marker: left whole
        if isinstance(block, TextBlock):
            blocks[index] = TextBlock(text=cut, annotations=block.annotations)
        elif isinstance(block, ToolResultBlock):
            blocks[index] = ToolResultBlock(call_id=block.call_id, output=cut, status=block.status, name=block.name)
        changed = True
        current = counter.count_message(message.with_content(blocks))
    if not changed:
        return None
    return _replaced(message, blocks, "truncated", before)


def approx_bytes(message: Message) -> int:
    """A cheap estimate of what keeping ``message`` alive costs (text, arguments, inline media), for cache bounds."""
    size = _MESSAGE_BYTES + len(message.reasoning or "")
    for block in message.content:
        size += 64
        for value in block.__dict__.values():
            if isinstance(value, str):
                size += len(value)
            elif isinstance(value, MediaRef) and value.data_base64:
                size += len(value.data_base64)
            elif isinstance(value, _JSON_CONTAINERS):
                # an empty one (a text block's annotations) is "[]" or "{}": not written to be measured
                size += len(_LOOSE_JSON.encode(value)) if value else 2
    return size


class OffloadStore:
    """Originals of replaced message bodies, so a view can be turned back into what was really said.

    Keyed by the replacement's message id and the fingerprint of the original it records: restoring needs only
    the message found in a view, and two threads that reuse small integer ids cannot swap each other's originals.
    A replacement of a replacement maps to the first original.

    The originals are a cache of at most ``max_bytes`` (estimated with `approx_bytes`), least recently used out
    first, so a long session cannot grow it without bound. Nothing is lost by an eviction: the original is the
    message the checkpointer's log holds under the same id, and `restore_all` takes that log (any iterable of
    messages) to put it back, checking the fingerprint each replacement recorded of its original. `for_thread`
    gives a view that tags what it keeps with a thread, so `forget` can clear one thread's originals.
    """

    def __init__(self, max_bytes: int = DEFAULT_OFFLOAD_CACHE_BYTES) -> None:
        # the originals (with the thread that kept each) by the replacement's key
        self._entries: SizedCache[tuple[Hashable, str], tuple[Message, str | None]] = SizedCache(max_bytes)
        self._thread: str | None = None

    def for_thread(self, thread: str) -> OffloadStore:
        """A view of this store whose `keep` tags originals with ``thread`` (same cache, same bound)."""
        view = object.__new__(OffloadStore)
        view._entries = self._entries
        view._thread = thread
        return view

    @property
    def max_bytes(self) -> int:
        return self._entries.max_bytes

    @property
    def cached_bytes(self) -> int:
        """Estimated bytes of the originals held in memory now (at most `max_bytes`)."""
        return self._entries.bytes

    @staticmethod
    def _key(message: Message) -> tuple[Hashable, str]:
        """``(message_id, fingerprint of the original)`` as the replacement records it.

        The record is read from the replacement's metadata, so keeping a pointer does not hash the pointer; every
        replacement of one original (a cleared result later cut, say) maps to that original, as it should. A
        replacement without a recorded original (made by an older version) falls back to its own fingerprint,
        marked apart so it cannot meet an original's.
        """
        info = offload_info(message)
        original = info.get("original") if info is not None else None
        if isinstance(original, str):
            return (message.message_id, original)
        return (message.message_id, "self:" + message.fingerprint())

    def keep(self, original: Message, replacement: Message) -> None:
        """Remember ``original`` as the source of ``replacement`` (evicting the least recently used if full)."""
        source = self.restore(original)
        self._entries.put(self._key(replacement), (source, self._thread), approx_bytes(source))

    def restore(self, message: Message, log: Mapping[Hashable, Message] | None = None) -> Message:
        """The original of ``message`` if it is a replacement this store made, else ``message`` itself.

        ``log`` maps message ids to the messages a checkpointer logged (see `log_index`); it is consulted when the
        original is no longer cached, and its message is used only when its fingerprint is the one recorded.
        """
        info = offload_info(message)
        if info is None:
            return message
        hit = self._entries.get(self._key(message))
        if hit is not None:
            return hit[0]
        if log is not None:
            logged = log.get(message.message_id)
            if logged is not None and logged.fingerprint() == info.get("original"):
                return logged
        return message

    def restore_all(self, messages: Iterable[Message], log: Iterable[Message] | None = None) -> list[Message]:
        """Every message restored; ``log`` (e.g. ``checkpointer.get_messages(thread)``) covers evicted originals."""
        index = log_index(log) if log is not None else None
        return [self.restore(m, index) for m in messages]

    def forget(self, thread: str | None = None) -> None:
        """Drop the cached originals of ``thread`` (of every thread when None)."""
        self._entries.drop(None if thread is None else lambda _, kept: kept[1] != thread)

    def __contains__(self, message: object) -> bool:
        return isinstance(message, Message) and self._key(message) in self._entries

    def __len__(self) -> int:
        return len(self._entries)


def log_index(messages: Iterable[Message]) -> dict[Hashable, Message]:
    """Message id to the first logged message with it (a log keeps the first copy of each id)."""
    index: dict[Hashable, Message] = {}
    for msg in messages:
        index.setdefault(msg.message_id, msg)
    return index
