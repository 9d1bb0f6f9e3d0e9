"""Conversion between `Message` lists and Anthropic Messages API ``system`` + ``messages``.

Anthropic has no system or tool roles: every system message is joined into the ``system`` string, and tool
results travel as ``tool_result`` blocks inside a *user* message (consecutive tool messages become one user
message, which is what parallel tool use requires). Tool-use ids must be unique in a request and match
``[a-zA-Z0-9_-]+``; ids that break either rule are rewritten consistently for the call and its results.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias, TypeGuard, cast, overload

from ...blocks import (
    AudioBlock,
    ContentBlock,
    DocumentBlock,
    ErrorBlock,
    ImageBlock,
    MediaRef,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    VideoBlock,
    tool_output_text,
)
from ...errors import FormatError
from ...messages import Message
from ._common import (
    IdChain,
    ReasoningMode,
    Source,
    as_list,
    as_mapping,
    check_mode,
    error_text,
    is_dropped,
    json_args,
    keep_reasoning,
    media_kind,
    messages_input,
    openai_tools_calls,
    plain,
    read_message,
    reader,
    reasoning_blocks,
    require_str,
    resolve_data_block,
    system_text,
    tool_results_with_media,
    unknown_block,
    unknown_part,
    unsupported,
)
from ._source import (
    cut_from,
    is_recall,
    keep_source,
    keep_turn_keys,
    own_parts_in,
    source_record,
    split_parts,
    turn_keys,
    unchanged,
    whole_group,
    with_own_item_keys,
    with_turn_keys,
)
from .registry import ProviderFormat, content_part_types, register_format
from .rules import RoundTripRules
from .wire import (
    AnthropicBlock,
    AnthropicImageType,
    AnthropicMessage,
    AnthropicSystem,
    AnthropicTranscriptMessage,
    AnthropicUnsignedThinkingBlock,
)

if TYPE_CHECKING:
    from anthropic.types import (
        CacheControlEphemeralParam,
        DocumentBlockParam,
        ImageBlockParam,
        RedactedThinkingBlockParam,
        TextBlockParam,
        ThinkingBlockParam,
        ToolResultBlockParam,
    )
else:
    CacheControlEphemeralParam = dict

logger = logging.getLogger(__name__)

_NOT_IN_ASSISTANT = (ToolResultBlock, AudioBlock, VideoBlock)
"""Blocks no assistant turn may carry (a class tuple built once, not a union per block)."""

FORMAT = "Anthropic Messages"
NAME = "anthropic"
SYSTEM_SEPARATOR = "\n\n"
_ID_OK = re.compile(r"^[A-Za-z0-9_-]+$")


class _IdMap:
    """Rewrites tool-use ids so each is valid and unique, keeping a call and its results paired."""

    def __init__(self) -> None:
        self.used: set[str] = set()
        self.current: dict[str, str] = {}

    def call(self, call_id: str) -> str:
        base = call_id if _ID_OK.match(call_id) else re.sub(r"[^A-Za-z0-9_-]", "_", call_id) or "call"
        new, n = base, 1
        while new in self.used:
            n += 1
            new = f"{base}_{n}"
        if new != call_id:
            logger.debug("tool call id %r rewritten to %r for Anthropic", call_id, new)
        self.used.add(new)
        self.current[call_id] = new
        return new

    def result(self, call_id: str) -> str:
        mapped = self.current.get(call_id)
        if mapped is not None:
            return mapped
        return call_id if _ID_OK.match(call_id) else re.sub(r"[^A-Za-z0-9_-]", "_", call_id) or "call"


# -- ours -> Anthropic ----------------------------------------------------------------------------------------


_IMAGE_TYPES: dict[str, AnthropicImageType] = {
    "image/jpeg": "image/jpeg",
    "image/png": "image/png",
    "image/gif": "image/gif",
    "image/webp": "image/webp",
}


def _image(block: ImageBlock, *, index: int, key: str) -> ImageBlockParam:
    media = block.media
    kind = media_kind(media)
    if kind == "data" and media.data_base64 is not None:
        mime = media.mime_type or "image/png"
        media_type = _IMAGE_TYPES.get(mime)
        if media_type is None:
            raise FormatError(
                f"Anthropic takes base64 images of type {', '.join(_IMAGE_TYPES)}, not {mime!r}; convert the image "
                "or send it by URL",
                index=index,
                key=f"{key}.media.mime_type",
            )
        return {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": media.data_base64}}
    if kind == "url" and media.url:
        return {"type": "image", "source": {"type": "url", "url": media.url}}
    if kind == "file_id" and media.file_id:
        return {"type": "image", "source": {"type": "file", "file_id": media.file_id}}
    raise FormatError("media reference holds no url, file id or data", index=index, key=key)


def _document(block: DocumentBlock, *, index: int, key: str) -> DocumentBlockParam:
    media = block.media
    if media is None:
        if block.text is not None:
            return {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": block.text}}
        raise FormatError("DocumentBlock has neither media nor text", index=index, key=key)
    kind = media_kind(media)
    out: DocumentBlockParam
    if kind == "data" and media.data_base64 is not None:
        if (media.mime_type or "application/pdf") != "application/pdf":
            raise FormatError(
                f"Anthropic takes base64 documents as application/pdf only, not {media.mime_type!r}; send text as "
                "DocumentBlock(text=...)",
                index=index,
                key=f"{key}.media.mime_type",
            )
        out = {
            "type": "document",
            "source": {"type": "base64", "media_type": "application/pdf", "data": media.data_base64},
        }
    elif kind == "url" and media.url:
        out = {"type": "document", "source": {"type": "url", "url": media.url}}
    elif kind == "file_id" and media.file_id:
        out = {"type": "document", "source": {"type": "file", "file_id": media.file_id}}
    else:
        raise FormatError("media reference holds no url, file id or data", index=index, key=key)
    if media.filename:
        out["title"] = media.filename
    return out


def _media_block(block: ContentBlock, role: str, *, index: int, key: str) -> ImageBlockParam | DocumentBlockParam:
    block = resolve_data_block(block)
    if isinstance(block, ImageBlock):
        return _image(block, index=index, key=key)
    if isinstance(block, DocumentBlock):
        return _document(block, index=index, key=key)
    raise unsupported(block, FORMAT, role, index=index, key=key)


_Block: TypeAlias = AnthropicBlock | AnthropicUnsignedThinkingBlock


def _thinking(
    block: ReasoningBlock,
) -> ThinkingBlockParam | RedactedThinkingBlockParam | AnthropicUnsignedThinkingBlock:
    if not block.text and block.signature:
        return {"type": "redacted_thinking", "data": block.signature}
    if block.signature:
        return {"type": "thinking", "thinking": block.text, "signature": block.signature}
    return {"type": "thinking", "thinking": block.text}


def _content(message: Message, *, index: int, ids: _IdMap, reasoning: ReasoningMode) -> list[_Block]:
    out: list[_Block] = []
    if message.role == "assistant":
        out.extend(_thinking(b) for b in reasoning_blocks(message) if keep_reasoning(b, reasoning, needs="signature"))
    for j, block in enumerate(message.content):
        key = f"content[{j}]"
        if is_dropped(block):
            continue
        if isinstance(block, ReasoningBlock):
            if message.role != "assistant":
                raise unsupported(block, FORMAT, message.role, index=index, key=key)
            continue
        if isinstance(block, TextBlock):
            out.append({"type": "text", "text": block.text})
        elif isinstance(block, ErrorBlock):
            out.append({"type": "text", "text": error_text(block)})
        elif isinstance(block, ToolCallBlock):
            if message.role != "assistant":
                raise unsupported(block, FORMAT, message.role, index=index, key=key)
            out.append({"type": "tool_use", "id": ids.call(block.id), "name": block.name, "input": dict(block.args)})
        elif isinstance(block, _NOT_IN_ASSISTANT):
            raise unsupported(block, FORMAT, message.role, index=index, key=key)
        else:
            if message.role != "user":
                raise unsupported(block, FORMAT, message.role, index=index, key=key)
            out.append(_media_block(block, message.role, index=index, key=key))
    return out


def _tool_results(message: Message, *, index: int, ids: _IdMap) -> list[_Block]:
    out: list[_Block] = []
    for block, media in tool_results_with_media(message, index=index):
        text = tool_output_text(block.output)
        item: ToolResultBlockParam = {
            "type": "tool_result",
            "tool_use_id": ids.result(block.call_id),
            "content": text,
        }
        if media:
            parts: list[TextBlockParam | ImageBlockParam | DocumentBlockParam] = (
                [{"type": "text", "text": text}] if text else []
            )
            parts += [_media_block(m, "tool", index=index, key=f"content[{k}]") for k, m in enumerate(media)]
            item["content"] = parts
        if block.status == "error":
            item["is_error"] = True
        out.append(item)
    return out


def _source_blocks(message: Message) -> Any:
    """The caller's blocks ``message`` was read from: those its source record names, else the content of the one
    turn it was read whole from (a list of blocks, or the plain string a turn may hold); None when it was not read
    from an Anthropic turn."""
    record = source_record(message)
    if record is None or record.get("format") != NAME:
        return None
    blocks = record.get("blocks")
    if isinstance(blocks, list):
        return blocks
    items = record.get("items")
    turn = items[0] if isinstance(items, list) and len(items) == 1 and record.get("parts") == 1 else None
    return turn.get("content") if isinstance(turn, Mapping) else None


def _refill_results(message: Message, written: list[_Block]) -> list[_Block]:
    """The ``tool_result`` blocks written anew for ``message`` with what a cut to fit did not change as the caller
    sent it: every key of the block (``is_error: false``, ``cache_control``, a vendor key), its images and
    documents as its own (their ``cache_control``), and each part the reader does not model (``search_result``)
    in its own shape, not as the text the reader read it as (`own_parts_in`). A pointer standing for a cleared
    result is windowkeeper's own block, written as it is."""
    blocks = _source_blocks(message)
    if not isinstance(blocks, list):
        return written
    own = {b.get("tool_use_id"): b for b in blocks if _is_tool_result(b)}
    results = message.tool_result_blocks()
    if len(results) != len(written):
        return written
    out = list(written)
    for k, (result, block) in enumerate(zip(results, written, strict=True)):
        client = own.get(result.call_id)
        if client is None or not cut_from(tool_output_text(result.output), _client_output(client)):
            continue
        kept = with_own_item_keys(block, client)
        kept["content"] = own_parts_in(
            kept.get("content"),
            client.get("content"),
            _RESULT_PARTS,
            _stand_in,
            what=f"the tool_result of {result.call_id!r}",
        )
        out[k] = cast(_Block, kept)
    return out


