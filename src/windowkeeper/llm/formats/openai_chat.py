"""Conversion between `Message` lists and OpenAI Chat Completions message dicts.

The mapping is chosen so that a transcript loaded from Chat Completions JSON converts back byte-for-byte: the
original ``function.arguments`` strings are kept in `Message.tools_calls` and reused while they still match the
parsed arguments, a single text part is written as a plain string, and keys we do not model are kept in
``metadata["openai_extra"]`` rather than dropped. See ``docs/formats.md`` for the normalization rules.
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
)
from ...boundary import clean_text
from ...errors import FormatError
from ...messages import Message, participant_name
from ._common import (
    CUSTOM_INPUT,
    PENDING_ID,
    IdChain,
    Source,
    arguments_for,
    as_list,
    as_mapping,
    audio_format,
    audio_mime,
    call_block,
    data_uri,
    error_text,
    is_custom_call,
    is_dropped,
    media_from_url,
    media_kind,
    messages_input,
    original_arguments,
    parse_args,
    plain,
    read_message,
    reader,
    require_str,
    resolve_data_block,
    result_block,
    result_text,
    split_file_data,
    tool_results,
    unknown_block,
    unknown_part,
    unsupported,
)
from ._source import WriteMemo, write_items
from .registry import ProviderFormat, builtins_only, content_part_types, register_format
from .rules import RoundTripRules
from .wire import (
    OpenAIChatAssistantMessage,
    OpenAIChatDeveloperMessage,
    OpenAIChatFunctionMessage,
    OpenAIChatMessage,
    OpenAIChatSystemMessage,
    OpenAIChatTextPart,
    OpenAIChatToolMessage,
    OpenAIChatUserMessage,
    OpenAIChatUserPart,
)

if TYPE_CHECKING:
    from openai.types.chat.chat_completion_content_part_param import FileFile

logger = logging.getLogger(__name__)

FORMAT = "OpenAI Chat Completions"
NAME = "openai_chat"
_NOT_TEXT = (ReasoningBlock, ToolCallBlock)
"""What an assistant message's text leaves out (class tuple built once: a union per block cost more)."""
_KNOWN_KEYS = frozenset({"role", "content", "name", "tool_calls", "tool_call_id", "reasoning_content"})
# Keys a Chat Completions *reply* carries with null/empty values; they hold nothing worth keeping.
_REPLY_KEYS = frozenset({"refusal", "annotations", "audio", "function_call"})
_LEGACY_CALL = "function_call"
"""``tool_type`` of a call made with the API's first function calling: an assistant ``function_call`` answered by
the next message, of role ``function``. Neither carries an id, so the call gets one from its place in the list
(`legacy_call_id`) and the answer names the place before its own."""


def legacy_call_id(index: int) -> str:
    """The id given to the ``function_call`` of the assistant message at ``index`` (and to the answer after it)."""
    return f"legacy_function_call_{index}"


# -- ours -> OpenAI -------------------------------------------------------------------------------------------


def _user_part(block: ContentBlock, *, index: int, key: str) -> OpenAIChatUserPart:
    block = resolve_data_block(block)
    if isinstance(block, TextBlock):
        return {"type": "text", "text": block.text}
    if isinstance(block, ErrorBlock):
        return {"type": "text", "text": error_text(block)}
    if isinstance(block, ImageBlock):
        kind = media_kind(block.media)
        if kind == "url" and block.media.url:
            return {"type": "image_url", "image_url": {"url": block.media.url}}
        if kind == "data":
            return {"type": "image_url", "image_url": {"url": data_uri(block.media, default_mime="image/png")}}
        if kind == "file_id":
            raise FormatError(
                "Chat Completions images need a URL or base64 data, not a file id; use the Responses API for file ids",
                index=index,
                key=key,
            )
        raise FormatError("media reference holds no url, file id or data", index=index, key=key)
    if isinstance(block, AudioBlock):
        if media_kind(block.media) != "data" or block.media.data_base64 is None:
            raise FormatError("Chat Completions audio must be inline base64 data", index=index, key=key)
        return {
            "type": "input_audio",
            "input_audio": {"data": block.media.data_base64, "format": audio_format(block.media, index=index, key=key)},
        }
    if isinstance(block, DocumentBlock) and block.media is None and block.text is not None:
        return {"type": "text", "text": block.text}
    if isinstance(block, DocumentBlock) and block.media is not None:
        media = block.media
        kind = media_kind(media)
        file: FileFile = {}
        if kind == "file_id" and media.file_id:
            file["file_id"] = media.file_id
        elif kind == "data":
            file["file_data"] = data_uri(media, default_mime="application/pdf")
        else:
            raise FormatError("Chat Completions files need a file id or base64 data, not a URL", index=index, key=key)
        if media.filename:
            file["filename"] = media.filename
        return {"type": "file", "file": file}
    raise unsupported(block, FORMAT, "user", index=index, key=key)


