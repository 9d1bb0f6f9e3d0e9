"""Conversion between `Message` lists and ``langchain_core.messages`` objects.

LangChain is an optional dependency (the ``langchain`` extra), imported only when these functions run. Content
is written with LangChain's standard content blocks (``text``, ``image``, ``audio``, ``video``, ``file``,
``reasoning``); reading also accepts OpenAI-style ``image_url`` parts and ``reasoning_content`` in
``additional_kwargs``. Unlike the provider formats, LangChain messages carry an ``id``, so message ids survive.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

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
from ...errors import FormatError, MissingDependencyError
from ...messages import Message
from ._common import (
    PENDING_ID,
    RESULT_MEDIA,
    IdChain,
    Source,
    error_text,
    is_dropped,
    json_args,
    media_from_url,
    media_kind,
    openai_tools_calls,
    original_arguments,
    read_message,
    reader,
    resolve_data_block,
    tool_results_with_media,
    unknown_block,
)
from ._source import cut_from, keep_source, own_parts_in, source_record, unchanged
from .registry import ProviderFormat, in_place, register_format
from .rules import RoundTripRules

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage

logger = logging.getLogger(__name__)

_MEDIA = (ImageBlock, AudioBlock, VideoBlock, DocumentBlock)
"""The media blocks (a class tuple built once, not a union per block)."""

FORMAT = "LangChain"
NAME = "langchain"
INVALID_CALL = "invalid_tool_call"
"""``tool_type`` of a call LangChain keeps in ``invalid_tool_calls`` (its arguments did not parse)."""
_MEDIA_TYPES: dict[type[Any], str] = {
    ImageBlock: "image",
    AudioBlock: "audio",
    VideoBlock: "video",
    DocumentBlock: "file",
}


def _lc() -> Any:
    try:
        import langchain_core.messages as lc_messages
    except ImportError:
        raise MissingDependencyError("langchain-core", "langchain") from None
    return lc_messages


# -- ours -> LangChain ----------------------------------------------------------------------------------------


def _media_dict(block: ImageBlock | AudioBlock | VideoBlock | DocumentBlock, *, index: int, key: str) -> dict[str, Any]:
    media = block.media
    out: dict[str, Any] = {"type": _MEDIA_TYPES[type(block)]}
    if media is None:
        if isinstance(block, DocumentBlock) and block.text is not None:
            return {"type": "text-plain", "text": block.text, "mime_type": "text/plain"}
        raise FormatError("DocumentBlock has neither media nor text", index=index, key=key)
    kind = media_kind(media)
    if kind == "data":
        out["base64"] = media.data_base64
    elif kind == "file_id":
        out["file_id"] = media.file_id
    else:
        out["url"] = media.url
    if media.mime_type:
        out["mime_type"] = media.mime_type
    if media.filename:
        out["extras"] = {"filename": media.filename}
    return out


def _reasoning_dict(block: ReasoningBlock) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "reasoning", "reasoning": block.text}
    if block.id:
        out["id"] = block.id
    extras = {k: v for k, v in (("summary", block.summary), ("signature", block.signature)) if v is not None}
    if extras:
        out["extras"] = extras
    return out


def _content(message: Message, *, index: int) -> str | list[str | dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    if message.reasoning:
        parts.append(_reasoning_dict(ReasoningBlock(text=message.reasoning)))
    for j, block in enumerate(message.content):
        key = f"content[{j}]"
        block = resolve_data_block(block)
        if is_dropped(block) or isinstance(block, ToolCallBlock):
            continue
        if isinstance(block, TextBlock):
            parts.append({"type": "text", "text": block.text})
        elif isinstance(block, ErrorBlock):
            parts.append({"type": "text", "text": error_text(block)})
        elif isinstance(block, ReasoningBlock):
            parts.append(_reasoning_dict(block))
        elif isinstance(block, _MEDIA):
            parts.append(_media_dict(block, index=index, key=key))
        else:
            raise FormatError(
                f"{type(block).__name__} cannot be carried by a LangChain {message.role!r} message",
                index=index,
                key=key,
            )
    if not parts:
        return ""
    if len(parts) == 1 and parts[0]["type"] == "text" and parts[0]["text"]:
        text: str = parts[0]["text"]
        return text
    return list(parts)


def to_langchain(messages: Sequence[Message], *, passthrough: bool = True) -> list[BaseMessage]:
    """Our messages as LangChain messages (a tool message with several results yields several ToolMessages).

    ``passthrough`` writes each message read with its source kept (`from_langchain`, `LANGCHAIN.read`) and unchanged
    since as an equal copy of the LangChain message it was read from (its class, ``id``, ``additional_kwargs``,
    ``response_metadata`` and content blocks included). It is on by default, so ``to_langchain(from_langchain(x))``
    gives the caller's messages back; a message changed since, or read from another format, is written anew (a
    warning names the fields a conversion loses). Pass False to write every message in windowkeeper's own shape.
    """
    lc = _lc()
    out: list[BaseMessage] = []
    for i, message in enumerate(messages):
        if passthrough:
            source = unchanged(message, NAME)
            if source is not None:
                out.extend(_from_dicts(source["items"]))
                continue
            LANGCHAIN.report(message, NAME)
        written = _written(message, i, lc)
        out.extend(_refill(message, written) if passthrough and message.raw else written)
    return out


def _written(message: Message, i: int, lc: Any) -> list[BaseMessage]:
    """One of our messages written anew as LangChain messages."""
    mid = str(message.message_id)
    name = message.metadata.get("name") if isinstance(message.metadata.get("name"), str) else None
    if message.role == "tool":
        out: list[BaseMessage] = []
        for block, media in tool_results_with_media(message, index=i):
            text = tool_output_text(block.output)
            content: str | list[str | dict[str, Any]] = text
            if media:  # what the tool returned besides its text (a screenshot), as content blocks
                content = [{"type": "text", "text": text}] if text else []
                content += [_media_dict(m, index=i, key=f"content[{k}]") for k, m in enumerate(media)]
            out.append(
                lc.ToolMessage(
                    content=content,
                    tool_call_id=block.call_id,
                    name=block.name,
                    status="error" if block.status == "error" else "success",
                    id=mid if not out else None,
                )
            )
        return out
    content = _content(message, index=i)
    if message.role == "system":
        return [lc.SystemMessage(content=content, id=mid, name=name)]
    if message.role == "user":
        return [lc.HumanMessage(content=content, id=mid, name=name)]
    blocks = message.tool_call_blocks()
    calls = [
        {"name": c.name, "args": dict(c.args), "id": c.id, "type": "tool_call"}
        for c in blocks
        if c.tool_type != INVALID_CALL
    ]
    raw = original_arguments(message)
    invalid = [
        {"type": "invalid_tool_call", "name": c.name, "args": raw.get(c.id, ""), "id": c.id, "error": None}
        for c in blocks
        if c.tool_type == INVALID_CALL
    ]
    return [lc.AIMessage(content=content, tool_calls=calls, invalid_tool_calls=invalid, id=mid, name=name)]


_TOOL_PARTS = frozenset({"text", "text-plain", "reasoning", "image_url", "image", "audio", "video", "file"})
"""The content part types the reader models; it reads a part of any other type as the text `unknown_block` writes."""
_WRITTEN_FIELDS = frozenset({"content", "type", "tool_calls", "invalid_tool_calls", "tool_call_id", "status"})
"""The fields of a LangChain message written anew from what the reader made of it."""


def _refill(message: Message, written: list[BaseMessage]) -> list[BaseMessage]:
    """A ``HumanMessage`` changed in its parts, or a ``ToolMessage`` cut to fit, written anew (``written``) with
    what the change did not touch as the caller sent it: every other field of the caller's message
    (``additional_kwargs``, ``response_metadata``, an ``artifact``), each part the reader keeps as it was read as
    the caller's own part, and each part of a type the reader does not model in its own shape, not as the text it
    was read as (`own_parts_in`). A pointer standing for a cleared result is windowkeeper's own message; an
    ``AIMessage`` is written as it is (its fields say what the model did, which a change may have changed)."""
    record = source_record(message)
    items = record.get("items") if record is not None and record.get("format") == NAME else None
    if not isinstance(items, list) or len(items) != 1 or len(written) != 1 or message.role not in ("user", "tool"):
        return written
    source = items[0]
    data = source.get("data") if isinstance(source, Mapping) else None
    mine = _dump(written[0])
    if not isinstance(data, Mapping) or mine.get("type") != source.get("type"):
        return written
    theirs = data.get("content")
    content = mine["data"].get("content")
    if message.role == "tool":
        results = message.tool_result_blocks()
        try:
            again = _to_message(_from_dicts([source])[0], 0).tool_result_blocks()
        except FormatError:
            return written
        if len(results) != 1 or len(again) != 1:
            return written
        if not cut_from(tool_output_text(results[0].output), tool_output_text(again[0].output)):
            return written
        call = data.get("tool_call_id")
        content = own_parts_in(content, theirs, _TOOL_PARTS, _stand_in, what=f"the ToolMessage of call {call!r}")
    else:
        if not (isinstance(theirs, list) and isinstance(content, list) and len(theirs) == len(content)):
            return written
        try:
            read = _parse_content(theirs, index=0)
        except FormatError:
            return written
        if len(read) != len(message.content):
            return written
        pairs = zip(theirs, content, message.content, read, strict=True)
        content = [own if block == was else new for own, new, block, was in pairs]
    fields = {k: v for k, v in data.items() if k not in _WRITTEN_FIELDS}
    fields.update((k, v) for k, v in mine["data"].items() if k in _WRITTEN_FIELDS)
    fields["content"] = content
    return _from_dicts([{"type": source.get("type"), "data": fields}])


def _stand_in(part: Mapping[str, Any]) -> str:
    """The text the reader reads a part of a type it does not model as (`unknown_block`)."""
    return unknown_block(str(part.get("type")), part).text


# -- LangChain -> ours ----------------------------------------------------------------------------------------


def _parse_media(d: Mapping[str, Any], *, index: int, key: str) -> MediaRef:
    """A media block's source: LangChain 1.x keys (``base64``, ``file_id``, ``url``) or the 0.3 data block's
    (``source_type`` ``base64``/``id``/``url`` with ``data``/``id``/``url``), which LangChain still accepts."""
    mime = d.get("mime_type") if isinstance(d.get("mime_type"), str) else None
    filename = next(
        (
            found
            for holder in (d.get("extras"), d.get("metadata"), d)
            if isinstance(holder, Mapping) and isinstance(found := holder.get("filename"), str)
        ),
        None,
    )
    source = d.get("source_type")
    data = d.get("base64") if isinstance(d.get("base64"), str) else d.get("data") if source == "base64" else None
    if isinstance(data, str):
        return MediaRef(kind="data", data_base64=data, mime_type=mime, filename=filename)
    file_id = d.get("file_id") if isinstance(d.get("file_id"), str) else d.get("id") if source == "id" else None
    if isinstance(file_id, str):
        return MediaRef(kind="file_id", file_id=file_id, mime_type=mime, filename=filename)
    if isinstance(d.get("url"), str):
        ref = media_from_url(d["url"], filename=filename)
        return ref if ref.mime_type or mime is None else ref.model_copy(update={"mime_type": mime})
    raise FormatError(
        "media block needs 'base64', 'file_id' or 'url' (or LangChain 0.3's 'source_type' with 'data', 'id' or 'url')",
        index=index,
        key=key,
    )


def _parse_part(part: Any, *, index: int, key: str) -> ContentBlock:
    if isinstance(part, str):
        return TextBlock(text=part)
    if not isinstance(part, Mapping):
        raise FormatError(f"content part must be a string or dict, got {type(part).__name__}", index=index, key=key)
    ptype = part.get("type")
    if ptype == "text":
        text = part.get("text")
        if not isinstance(text, str):
            raise FormatError("text block needs a string 'text'", index=index, key=f"{key}.text")
        return TextBlock(text=text)
    if ptype == "text-plain":
        return DocumentBlock(text=str(part.get("text", "")))
    if ptype == "reasoning":
        extras: Mapping[str, Any] = part["extras"] if isinstance(part.get("extras"), Mapping) else {}
        return ReasoningBlock(
            text=str(part.get("reasoning", "")),
            id=part.get("id") if isinstance(part.get("id"), str) else None,
            summary=extras.get("summary"),
            signature=extras.get("signature"),
        )
    if ptype == "image_url":
        raw = part.get("image_url")
        url = raw.get("url") if isinstance(raw, Mapping) else raw
        if not isinstance(url, str) or not url:
            raise FormatError("image_url part needs a 'url'", index=index, key=f"{key}.image_url")
        return ImageBlock(media=media_from_url(url))
    if ptype == "image":
        return ImageBlock(media=_parse_media(part, index=index, key=key))
    if ptype == "audio":
        return AudioBlock(media=_parse_media(part, index=index, key=key))
    if ptype == "video":
        return VideoBlock(media=_parse_media(part, index=index, key=key))
    if ptype == "file" and part.get("source_type") == "text":  # LangChain 0.3: a plain-text file given inline
        return DocumentBlock(text=str(part.get("text", "")))
    if ptype == "file":
        return DocumentBlock(media=_parse_media(part, index=index, key=key))
    if not isinstance(ptype, str) or not ptype:
        raise FormatError(f"content block has no 'type', got {ptype!r}", index=index, key=f"{key}.type")
    # a provider's own block (Anthropic ``tool_use``/``thinking``, ``server_tool_call``...): kept as its JSON
    return unknown_block(ptype, part)


def _parse_content(content: Any, *, index: int) -> list[ContentBlock]:
    if isinstance(content, str):
        return [TextBlock(text=content)] if content else []
    if not isinstance(content, list):
        raise FormatError(f"content must be a string or list, got {type(content).__name__}", index=index, key="content")
    return [_parse_part(p, index=index, key=f"content[{j}]") for j, p in enumerate(content)]


@reader("LangChain messages")
def langchain_message_to_message(lc_message: Any, index: int = 0) -> Message:
    """One LangChain message as ours; its LangChain ``id`` is kept, else one is derived from content and index."""
    message = _to_message(lc_message, index)
    _assign(IdChain(), message, lc_message, index)
    return message


def _assign(chain: IdChain, message: Message, lc_message: Any, index: int) -> None:
    lc_id = getattr(lc_message, "id", None)
    chain.assign([message], lc_message, index, provided=lc_id if isinstance(lc_id, str) and lc_id else None)


def _repeats_a_call(part: Any, ids: set[Any]) -> bool:
    """Whether a content part is a provider's ``tool_use`` copy of one of the message's ``tool_calls``."""
    return isinstance(part, Mapping) and part.get("type") == "tool_use" and part.get("id") in ids


def _to_message(lc_message: Any, index: int) -> Message:
    # built as `read_message` builds them (no second validation of blocks made and checked here), with the fields
    # set a ``Message(role=..., content=..., [metadata=...,] message_id=PENDING_ID)`` call records: constructing
    # was a third of reading a LangChain message; the id is assigned by the caller (`_assign`)
    lc = _lc()
    name = getattr(lc_message, "name", None)
    if isinstance(lc_message, lc.ToolMessage):
        output = lc_message.content
        media: list[ContentBlock] = []
        if not isinstance(output, str):
            parts = _parse_content(output, index=index)
            output = "".join(b.text for b in parts if isinstance(b, TextBlock))
            media = [b for b in parts if isinstance(b, RESULT_MEDIA)]  # a screenshot the tool returned
        block = ToolResultBlock(
            call_id=lc_message.tool_call_id,
            output=output,
            status="error" if lc_message.status == "error" else "completed",
            name=name,
        )
        return read_message("tool", [block, *media], {}, metadata_given=False)
    metadata: dict[str, Any] = {"name": name} if name else {}
    given = lc_message.content
    if isinstance(lc_message, lc.AIMessage) and isinstance(given, list) and lc_message.tool_calls:
        # a provider's copy of a call in the content (ChatAnthropic's ``tool_use`` block) is the call `tool_calls`
        # already holds: read once, or its arguments would count twice (the message still passes through whole)
        ids = {tc.get("id") for tc in lc_message.tool_calls}
        given = [b for b in given if not _repeats_a_call(b, ids)]
    content = _parse_content(given, index=index)
    if isinstance(lc_message, lc.SystemMessage):
        return read_message("system", content, metadata, metadata_given=bool(name))
    if isinstance(lc_message, lc.HumanMessage):
        return read_message("user", content, metadata, metadata_given=bool(name))
    if isinstance(lc_message, lc.AIMessage):
        reasoning = lc_message.additional_kwargs.get("reasoning_content")
        if isinstance(reasoning, str) and reasoning:
            content.insert(0, ReasoningBlock(text=reasoning))
        calls: list[ToolCallBlock] = []
        for j, tc in enumerate(lc_message.tool_calls):
            if not tc.get("id"):
                raise FormatError("tool call has no 'id'", index=index, key=f"tool_calls[{j}].id")
            args = json_args(tc.get("args") or {}, index=index, key=f"tool_calls[{j}].args")
            calls.append(ToolCallBlock(id=str(tc["id"]), name=tc["name"], args=args))
        # calls whose arguments did not parse: LangChain still sends them to the provider (after the valid ones),
        # and the tool message answering one (usually an error) must stay with it
        raw: dict[str, str] = {}
        for tc in lc_message.invalid_tool_calls:
            if tc.get("id"):
                call_id = str(tc["id"])
                calls.append(ToolCallBlock(id=call_id, name=tc.get("name") or "", tool_type=INVALID_CALL))
                raw[call_id] = tc["args"] if isinstance(tc.get("args"), str) else ""
        content.extend(calls)
        return read_message(
            "assistant",
            content,
            metadata,
            tools_calls=openai_tools_calls(calls, raw) if calls else None,
            calls_given=True,
            metadata_given=bool(name),
        )
    if isinstance(lc_message, lc.BaseMessage):  # ChatMessage(role=...), FunctionMessage...: kept as a user turn
        return Message(
            role="user",
            content=[unknown_block(f"message {lc_message.type}", _dump(lc_message))],
            metadata={"langchain_type": lc_message.type},
            message_id=PENDING_ID,
        )
    raise FormatError(
        f"unsupported LangChain message type {type(lc_message).__name__}; expected SystemMessage, HumanMessage, "
        "AIMessage or ToolMessage",
        index=index,
        key="type",
    )


def _dump(lc_message: Any) -> dict[str, Any]:
    """A LangChain message as the plain dict ``messages_from_dict`` rebuilds it from (class and every field)."""
    from langchain_core.messages import message_to_dict

    return dict(message_to_dict(lc_message))


def _from_dicts(items: Sequence[Any]) -> list[BaseMessage]:
    from langchain_core.messages import messages_from_dict

    return list(messages_from_dict([dict(item) for item in items]))


@reader("LangChain messages")
def from_langchain(messages: Sequence[Any], *, keep_source: bool = True) -> list[Message]:
    """LangChain messages as ours, one for one.

    LangChain ``id``s are kept; a message without one gets an id derived from its content, index and the previous
    message's id, so converting the same list again gives the same ids.

    ``keep_source`` (the default) records on each message the item(s) it was read from, as the format
    object's ``read`` does, so that ``to_langchain`` (``passthrough`` is on by default) writes a message unchanged
    since as those very items: every key the caller sent, unknown ones included. Pass False for messages that are
    to be written anew in windowkeeper's own shape.
    """
    sources: list[Source] | None = [] if keep_source else None
    out = _read(messages, offset=0, previous=None, sources=sources)
    LANGCHAIN.keep_all(sources or ())
    return out


def _read(
    items: Sequence[Any], *, offset: int, previous: str | None, sources: list[Source] | None = None
) -> list[Message]:
    chain = IdChain(previous, sources)
    out: list[Message] = []
    for i, lc_message in enumerate(items, start=offset):
        message = _to_message(lc_message, i)
        _assign(chain, message, lc_message, i)
        out.append(message)
    return out


@reader("LangChain messages")
def read_items(
    items: Sequence[Any], *, offset: int = 0, previous: str | None = None, sources: list[Source] | None = None
) -> list[Message]:
    """Messages ``offset``, ``offset + 1``, ... of a longer list, as `from_langchain` of the whole list reads them
    when ``previous`` is the id of message ``offset - 1``."""
    return _read(items, offset=offset, previous=previous, sources=sources)


_LC_CLASSES: dict[type, bool] = {}
"""Whether each class seen is a ``langchain_core`` message class (the shape check asks per item read)."""


def is_langchain(item: Any) -> bool:
    """Whether ``item`` is a ``langchain_core`` message (checked by class module: LangChain may not be installed)."""
    kind = type(item)
    known = _LC_CLASSES.get(kind)
    if known is None:
        known = any(cls.__module__.startswith("langchain_core.messages") for cls in kind.__mro__)
        if len(_LC_CLASSES) < 1024:  # classes made at run time (pydantic's create_model) must not grow it forever
            _LC_CLASSES[kind] = known
    return known


class LangChainFormat(ProviderFormat):
    """``langchain_core.messages`` objects: one per message, the system text a leading ``SystemMessage``."""

    name = NAME
    round_trip = RoundTripRules(
        tool_status=True,
        tool_name="keep",
        reasoning_fields=frozenset({"summary", "id", "signature"}),
        keep_media_mime_on_ref=True,
    )
    title = FORMAT
    expected = "langchain_core message objects such as HumanMessage('hi'), AIMessage, ToolMessage"
    system_in_list = True
    priority = 0  # checked first: a LangChain message dumps to a dict with a ``type`` key

    def read_items(
        self, items: Sequence[Any], *, offset: int, previous: str | None, sources: list[Source] | None
    ) -> list[Message]:
        return read_items(items, offset=offset, previous=previous, sources=sources)

    def keep(self, source: Any, messages: Sequence[Message]) -> None:
        keep_source(self.name, messages, [_dump(source)])

    def read_system(self, system: Any) -> str | None:
        if is_langchain(system):
            return (
                "\n\n".join(m.text() for m in from_langchain([system], keep_source=False) if m.role == "system") or None
            )
        return super().read_system(system)

    def write_messages(self, messages: Sequence[Message], *, options: Mapping[str, Any]) -> list[Any]:
        return to_langchain(messages, passthrough=options.get("passthrough", True))

    def write(self, system: str | None, messages: Sequence[Message], **options: Any) -> tuple[list[Any], Any]:
        return to_langchain(
            self.laid_out(system, messages, options), passthrough=options.get("passthrough", True)
        ), None

    def laid_out(self, system: str | None, messages: Sequence[Message], options: Mapping[str, Any]) -> list[Message]:
        """The system zone as the messages it was joined from (see `lead_written`), or as one system message of the
        whole text, then ``messages``: each message is written alone (one LangChain message, or one per tool result),
        so `write` gives what writing each of these in turn gives."""
        lead = options.get("system_messages")
        if lead is not None and options.get("passthrough", True):
            return in_place(lead, messages, options.get("system_anchors"))
        if not system:
            return list(messages)
        # ``system_id``: the id the caller's prompt layer gives its system message (stable for the text); the head
        # has no source, so it is written anew whether pass-through is on or not
        head = Message.text_message(system, role="system", message_id=options.get("system_id"), timestamp=None)
        return [head, *messages]

    def distinctive(self, item: Any) -> str | None:
        return "type" if is_langchain(item) else None

    def foreign(self, item: Any) -> tuple[str, str | None] | None:
        return None if is_langchain(item) else ("type", None)

    def tool(self, name: str, description: str, parameters: Mapping[str, Any]) -> dict[str, Any]:
        # what ``bind_tools`` and ``create_agent(tools=...)`` take as a plain schema (OpenAI function shape)
        return {
            "type": "function",
            "function": {"name": name, "description": description, "parameters": dict(parameters)},
        }


LANGCHAIN = register_format(LangChainFormat())
"""The LangChain format object."""