def _refill_blocks(message: Message, written: list[_Block]) -> list[_Block]:
    """The blocks written anew for the user ``message`` (changed since it was read: a text cut to fit) with each
    block it holds as it was read as the caller's own block: a ``search_result`` in its own shape rather than the
    text it was read as, a text with its ``cache_control``. Only when its blocks and the caller's pair one to
    one (else ``written`` as it is)."""
    blocks = _source_blocks(message)
    if isinstance(blocks, str):
        blocks = [{"type": "text", "text": blocks}]
    n = len(message.content)
    if not isinstance(blocks, list) or not len(blocks) == len(written) == n:
        return written
    try:
        read = [_parse_block(b, index=0, key=f"content[{j}]") for j, b in enumerate(blocks)]
    except FormatError:
        return written
    pairs = zip(blocks, written, message.content, read, strict=True)
    return [cast(_Block, own) if block == was else new for own, new, block, was in pairs]


def _client_output(block: Mapping[str, Any]) -> str | None:
    """The text the reader reads of the caller's ``tool_result`` block (None for one it cannot read)."""
    try:
        return _result_output(block.get("content"), index=0, key="content")
    except FormatError:
        return None


def _stand_in(part: Mapping[str, Any]) -> str:
    """The text the reader reads a ``tool_result`` part of a type it does not model as."""
    return unknown_block(str(part.get("type")), part).text