def _text_content(parts: list[OpenAIChatTextPart]) -> str | list[OpenAIChatTextPart]:
    """A lone text part is written as a plain string, the form most transcripts use."""
    return parts[0]["text"] if len(parts) == 1 else parts


def _user_content(parts: list[OpenAIChatUserPart]) -> str | list[OpenAIChatUserPart]:
    """`_text_content` for a user message, whose parts may also be media."""
    if len(parts) == 1:
        first = parts[0]
        if first["type"] == "text":
            return first["text"]
    return parts


def _text_only(message: Message, role: str, *, index: int) -> list[OpenAIChatTextPart]:
    parts: list[OpenAIChatTextPart] = []
    for j, block in enumerate(message.content):
        if is_dropped(block) or (role == "assistant" and isinstance(block, _NOT_TEXT)):
            continue
        if isinstance(block, TextBlock):
            parts.append({"type": "text", "text": block.text})
        elif isinstance(block, ErrorBlock):
            parts.append({"type": "text", "text": error_text(block)})
        else:
            raise unsupported(block, FORMAT, role, index=index, key=f"content[{j}]")
    return parts


def _system(message: Message, *, index: int) -> OpenAIChatSystemMessage | OpenAIChatDeveloperMessage:
    parts = _text_only(message, "system", index=index)
    content = _text_content(parts) if parts else ""
    name = participant_name(message)
    if message.metadata.get("openai_role") == "developer":
        developer: OpenAIChatDeveloperMessage = {"role": "developer", "content": content}
        if name:
            developer["name"] = name
        return developer
    system: OpenAIChatSystemMessage = {"role": "system", "content": content}
    if name:
        system["name"] = name
    return system


def message_to_openai_chat(
    message: Message, *, index: int = 0, include_reasoning: bool = True
) -> list[OpenAIChatMessage]:
    """One of our messages as Chat Completions dicts (a tool message with several results yields several)."""
    role = message.role
    name = participant_name(message)
    if role == "system":
        return [_system(message, index=index)]
    if role == "user":
        parts = [
            _user_part(b, index=index, key=f"content[{j}]") for j, b in enumerate(message.content) if not is_dropped(b)
        ]
        user: OpenAIChatUserMessage = {"role": "user", "content": _user_content(parts) if parts else ""}
        if name:
            user["name"] = name
        return [user]
    if role == "assistant":
        texts = _text_only(message, role, index=index)
        calls = message.tool_call_blocks()
        out: OpenAIChatAssistantMessage = {"role": "assistant"}
        extra = message.metadata.get("openai_extra")
        refusal = extra.get("refusal") if isinstance(extra, Mapping) else None
        if isinstance(refusal, str) and [t["text"] for t in texts] == [refusal]:
            texts = []  # the refusal read as the message's text (`_to_message`): written as the refusal alone
        out["content"] = _text_content(texts) if texts else (None if calls or isinstance(refusal, str) else "")
        if isinstance(refusal, str):
            out["refusal"] = refusal
        if include_reasoning:
            reasoning = message.reasoning_text()
            if reasoning:
                out["reasoning_content"] = reasoning
        if len(calls) == 1 and calls[0].tool_type == _LEGACY_CALL:
            call = calls[0]
            out["function_call"] = {"name": call.name, "arguments": arguments_for(call, original_arguments(message))}
        elif calls:
            originals = original_arguments(message)
            out["tool_calls"] = [
                {"id": c.id, "type": "custom", "custom": {"name": c.name, "input": c.args[CUSTOM_INPUT]}}
                if is_custom_call(c)
                else {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": arguments_for(c, originals)},
                }
                for c in calls
            ]
        if name:
            out["name"] = name
        return [out]
    results: list[OpenAIChatMessage] = []
    legacy = message.metadata.get("openai_role") == "function"
    for block in tool_results(message, index=index, hint="; put other content in a user message"):
        if legacy:
            answer: OpenAIChatFunctionMessage = {
                "role": "function",
                "name": block.name or "",
                "content": result_text(block),
            }
            results.append(answer)
            continue
        item: OpenAIChatToolMessage = {
            "role": "tool",
            "tool_call_id": block.call_id,
            "content": result_text(block),
        }
        results.append(item)
    return results