_RESULT_PARTS = frozenset({"text", "image", "document"})
"""The ``tool_result`` part types the reader models."""


MAX_CACHE_BREAKPOINTS = 4
"""Anthropic rejects a request with more than four ``cache_control`` blocks."""
CACHE_CONTROL: Final[CacheControlEphemeralParam] = {"type": "ephemeral"}

CacheBreakpoint = int | Literal["system"]
"""Where `to_anthropic` puts a ``cache_control`` marker: ``"system"`` (the end of the system prompt) or the index
of one of the input messages (its last markable block; negative indexes count from the end)."""


def _markable(block: Mapping[str, Any]) -> bool:
    """Whether ``block`` can carry ``cache_control`` (thinking and empty text cannot)."""
    kind = block.get("type")
    if kind == "text":
        return bool(block.get("text"))
    return kind == "image" or kind == "document" or kind == "tool_use" or kind == "tool_result"


def _mark_last(blocks: list[Any]) -> bool:
    """Put ``cache_control`` on the last block of ``blocks`` that can carry it (a copy the caller does not own;
    an SDK object is replaced by its plain dict); False when none can."""
    for k in range(len(blocks) - 1, -1, -1):
        block = blocks[k]
        data = block if isinstance(block, dict) else plain(block)
        if isinstance(data, Mapping) and _markable(data):
            blocks[k] = {**data, "cache_control": CACHE_CONTROL.copy()}
            return True
    return False


def _cache_marks(value: Any) -> list[Mapping[str, Any]]:
    """Every ``cache_control`` in a turn's content or a list of blocks, nested ones included (a tool result's own
    blocks): Anthropic counts each against the four a request may carry."""
    content = value.get("content") if isinstance(value, Mapping) and "role" in value else value
    found: list[Mapping[str, Any]] = []
    for block in content if isinstance(content, list) else ():
        data = block if isinstance(block, Mapping) else plain(block)
        if not isinstance(data, Mapping):
            continue
        mark = data.get("cache_control")
        if isinstance(mark, Mapping):
            found.append(mark)
        if isinstance(data.get("content"), list):
            found.extend(_cache_marks(data["content"]))
    return found


def _lasts_long(mark: Mapping[str, Any]) -> bool:
    """A marker with a time to live longer than the default five minutes: Anthropic wants every such marker
    before every default one (tools, then system, then messages)."""
    ttl = mark.get("ttl")
    return ttl is not None and ttl != "5m"


def tool_cache_marks(tools: Sequence[Any] | None) -> int:
    """How many of a request's ``tools`` carry ``cache_control``: each counts against the four markers."""
    return sum(1 for tool in tools or () if isinstance(data := plain(tool), Mapping) and data.get("cache_control"))


def _sendable(block: _Block) -> TypeGuard[AnthropicBlock]:
    return block["type"] != "thinking" or "signature" in block


_TURN_MODELLED = frozenset({"role", "content"})
"""The keys of a turn the reader makes messages from; any other is kept with them (`keep_turn_keys`)."""


def _with_keys(message: AnthropicMessage, keys: Mapping[str, Any] | None) -> AnthropicMessage:
    """A turn written anew with the caller's keys of the turn it came from (`with_turn_keys`)."""
    return cast(AnthropicMessage, with_turn_keys(message, keys)) if keys else message


def _api_message(message: AnthropicTranscriptMessage) -> AnthropicMessage:
    """A transcript message as the SDK's ``MessageParam``; for ``reasoning="signed"``/``"none"`` output, which holds
    no unsigned thinking, the content is the same blocks (the filter only proves it to the type checker)."""
    content = [b for b in message["content"] if _sendable(b)]
    if message["role"] == "user":
        return {"role": "user", "content": content}
    return {"role": "assistant", "content": content}


# The Literal overloads come first on purpose: "signed"/"none" output is the SDK's MessageParam.
@overload
def to_anthropic(  # type: ignore[overload-overlap]
    messages: Sequence[Message],
    *,
    reasoning: Literal["signed", "none"],
    cache_breakpoints: None = None,
    cache_reserved: int = 0,
    passthrough: bool = True,
) -> tuple[str | None, list[AnthropicMessage]]: ...