def to_openai_chat(
    messages: Sequence[Message],
    *,
    include_reasoning: bool = True,
    passthrough: bool = True,
    memo: WriteMemo | None = None,
) -> list[OpenAIChatMessage]:
    """Our messages as a Chat Completions ``messages`` list (typed for ``chat.completions.create``; see `wire`).

    ``include_reasoning`` writes reasoning as ``reasoning_content`` (read back by this module and by
    DeepSeek-style servers); turn it off for endpoints that reject unknown keys. ``passthrough`` writes each
    message read with its source kept (`from_openai_chat`, `CHAT.read`) and unchanged since as the very item it
    was read from. It is on by default, so ``to_openai_chat(from_openai_chat(items))`` gives the caller's items
    back; a message changed since, or read from another format, is written anew (a warning names the fields a
    conversion loses). Pass False to write every message in windowkeeper's own shape.
    ``memo`` carries what was written from one write of a conversation to its next (see `WriteMemo`).
    """
    return write_items(
        messages,
        NAME,
        lambda i, m: message_to_openai_chat(m, index=i, include_reasoning=include_reasoning),
        passthrough=passthrough,
        part_type="text",
        report=CHAT.report,
        memo=memo,
        refill=CHAT.refill,
    )


# -- OpenAI -> ours -------------------------------------------------------------------------------------------


def _parse_part(part: Any, *, index: int, key: str, role: str) -> ContentBlock:
    if isinstance(part, str):
        return TextBlock(text=part)
    d = as_mapping(part, index=index, key=key, what="content part")
    ptype = d.get("type")
    if ptype == "text":
        return TextBlock(text=require_str(d, "text", index=index, key=f"{key}.text", empty_ok=True))
    if ptype == "refusal" and role == "assistant":
        return TextBlock(text=require_str(d, "refusal", index=index, key=f"{key}.refusal", empty_ok=True))
    if role == "user":
        if ptype == "image_url":
            raw = d.get("image_url")
            url = raw if isinstance(raw, str) else None
            if isinstance(raw, Mapping):
                url = require_str(raw, "url", index=index, key=f"{key}.image_url.url")
            if not url:
                raise FormatError("image_url part needs a 'url'", index=index, key=f"{key}.image_url")
            return ImageBlock(media=media_from_url(url))
        if ptype == "input_audio":
            audio = as_mapping(d.get("input_audio"), index=index, key=f"{key}.input_audio", what="input_audio")
            data = require_str(audio, "data", index=index, key=f"{key}.input_audio.data", empty_ok=True)
            mime = audio_mime(audio.get("format"), index=index, key=f"{key}.input_audio.format")
            return AudioBlock(media=MediaRef(kind="data", data_base64=data, mime_type=mime))
        if ptype == "file":
            file = as_mapping(d.get("file"), index=index, key=f"{key}.file", what="file")
            filename = file.get("filename") if isinstance(file.get("filename"), str) else None
            if isinstance(file.get("file_id"), str):
                return DocumentBlock(media=MediaRef(kind="file_id", file_id=file["file_id"], filename=filename))
            file_data = require_str(file, "file_data", index=index, key=f"{key}.file.file_data")
            file_mime, data = split_file_data(file_data)
            return DocumentBlock(media=MediaRef(kind="data", data_base64=data, mime_type=file_mime, filename=filename))
    expected = "text, image_url, input_audio or file for user; text or refusal for assistant"
    return unknown_part(d, expected, index=index, key=key)


def _parse_content(d: Mapping[str, Any], role: str, *, index: int) -> list[ContentBlock]:
    if "content" not in d:
        if role == "assistant":
            return []
        raise FormatError(f"missing required 'content' in a {role!r} message", index=index, key="content")
    content = d["content"]
    if content is None:
        if role == "assistant":
            return []
        raise FormatError(f"'content' of a {role!r} message must not be null", index=index, key="content")
    if isinstance(content, str):
        return [TextBlock(text=content)]
    parts = as_list(content, index=index, key="content", what="'content'", text_too=True)
    return [_parse_part(p, index=index, key=f"content[{j}]", role=role) for j, p in enumerate(parts)]


def _ascii(*values: Any) -> bool:
    """Whether every value is a str (not a subclass) of ASCII only: what `clean_json` returns unchanged."""
    return all(type(v) is str and v.isascii() for v in values)


def _parse_tool_calls(raw: Any, *, index: int) -> tuple[list[ToolCallBlock], list[dict[str, Any]], bool]:
    """The call blocks, the calls as `Message.tools_calls` keeps them, and whether those hold ASCII strings only
    (so `read_message` need not walk them again with `clean_json`, which would return them unchanged)."""
    calls = as_list(raw, index=index, key="tool_calls", what="'tool_calls'")
    blocks: list[ToolCallBlock] = []
    native: list[dict[str, Any]] = []
    clean = True
    for j, entry in enumerate(calls):
        key = f"tool_calls[{j}]"
        tc = as_mapping(entry, index=index, key=key, what="tool call")
        call_id = require_str(tc, "id", index=index, key=f"{key}.id")
        ttype = tc.get("type")
        if ttype == "custom":  # a custom (freeform) tool: its input is one string, not JSON arguments
            custom = as_mapping(tc.get("custom"), index=index, key=f"{key}.custom", what="'custom'")
            name = require_str(custom, "name", index=index, key=f"{key}.custom.name")
            text = require_str(custom, "input", index=index, key=f"{key}.custom.input", empty_ok=True)
            blocks.append(ToolCallBlock(id=call_id, name=name, args={CUSTOM_INPUT: text}, tool_type="custom"))
            native.append({"id": call_id, "type": "custom", "custom": {"name": name, "input": text}})
            clean = clean and _ascii(call_id, name, text)
            continue
        fn = as_mapping(tc.get("function"), index=index, key=f"{key}.function", what="'function'")
        name = require_str(fn, "name", index=index, key=f"{key}.function.name")
        arguments = fn.get("arguments")
        args = parse_args(arguments, index=index, key=f"{key}.function.arguments")
        blocks.append(call_block(call_id, name, args, ttype if ttype not in (None, "function") else None))
        kind = ttype or "function"
        native.append({"id": call_id, "type": kind, "function": {"name": name, "arguments": arguments}})
        clean = clean and _ascii(call_id, kind, name, arguments)
    return blocks, native, clean


def _tool_output(d: Mapping[str, Any], *, index: int) -> str:
    content = d.get("content")
    if content is None:
        raise FormatError("missing required 'content' in a 'tool' message", index=index, key="content")
    if isinstance(content, str):
        return content
    parts = as_list(content, index=index, key="content", what="'content'", text_too=True)
    texts: list[str] = []
    for j, part in enumerate(parts):
        p = as_mapping(part, index=index, key=f"content[{j}]", what="content part")
        if p.get("type") != "text":
            texts.append(unknown_block(str(p.get("type")), p).text)
            continue
        texts.append(require_str(p, "text", index=index, key=f"content[{j}].text", empty_ok=True))
    return "".join(texts)


def _legacy_answer(msg: Mapping[str, Any], index: int) -> Message:
    """A ``function`` message: the answer to the legacy ``function_call`` of the message before it, read as a tool
    result of that call (so a trim keeps the two together) and written back in its own role."""
    block = ToolResultBlock(
        call_id=legacy_call_id(index - 1), output=_tool_output(msg, index=index), name=msg["name"] or None
    )
    unknown = {k: v for k, v in msg.items() if k not in ("role", "name", "content")}
    return read_message("tool", [block], {"openai_role": "function", **({"openai_extra": unknown} if unknown else {})})


@reader("OpenAI chat messages")
def openai_chat_message_to_message(d: Any, index: int = 0) -> Message:
    """One Chat Completions message (request dict, reply ``choices[i].message`` dict or SDK object) as ours.

    Its id is derived from its content and ``index`` (the same input always gives the same id).
    """
    message = _to_message(d, index)
    IdChain().assign([message], d, index)
    return message