@overload
def to_anthropic(  # type: ignore[overload-overlap]
    messages: Sequence[Message],
    *,
    reasoning: Literal["signed", "none"],
    cache_breakpoints: Sequence[CacheBreakpoint],
    cache_reserved: int = 0,
    passthrough: bool = True,
) -> tuple[AnthropicSystem | None, list[AnthropicMessage]]: ...


@overload
def to_anthropic(
    messages: Sequence[Message],
    *,
    reasoning: ReasoningMode = "all",
    cache_breakpoints: None = None,
    cache_reserved: int = 0,
    passthrough: bool = True,
) -> tuple[str | None, list[AnthropicTranscriptMessage]]: ...


@overload
def to_anthropic(
    messages: Sequence[Message],
    *,
    reasoning: ReasoningMode = "all",
    cache_breakpoints: Sequence[CacheBreakpoint],
    cache_reserved: int = 0,
    passthrough: bool = True,
) -> tuple[AnthropicSystem | None, list[AnthropicTranscriptMessage]]: ...


def to_anthropic(
    messages: Sequence[Message],
    *,
    reasoning: ReasoningMode = "all",
    cache_breakpoints: Sequence[CacheBreakpoint] | None = None,
    cache_reserved: int = 0,
    passthrough: bool = True,
) -> (
    tuple[AnthropicSystem | None, list[AnthropicMessage]]
    | tuple[AnthropicSystem | None, list[AnthropicTranscriptMessage]]
):
    """Our messages as ``(system, messages)`` for the Anthropic Messages API.

    ``reasoning="signed"`` keeps only thinking blocks that carry a signature (the API rejects unsigned ones) and
    returns the SDK's ``MessageParam`` dicts, ready for ``messages.create(messages=...)``; the default keeps every
    reasoning block so a stored transcript round-trips (`AnthropicTranscriptMessage`, see `wire`).

    ``cache_breakpoints`` marks where the prompt cache should end (at most four, Anthropic's limit): ``"system"``
    returns the system prompt as one text block carrying ``cache_control`` (the prefix tools + system is cached),
    an index marks the last block written for that message (thinking blocks and empty text cannot carry a marker,
    so the last block that can is used; a message with none gets no marker). Without breakpoints the system
    prompt stays a plain string. Breakpoints the caller's own items already carry (nested ones included) count
    toward the four, with ``cache_reserved`` more that the request carries elsewhere (its tools' markers, a
    system prompt of the caller's blocks): ours are placed latest first and the earliest are left out when the
    limit would be passed. A message the caller marked keeps its marker as it is (its ``ttl`` included), and
    none of ours goes before a caller's marker that lives longer than five minutes (the API wants those first).

    ``passthrough`` writes each message read with its source kept (`from_anthropic`, `ANTHROPIC.read`) and unchanged
    since as the item it was read from (``cache_control``, ``citations`` and unknown keys included); the parts of a
    split user turn (``[tool_result, text]``) go back into one user turn, with their original blocks where
    unchanged. It is on by default, so ``to_anthropic(from_anthropic(system, items))`` gives the caller's items
    back; a message changed since, or read from another format, is written anew (a warning names the fields a
    conversion loses). Pass False to write every message in windowkeeper's own shape. Consecutive user-side messages
    written anew (tool results, then text; with ``passthrough``, a recall note, then the question it serves) share
    one user turn.
    """
    check_mode(reasoning)
    marks = _check_breakpoints(cache_breakpoints, len(messages))
    system: list[str] = []
    out: list[AnthropicTranscriptMessage] = []
    ids = _IdMap()
    open_turn: list[_Block] | None = None  # the user turn written anew that user-side messages still join
    joinable = False  # it was opened by tool results or a recall note: the next user-side message joins it
    recall_open = False  # whether ``open_turn`` holds only a recall note (the question it serves joins it)
    written: dict[int, list[_Block]] = {}
    verbatim: dict[int, int] = {}  # message index -> position in ``out`` of the caller's item written for it
    keys_at: dict[int, Mapping[str, Any]] = {}  # position in ``out`` -> the caller's keys of a turn written anew
    i = 0
    n = len(messages)
    while i < n:
        message = messages[i]
        if message.role == "system":
            system.append(system_text(message, FORMAT, index=i))
            i += 1
            continue
        source = unchanged(message, NAME) if passthrough else None
        if source is not None:
            group = whole_group(messages, i, NAME)
            if group is not None:
                items, end = group
                for item in items:
                    for block in item.get("content") or () if isinstance(item.get("content"), list) else ():
                        if isinstance(block, Mapping) and block.get("type") == "tool_use":
                            # sent as the caller wrote it: a result written anew answers this very id
                            ids.used.add(str(block.get("id")))
                            ids.current[str(block.get("id"))] = str(block.get("id"))
                if recall_open and open_turn is not None and len(items) == 1 and items[0].get("role") == "user":
                    out[-1] = _with_leading(items[0], open_turn)
                else:
                    out.extend(items)
                for k in range(i, end):
                    verbatim[k] = len(out) - 1
                open_turn, recall_open, joinable = None, False, False
                i = end
                continue
            blocks = source.get("blocks")
            content: list[_Block] = list(blocks) if isinstance(blocks, list) else []
        else:
            if passthrough:
                ANTHROPIC.report(message, NAME)
            if message.role == "tool":
                content = _tool_results(message, index=i, ids=ids)
                if passthrough:
                    content = _refill_results(message, content)
            else:
                content = _content(message, index=i, ids=ids, reasoning=reasoning)
                if passthrough and message.role == "user":
                    content = _refill_blocks(message, content)
        keys = turn_keys(message, NAME) if passthrough else None
        if message.role == "assistant":
            open_turn, recall_open = None, False
            out.append({"role": "assistant", "content": content})
        elif open_turn is not None and joinable and (content or message.role == "tool"):
            open_turn.extend(content)
            # a recall note after tool results keeps the turn open for the question it serves (the user part of
            # the same client turn): a second user turn would split the client's turn in two
            joinable = message.role == "tool" or (passthrough and is_recall(message))
            recall_open = False
        else:
            open_turn = list(content)
            out.append({"role": "user", "content": open_turn})
            # the front door (``passthrough``) writes a recall note into the turn it serves; the graph's own requests
            # keep it a turn of its own, as the prompt accounting counts it (the API joins consecutive user turns)
            recall_open = passthrough and is_recall(message)
            joinable = recall_open or message.role == "tool"
        if keys:
            keys_at.setdefault(len(out) - 1, keys)
        written[i] = content
        i += 1
    text = SYSTEM_SEPARATOR.join(system) if system else None
    sent: AnthropicSystem | None = text
    held = [_cache_marks(turn) for turn in out]
    room = MAX_CACHE_BREAKPOINTS - cache_reserved - sum(len(marks_) for marks_ in held)
    # our markers go after the caller's longer-lived ones only (at or before one, they would break the order)
    last_long = max((k for k, marks_ in enumerate(held) if any(map(_lasts_long, marks_))), default=-1)
    wanted = [m for m in marks if isinstance(m, int)]
    system_marked = "system" in marks and bool(text) and last_long < 0 and room > 0
    if system_marked:
        room -= 1
    for index in sorted(wanted, reverse=True):
        if room <= 0:
            logger.debug("cache breakpoint at message %d left out: the request has %d already", index, 4)
            continue
        if index in verbatim:
            position = verbatim[index]
            if position <= last_long or held[position]:
                continue  # the caller's own marker is there (or a longer-lived one after it)
            item = _copy_turn(out[position])
            blocks_out = item["content"] if isinstance(item["content"], list) else []
            if _mark_last(blocks_out):
                out[position] = item
                room -= 1
                continue
        else:
            blocks = written.get(index, [])
            found = _position_of(out, blocks)
            if found is None or found <= last_long or any(_cache_marks(blocks)):
                continue
            blocks_out = list(blocks)
            if _mark_last(blocks_out):
                _replace_blocks(out, blocks, blocks_out)
                room -= 1
                continue
        logger.debug("message %d has no block that can carry cache_control; no breakpoint there", index)
    if system_marked and text:
        sent = [{"type": "text", "text": text, "cache_control": CACHE_CONTROL.copy()}]
    kept = set(verbatim.values())
    if reasoning == "all":
        for k, keys in keys_at.items():
            if k not in kept:
                out[k] = cast(AnthropicTranscriptMessage, with_turn_keys(out[k], keys))
        return sent, out
    # the caller's own items are sent as they came (they are the API's shape already)
    return sent, [
        cast(AnthropicMessage, m) if k in kept else _with_keys(_api_message(m), keys_at.get(k))
        for k, m in enumerate(out)
    ]