def _to_message(d: Any, index: int) -> Message:
    msg = as_mapping(d, index=index, key="role", what="message")
    if "role" not in msg:
        raise FormatError("missing required 'role'", index=index, key="role")
    role = msg["role"]
    if not isinstance(role, str) or not role:
        raise FormatError(
            f"'role' must be a non-empty string (system, developer, user, assistant or tool), got {role!r}",
            index=index,
            key="role",
        )
    if role == "function" and index > 0 and isinstance(msg.get("name"), str):
        return _legacy_answer(msg, index)
    if role not in ("system", "developer", "user", "assistant", "tool"):
        # a role of another API generation or provider (or a ``function`` answer with nothing before it): kept as
        # a user turn holding its JSON, and passed through unchanged
        unknown = [unknown_block(f"role {role}", msg)]
        return Message(role="user", content=unknown, metadata={"openai_role": role}, message_id=PENDING_ID)
    metadata: dict[str, Any] = {}
    if role == "developer":
        metadata["openai_role"] = "developer"
        role = "system"
    name = msg.get("name")
    if name is not None and not isinstance(name, str):
        raise FormatError(f"'name' must be a string, got {type(name).__name__}", index=index, key="name")
    legacy = msg.get("function_call") if role == "assistant" and not msg.get("tool_calls") else None
    # most messages carry modelled keys only (one set operation in C); the rest are sorted key by key
    extra = (
        {}
        if msg.keys() <= _KNOWN_KEYS
        else {
            k: v
            for k, v in msg.items()
            if k not in _KNOWN_KEYS and not (k in _REPLY_KEYS and not v) and not (legacy and k == _LEGACY_CALL)
        }
    )
    if extra:
        metadata["openai_extra"] = extra
    if role == "tool":
        call_id = require_str(msg, "tool_call_id", index=index)
        block = result_block(call_id, _tool_output(msg, index=index), name or None)
        return read_message("tool", [block], metadata)
    if name:
        metadata["name"] = name
    content = _parse_content(msg, role, index=index)
    tools_calls: list[dict[str, Any]] | None = None
    calls_clean = False
    if role == "assistant":
        refusal = msg.get("refusal")
        if isinstance(refusal, str) and refusal and not content:
            # a refusal is what the model said (``content`` is null beside it): its text, which every format carries
            # and the window counts; the writer puts it back as the refusal (`_refusal_only`)
            content.append(TextBlock(text=refusal))
        reasoning = msg.get("reasoning_content")
        if reasoning is not None and not isinstance(reasoning, str):
            raise FormatError("'reasoning_content' must be a string", index=index, key="reasoning_content")
        if msg.get("tool_calls"):
            calls, tools_calls, calls_clean = _parse_tool_calls(msg["tool_calls"], index=index)
            content.extend(calls)
        elif legacy:
            fn = as_mapping(legacy, index=index, key=_LEGACY_CALL, what="'function_call'")
            called = require_str(fn, "name", index=index, key=f"{_LEGACY_CALL}.name")
            args = parse_args(fn.get("arguments"), index=index, key=f"{_LEGACY_CALL}.arguments")
            call_id = legacy_call_id(index)
            content.append(ToolCallBlock(id=call_id, name=called, args=args, tool_type=_LEGACY_CALL))
            tools_calls = [{"id": call_id, "type": _LEGACY_CALL, "function": dict(fn)}]
        if reasoning:
            content.insert(0, ReasoningBlock(text=reasoning))
    elif msg.get("tool_calls"):
        raise FormatError(f"only assistant messages may carry tool_calls, not {role!r}", index=index, key="tool_calls")
    return read_message(role, content, metadata, tools_calls=tools_calls, calls_given=True, calls_clean=calls_clean)


@reader("OpenAI chat messages")
def from_openai_chat(messages: Any, *, keep_source: bool = True) -> list[Message]:
    """Chat Completions messages (a list, or one reply message) as our messages, one for one.

    Ids are derived from each message's content, its index and the previous message's id, so converting the same
    list again gives the same ids (see `IdChain`).

    ``keep_source`` (the default) records on each message the item(s) it was read from, as the format
    object's ``read`` does, so that ``to_openai_chat`` (``passthrough`` is on by default) writes a message unchanged
    since as those very items: every key the caller sent, unknown ones included. Pass False for messages that are
    to be written anew in windowkeeper's own shape.
    """
    sources: list[Source] | None = [] if keep_source else None
    out = _read(messages_input(messages, what="OpenAI chat messages"), offset=0, previous=None, sources=sources)
    CHAT.keep_all(sources or ())
    return out


def _read(
    items: Sequence[Any], *, offset: int, previous: str | None, sources: list[Source] | None = None
) -> list[Message]:
    chain = IdChain(previous, sources)
    out: list[Message] = []
    for i, d in enumerate(items, start=offset):
        message = _to_message(d, i)
        chain.assign([message], d, i)
        out.append(message)
    return out


@reader("OpenAI chat messages")
def read_items(
    items: Sequence[Any], *, offset: int = 0, previous: str | None = None, sources: list[Source] | None = None
) -> list[Message]:
    """Messages ``offset``, ``offset + 1``, ... of a longer list: what `from_openai_chat` of the whole list gives for
    them when ``previous`` is the id of message ``offset - 1`` (for reading only the new tail of a growing list)."""
    return _read(items, offset=offset, previous=previous, sources=sources)


class OpenAIChatFormat(ProviderFormat):
    """OpenAI Chat Completions ``messages``: one item per message, the system text a leading system message."""

    parts_key = "content"
    name = NAME
    round_trip = RoundTripRules(
        reasoning="merge_front",
        empty_is_blank_text=True,
        calls_last=True,
        default_media_mime=True,
        canonical_audio_mime=True,
        text_documents_as_text=True,
    )
    priority = 30
    title = FORMAT
    expected = (
        "Chat Completions messages such as {'role': 'user', 'content': 'hi'} "
        "(roles system, developer, user, assistant with tool_calls, tool with tool_call_id)"
    )
    system_in_list = True
    output_parts = frozenset({"text"})

    def output_key(self, item: Mapping[str, Any]) -> str | None:
        return "content" if item.get("role") == "tool" else None

    def output_text(self, item: Mapping[str, Any], key: str) -> str | None:
        # a string output is read as it is, into a `ToolResultBlock` (whose validation applies `clean_text`)
        value = item.get(key)
        return clean_text(value) if isinstance(value, str) else None

    def modelled_keys(self, item: Mapping[str, Any]) -> frozenset[str]:
        return _KNOWN_KEYS

    def read_items(
        self, items: Sequence[Any], *, offset: int, previous: str | None, sources: list[Source] | None
    ) -> list[Message]:
        return read_items(items, offset=offset, previous=previous, sources=sources)

    def write_messages(self, messages: Sequence[Message], *, options: Mapping[str, Any]) -> list[Any]:
        return to_openai_chat(
            messages, include_reasoning=False, passthrough=options.get("passthrough", True), memo=options.get("memo")
        )

    def write(self, system: str | None, messages: Sequence[Message], **options: Any) -> tuple[list[Any], Any]:
        written = self.lead_written(messages, options)
        if written is not None:
            return written, None
        out = self.write_messages(messages, options=options)
        if system:
            head: OpenAIChatSystemMessage | OpenAIChatDeveloperMessage = (
                {"role": "developer", "content": system}
                if options.get("developer")
                else {"role": "system", "content": system}
            )
            out.insert(0, head)
        return out, None

    def distinctive(self, item: Any) -> str | None:
        d = plain(item)
        if not isinstance(d, Mapping) or "type" in d or "parts" in d:
            return None
        for key in ("tool_calls", "tool_call_id"):
            if key in d:
                return key
        return "role" if d.get("role") in ("tool", "system", "developer") else None

    def tolerates(self, item: Any, key: str) -> bool:
        # the Chat reader keeps keys it does not model, so only another format's distinctive keys are refused
        return False

    def foreign(self, item: Any) -> tuple[str, str | None] | None:
        # a plain message (a dict without ``type`` or ``parts``, its content no list of parts, not a Gemini
        # ``model`` turn) has none of the built-in formats' distinctive keys: said in one test, not four
        if (
            type(item) is dict
            and "type" not in item
            and "parts" not in item
            and not isinstance(item.get("content"), list)
            and item.get("role") != "model"
            and builtins_only()
        ):
            return None
        return super().foreign(item)

    def tool(self, name: str, description: str, parameters: Mapping[str, Any]) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {"name": name, "description": description, "parameters": dict(parameters)},
        }


CHAT = register_format(OpenAIChatFormat())
"""The OpenAI Chat Completions format object."""

_ = content_part_types