def _with_leading(item: Mapping[str, Any], leading: list[Any]) -> Any:
    """A copy of the caller's user turn ``item`` with ``leading`` blocks before its own (every other key kept)."""
    content = item.get("content")
    own = [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])
    return {**item, "content": [*leading, *own]}


def _copy_turn(item: Any) -> Any:
    """A copy of a caller's turn whose blocks may get a cache marker (the caller's own dicts are never touched)."""
    content = item.get("content")
    if isinstance(content, str):
        return {**item, "content": [{"type": "text", "text": content}]}
    return {**item, "content": [dict(b) if isinstance(b, Mapping) else b for b in content or []]}


def _position_of(out: list[Any], blocks: list[Any]) -> int | None:
    """Index in ``out`` of the turn that holds ``blocks`` (by identity; None when they were written nowhere)."""
    if not blocks:
        return None
    first = id(blocks[0])
    for k in range(len(out) - 1, -1, -1):
        content = out[k].get("content")
        if isinstance(content, list) and any(id(b) == first for b in content):
            return k
    return None


def _replace_blocks(out: list[Any], old: list[Any], new: list[Any]) -> None:
    """Swap the blocks ``old`` (by identity) for their copies ``new`` wherever they were put in ``out``."""
    if not old:
        return
    swap = {id(o): c for o, c in zip(old, new, strict=True)}
    for turn in out:
        content = turn.get("content")
        if isinstance(content, list) and any(id(b) in swap for b in content):
            turn["content"] = [swap.get(id(b), b) for b in content]


def _check_breakpoints(breakpoints: Sequence[CacheBreakpoint] | None, n: int) -> set[CacheBreakpoint]:
    if breakpoints is None:
        return set()
    if isinstance(breakpoints, str | int):
        raise FormatError(
            f"cache_breakpoints must be a list such as ['system', -1], got {breakpoints!r}", key="cache_breakpoints"
        )
    marks: set[CacheBreakpoint] = set()
    for k, mark in enumerate(breakpoints):
        if mark == "system":
            marks.add("system")
        elif isinstance(mark, int) and not isinstance(mark, bool) and -n <= mark < n:
            marks.add(mark % n)
        else:
            raise FormatError(
                f"cache breakpoint {mark!r} is neither 'system' nor the index of one of the {n} messages",
                key=f"cache_breakpoints[{k}]",
            )
    if len(marks) > MAX_CACHE_BREAKPOINTS:
        raise FormatError(
            f"{len(marks)} cache breakpoints requested; Anthropic allows at most {MAX_CACHE_BREAKPOINTS} per request",
            key="cache_breakpoints",
        )
    return marks


# -- Anthropic -> ours ----------------------------------------------------------------------------------------


_MEDIA_SOURCES = frozenset({"base64", "url", "file"})


def _parse_media(source: Mapping[str, Any], *, index: int, key: str) -> MediaRef:
    stype = source.get("type")
    if stype == "base64":
        return MediaRef(
            kind="data",
            data_base64=require_str(source, "data", index=index, key=f"{key}.data", empty_ok=True),
            mime_type=source.get("media_type"),
        )
    if stype == "url":
        return MediaRef(kind="url", url=require_str(source, "url", index=index, key=f"{key}.url"))
    if stype == "file":
        return MediaRef(kind="file_id", file_id=require_str(source, "file_id", index=index, key=f"{key}.file_id"))
    raise FormatError(
        f"unsupported source type {stype!r} (expected base64, url or file)", index=index, key=f"{key}.type"
    )


def _result_output(content: Any, *, index: int, key: str) -> str:
    """A ``tool_result``'s text; its images and documents are read beside it (`_result_media`)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    texts: list[str] = []
    for j, part in enumerate(as_list(content, index=index, key=key, what="tool_result content", text_too=True)):
        p = as_mapping(part, index=index, key=f"{key}[{j}]", what="tool_result part")
        if p.get("type") in _RESULT_MEDIA_TYPES:
            continue
        if p.get("type") != "text":
            texts.append(unknown_block(str(p.get("type")), p).text)
            continue
        texts.append(require_str(p, "text", index=index, key=f"{key}[{j}].text", empty_ok=True))
    return "".join(texts)


_RESULT_MEDIA_TYPES = frozenset({"image", "document"})


def _result_media(block: Mapping[str, Any], *, index: int, key: str) -> list[ContentBlock]:
    """The images and documents a ``tool_result`` returned (a computer-use screenshot), as blocks of the tool
    message: counted as media, not as the characters of their base64 text."""
    content = block.get("content")
    if not isinstance(content, list):
        return []
    return [
        _parse_block(part, index=index, key=f"{key}.content[{j}]")
        for j, part in enumerate(content)
        if isinstance(part, Mapping) and part.get("type") in _RESULT_MEDIA_TYPES
    ]


def _parse_block(block: Any, *, index: int, key: str) -> ContentBlock:
    b = as_mapping(block, index=index, key=key, what="content block")
    btype = b.get("type")
    if btype == "text":
        return TextBlock(text=require_str(b, "text", index=index, key=f"{key}.text", empty_ok=True))
    if btype == "thinking":
        sig = b.get("signature")
        return ReasoningBlock(
            text=require_str(b, "thinking", index=index, key=f"{key}.thinking", empty_ok=True),
            signature=sig if isinstance(sig, str) and sig else None,
        )
    if btype == "redacted_thinking":
        return ReasoningBlock(text="", signature=require_str(b, "data", index=index, key=f"{key}.data"))
    if btype == "tool_use":
        args = b.get("input", {})
        if not isinstance(args, Mapping):
            raise FormatError("tool_use 'input' must be an object", index=index, key=f"{key}.input")
        return ToolCallBlock(
            id=require_str(b, "id", index=index, key=f"{key}.id"),
            name=require_str(b, "name", index=index, key=f"{key}.name"),
            args=json_args(args, index=index, key=f"{key}.input"),
        )
    if btype == "tool_result":
        return ToolResultBlock(
            call_id=require_str(b, "tool_use_id", index=index, key=f"{key}.tool_use_id"),
            output=_result_output(b.get("content"), index=index, key=f"{key}.content"),
            status="error" if b.get("is_error") else "completed",
        )
    if btype in ("image", "document"):
        source = as_mapping(b.get("source"), index=index, key=f"{key}.source", what="'source'")
        if btype == "document" and source.get("type") == "text":
            return DocumentBlock(text=require_str(source, "data", index=index, key=f"{key}.source.data", empty_ok=True))
        if source.get("type") not in _MEDIA_SOURCES and isinstance(source.get("type"), str):
            # a source kind not modelled (a custom-content document's ``content``...): kept whole, as unknown kinds are
            return unknown_block(btype, b)
        media = _parse_media(source, index=index, key=f"{key}.source")
        if btype == "image":
            return ImageBlock(media=media)
        title = b.get("title")
        if isinstance(title, str) and title:
            media = media.model_copy(update={"filename": title})
        return DocumentBlock(media=media)
    expected = "text, image, document, thinking, redacted_thinking, tool_use or tool_result"
    return unknown_part(b, expected, index=index, key=key)


@reader("Anthropic content blocks")
def anthropic_blocks_to_message(blocks: Any, role: str = "assistant", *, index: int = 0) -> Message:
    """A response's ``content`` blocks (dicts or SDK objects) as one assistant message (id derived from them)."""
    message = _blocks_to_message(blocks, role, index=index)
    IdChain().assign([message], {"role": role, "content": blocks}, index)
    return message


def _blocks_to_message(blocks: Any, role: str, *, index: int) -> Message:
    if isinstance(blocks, str):
        content: list[ContentBlock] = [TextBlock(text=blocks)]
    else:
        items = as_list(blocks, index=index, key="content", what="'content'", text_too=True)
        content = [_parse_block(b, index=index, key=f"content[{j}]") for j, b in enumerate(items)]
    if role not in ("user", "assistant"):
        raise FormatError(f"unknown role {role!r}; expected user or assistant", index=index, key="role")
    if role == "user" and any(isinstance(b, ToolCallBlock) for b in content):
        raise FormatError("tool_use blocks belong in assistant messages", index=index, key="content")
    if role == "assistant" and any(isinstance(b, ToolResultBlock) for b in content):
        raise FormatError("tool_result blocks belong in user messages", index=index, key="content")
    calls = [b for b in content if isinstance(b, ToolCallBlock)]
    # ``Message(role=role, content=content, tools_calls=...)`` without the validation pass (`read_message`: the
    # same fields, fields set and boundary rule; the blocks were built and validated here)
    return read_message(
        role,
        content,
        {},
        tools_calls=openai_tools_calls(calls) if calls else None,
        calls_given=True,
        metadata_given=False,
    )


@reader("Anthropic messages")
def anthropic_message_to_messages(d: Any, index: int = 0) -> list[Message]:
    """One Anthropic message as ours: a user message holding tool results splits into one tool message per
    result, followed by a user message with whatever else it held. Ids are derived from content and ``index``."""
    out = _to_messages(d, index)
    IdChain().assign(out, d, index)
    return out


def _to_messages(d: Any, index: int) -> list[Message]:
    msg = as_mapping(d, index=index, key="role", what="message")
    role = msg.get("role")
    if role is None:
        raise FormatError("missing required 'role'", index=index, key="role")
    if "content" not in msg:
        raise FormatError("missing required 'content'", index=index, key="content")
    message = _blocks_to_message(msg["content"], str(role), index=index)
    if role != "user":
        return [message]
    results = message.tool_result_blocks()
    if not results:
        return [message]
    given = [plain(b) for b in msg["content"]]
    raw = [b for b in given if isinstance(b, Mapping) and b.get("type") == "tool_result"]
    out = []
    for j, (result, source) in enumerate(zip(results, raw, strict=True)):
        media = _result_media(source, index=index, key=f"content[{j}]")
        # ``Message(role="tool", content=[result, *media])`` (as `Message.tool_message` builds it), unvalidated
        out.append(read_message("tool", [result, *media], {}, metadata_given=False))
    rest: list[ContentBlock] = [b for b in message.content if not isinstance(b, ToolResultBlock)]
    if rest:
        out.append(read_message("user", rest, {}, metadata_given=False))
    return out


def _parse_system(system: Any) -> str | None:
    if system is None:
        return None
    if isinstance(system, str):
        return system
    parts = as_list(system, index=0, key="system", what="'system'")
    texts: list[str] = []
    for j, part in enumerate(parts):
        p = as_mapping(part, index=0, key=f"system[{j}]", what="system block")
        texts.append(require_str(p, "text", index=0, key=f"system[{j}].text", empty_ok=True))
    return SYSTEM_SEPARATOR.join(texts)


@reader("Anthropic messages")
def from_anthropic(system: Any, messages: Any, *, keep_source: bool = True) -> list[Message]:
    """``system`` (string or text blocks, or None) and Anthropic messages (a list, or one response message) as
    ours; the system prompt becomes one leading system message. Error indexes refer to ``messages``.

    Ids are derived from content, position and the previous message's id, so converting the same input again
    gives the same ids (see `IdChain`).

    ``keep_source`` (the default) records on each message the item(s) it was read from, as the format
    object's ``read`` does, so that ``to_anthropic`` (``passthrough`` is on by default) writes a message unchanged
    since as those very items: every key the caller sent, unknown ones included. Pass False for messages that are
    to be written anew in windowkeeper's own shape.
    """
    out: list[Message] = []
    chain = IdChain()
    text = _parse_system(system)
    if text is not None:
        out.append(Message.text_message(text, role="system"))
        chain.assign(out, {"system": system}, -1)
    items = messages_input(messages, what="Anthropic messages")
    sources: list[Source] | None = [] if keep_source else None
    out.extend(_read(items, offset=0, previous=chain.previous, sources=sources))
    ANTHROPIC.keep_all(sources or ())
    return out


def _read(
    items: Sequence[Any], *, offset: int, previous: str | None, sources: list[Source] | None = None
) -> list[Message]:
    chain = IdChain(previous, sources)
    out: list[Message] = []
    for i, d in enumerate(items, start=offset):
        converted = _to_messages(d, i)
        chain.assign(converted, d, i)
        out.extend(converted)
    return out


@reader("Anthropic messages")
def read_items(
    items: Sequence[Any], *, offset: int = 0, previous: str | None = None, sources: list[Source] | None = None
) -> list[Message]:
    """Messages from provider messages ``offset``, ``offset + 1``, ... of a longer list (no system), as
    `from_anthropic` reads them when ``previous`` is the id of the last message read before them."""
    return _read(items, offset=offset, previous=previous, sources=sources)


def _is_tool_result(block: Any) -> bool:
    return isinstance(block, Mapping) and block.get("type") == "tool_result"


_ANTHROPIC_PARTS = frozenset({"tool_use", "tool_result", "thinking", "redacted_thinking"})


class AnthropicFormat(ProviderFormat):
    """Anthropic Messages: user and assistant turns of blocks, tool results inside user turns, system apart."""

    name = NAME
    round_trip = RoundTripRules(
        system="one_front",
        tool_status=True,
        renumber_ids=True,
        reasoning="hoist",
        reasoning_fields=frozenset({"signature"}),
        default_media_mime=True,
    )
    priority = 40
    title = FORMAT
    expected = (
        "Anthropic messages such as {'role': 'user', 'content': 'hi'} with tool_use / tool_result "
        "content blocks (the system prompt goes to system=, not into the list)"
    )

    def read_items(
        self, items: Sequence[Any], *, offset: int, previous: str | None, sources: list[Source] | None
    ) -> list[Message]:
        return read_items(items, offset=offset, previous=previous, sources=sources)

    def keep(self, source: Any, messages: Sequence[Message]) -> None:
        item = plain(source)
        blocks = split_parts(item.get("content"), messages, _is_tool_result)
        keep_source(self.name, messages, [source], blocks)
        keep_turn_keys(messages, item, _TURN_MODELLED)

    def read_system(self, system: Any) -> str | None:
        if system is None or isinstance(system, str):
            return super().read_system(system)
        messages = from_anthropic(system, [])
        return "\n\n".join(m.text() for m in messages if m.role == "system") or None

    def write_messages(self, messages: Sequence[Message], *, options: Mapping[str, Any]) -> list[Any]:
        breakpoints = options.get("cache_breakpoints")
        marks = [b for b in breakpoints if b != "system"] if breakpoints is not None else None
        passthrough = bool(options.get("passthrough", True))
        if marks is None:
            return list(to_anthropic(messages, reasoning="signed", passthrough=passthrough)[1])
        reserved = int(options.get("cache_reserved") or 0)
        return list(
            to_anthropic(
                messages, reasoning="signed", cache_breakpoints=marks, cache_reserved=reserved, passthrough=passthrough
            )[1]
        )

    def write(self, system: str | None, messages: Sequence[Message], **options: Any) -> tuple[list[Any], Any]:
        """``cache_reserved`` (an option) counts the markers the request carries outside the system prompt and the
        messages (its tools'): with the caller's own markers they leave what windowkeeper may add of the four."""
        source = options.get("system_source")
        if isinstance(source, list):
            tail = self.system_tail(source, system)
            if tail is not None:
                return self._write_own_system([plain(b) for b in source], tail, messages, options)
        blocks = [{"type": "text", "text": system}] if system else []
        out, marked = self._write_marked(blocks, 0, messages, options)
        return out, (marked if marked is not blocks else system)  # unmarked: the plain string, as before

    def _write_own_system(
        self, source: list[Any], tail: str, messages: Sequence[Message], options: Mapping[str, Any]
    ) -> tuple[list[Any], Any]:
        """The caller's system blocks as they came (their ``cache_control`` included), then the summary as a text
        block of its own. The system marker is added (to the last block) only when the caller set none."""
        blocks = [*source, {"type": "text", "text": tail}] if tail else list(source)
        return self._write_marked(blocks, len(_cache_marks(blocks)), messages, options)

    def _write_marked(
        self, blocks: list[Any], own: int, messages: Sequence[Message], options: Mapping[str, Any]
    ) -> tuple[list[Any], list[Any]]:
        """The messages and the system ``blocks``, with windowkeeper's markers where the four a request may carry
        leave room: after the caller's own (``own`` in the system, the tools', the messages'), the system's first,
        and never before a caller's marker that lives longer than five minutes."""
        breakpoints = options.get("cache_breakpoints")
        if breakpoints is None:
            return self.write_messages(messages, options=options), blocks
        tools = int(options.get("cache_reserved") or 0)
        mark = bool(blocks) and "system" in breakpoints and not own
        options = {
            **options,
            "cache_breakpoints": [b for b in breakpoints if b != "system"],
            "cache_reserved": tools + own + (1 if mark else 0),
        }
        out = self.write_messages(messages, options=options)
        if mark:
            sent = [m for turn in out for m in _cache_marks(turn)]
            if tools + len(sent) < MAX_CACHE_BREAKPOINTS and not any(map(_lasts_long, sent)):
                return out, [*blocks[:-1], {**blocks[-1], "cache_control": CACHE_CONTROL.copy()}]
        return out, blocks

    def distinctive(self, item: Any) -> str | None:
        d = plain(item)
        if not isinstance(d, Mapping) or "type" in d or "parts" in d:
            return None
        for j, ptype in content_part_types(d.get("content")):
            if ptype in _ANTHROPIC_PARTS:
                return f"content[{j}].type"
        return None

    def tool(self, name: str, description: str, parameters: Mapping[str, Any]) -> dict[str, Any]:
        return {"name": name, "description": description, "input_schema": dict(parameters)}


ANTHROPIC = register_format(AnthropicFormat())
"""The Anthropic Messages format object."""
