"""Conversion between `Message` lists and OpenAI Responses API input items.

In the Responses API one assistant turn is several items: ``reasoning``, ``message`` and ``function_call``
items in output order. Writing splits an assistant message into those items in block order; reading merges a
run of consecutive assistant-side items back into one assistant message.

System messages are written as ``{"type": "message", "role": "system"}`` items in place by default (the API
accepts them anywhere in ``input`` and positions round-trip); ``system="instructions"`` instead joins them into
the ``instructions`` string, which the API does not carry over between chained responses.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Mapping, Sequence
from typing import Any, Literal, cast

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
    tool_output_text,
)
from ...boundary import clean_text
from ...errors import FormatError
from ...messages import WHOLE_KEY, Message
from ._common import (
    CUSTOM_INPUT,
    PENDING_ID,
    IdChain,
    ReasoningMode,
    Source,
    arguments_for,
    as_list,
    as_mapping,
    audio_format,
    audio_mime,
    check_mode,
    data_uri,
    error_text,
    is_custom_call,
    is_dropped,
    json_args,
    keep_reasoning,
    media_from_url,
    media_kind,
    messages_input,
    original_arguments,
    parse_args,
    plain,
    provided_id,
    read_message,
    reader,
    require_str,
    resolve_data_block,
    result_text,
    split_file_data,
    system_text,
    tool_results_with_media,
    unknown_block,
    unknown_part,
    unsupported,
)
from ._source import WriteMemo, original_items, source_record, write_items
from .registry import ProviderFormat, content_part_types, in_place, register_format
from .rules import RoundTripRules
from .wire import (
    ResponsesComputerCallOutput,
    ResponsesInputFile,
    ResponsesInputImage,
    ResponsesInputMessage,
    ResponsesInputPart,
    ResponsesItem,
    ResponsesOutputText,
    ResponsesReasoning,
    ResponsesScreenshot,
    ResponsesShellOutput,
    ResponsesSummaryText,
)

logger = logging.getLogger(__name__)

_TEXTS = (TextBlock, ErrorBlock)
"""The blocks written as text parts (a class tuple built once, not a union per block)."""

FORMAT = "OpenAI Responses"
NAME = "openai_responses"
SYSTEM_SEPARATOR = "\n\n"
SystemMode = Literal["items", "instructions"]


# -- ours -> Responses ----------------------------------------------------------------------------------------


def _media_place(media: MediaRef, *, default_mime: str, index: int, key: str) -> tuple[str, str]:
    """Where a media reference points, in the order Responses prefers: ``("file_id", id)``, ``("data", data URI)``
    or ``("url", url)``. An input image, a screenshot and an input file each name the three places with keys of
    their own."""
    kind = media_kind(media)
    if kind == "file_id" and media.file_id:
        return "file_id", media.file_id
    if kind == "data":
        return "data", data_uri(media, default_mime=default_mime)
    if media.url:
        return "url", media.url
    raise FormatError("media reference holds no url, file id or data", index=index, key=key)


def _place_image(target: ResponsesInputImage | ResponsesScreenshot, media: MediaRef, *, index: int, key: str) -> None:
    """Where an image is, as an input image and a screenshot both say it: its file id, or its data URI or URL as
    ``image_url``."""
    place, value = _media_place(media, default_mime="image/png", index=index, key=key)
    if place == "file_id":
        target["file_id"] = value
    else:
        target["image_url"] = value


DETAIL_KEY = "openai_image_detail"
"""Metadata keeping the ``detail`` the caller gave each ``input_image`` of a message (by `_image_place`) other than
``"auto"``: `ImageBlock` has no field for it, and an image written anew went out as ``"auto"`` (up to ~1,500 tokens
where the caller asked for ``"low"``, ~85)."""
DETAILS: frozenset[Literal["low", "high", "original"]] = frozenset({"low", "high", "original"})
"""The ``detail`` values besides the default ``"auto"`` (those of the SDK's ``ImageDetail``)."""


def _image_place(media: MediaRef) -> str | None:
    """What names an image among a message's: its file id or URL, a digest of its data (no copy of the data)."""
    if media.file_id:
        return f"file_id:{media.file_id}"
    if media.data_base64 is not None:
        digest = hashlib.blake2b(media.data_base64.encode("utf-8", "surrogatepass"), digest_size=12).hexdigest()
        return f"data:{digest}"
    return f"url:{media.url}" if media.url else None


def _image_details(parts: Sequence[Any], blocks: Sequence[ContentBlock]) -> dict[str, str]:
    """The ``detail`` of each image part (read into ``blocks``, in order) the caller set to other than ``"auto"``."""
    out: dict[str, str] = {}
    images = (b for b in blocks if isinstance(b, ImageBlock))
    for part in parts:
        if not isinstance(part, Mapping) or part.get("type") != "input_image":
            continue
        block = next(images, None)
        detail = part.get("detail")
        place = _image_place(block.media) if block is not None else None
        if place is not None and detail in DETAILS:
            out[place] = detail
    return out


def _input_part(
    block: ContentBlock, role: str, *, index: int, key: str, details: Mapping[str, Any] | None = None
) -> ResponsesInputPart:
    block = resolve_data_block(block)
    if isinstance(block, TextBlock):
        return {"type": "input_text", "text": block.text}
    if isinstance(block, ErrorBlock):
        return {"type": "input_text", "text": error_text(block)}
    if role == "user":
        if isinstance(block, ImageBlock):
            detail = details.get(_image_place(block.media) or "") if details else None
            image: ResponsesInputImage = {"type": "input_image", "detail": detail if detail in DETAILS else "auto"}
            _place_image(image, block.media, index=index, key=key)
            return image
        if isinstance(block, AudioBlock) and media_kind(block.media) == "data" and block.media.data_base64 is not None:
            return {
                "type": "input_audio",
                "input_audio": {
                    "data": block.media.data_base64,
                    "format": audio_format(block.media, index=index, key=key),
                },
            }
        if isinstance(block, DocumentBlock) and block.media is None and block.text is not None:
            return {"type": "input_text", "text": block.text}
        if isinstance(block, DocumentBlock) and block.media is not None:
            media = block.media
            file: ResponsesInputFile = {"type": "input_file"}
            place, value = _media_place(media, default_mime="application/pdf", index=index, key=key)
            if place == "file_id":
                file["file_id"] = value
            elif place == "data":
                file["file_data"] = value
            else:
                file["file_url"] = value
            if media.filename:
                file["filename"] = media.filename
            return file
    raise unsupported(block, FORMAT, role, index=index, key=key)


def _reasoning_item(block: ReasoningBlock) -> ResponsesReasoning:
    summary: list[ResponsesSummaryText] = []
    if block.summary is not None:
        summary.append({"type": "summary_text", "text": block.summary})
    elif block.text:
        summary.append({"type": "summary_text", "text": block.text})
    item: ResponsesReasoning = (
        {"type": "reasoning", "id": block.id, "summary": summary}
        if block.id
        else {"type": "reasoning", "summary": summary}
    )
    if block.summary is not None:
        item["content"] = [{"type": "reasoning_text", "text": block.text}]
    if block.signature:
        item["encrypted_content"] = block.signature
    return item


def output_message_id(message: Message, part: int) -> str:
    """The id of an assistant ``message`` item written for ``message``: the one it was read with, else one derived
    from the message id (``msg_...``, the prefix the API checks). Hosts read an assistant item with an id and a
    status as model output (the OpenAI Agents SDK's Chat Completions converter requires both)."""
    kept = [i.get("id") for i in original_items(message, NAME) if isinstance(i, Mapping) and i.get("type") == "message"]
    if part < len(kept) and isinstance(kept[part], str) and kept[part]:
        return str(kept[part])
    digest = hashlib.blake2b(f"{message.message_id}\x1f{part}".encode("utf-8", "surrogatepass"), digest_size=12)
    return f"msg_{digest.hexdigest()}"


def _assistant_items(message: Message, *, index: int, reasoning: ReasoningMode) -> list[ResponsesItem]:
    items: list[ResponsesItem] = []
    texts = 0
    if message.reasoning and keep_reasoning(ReasoningBlock(text=message.reasoning), reasoning, needs="id"):
        items.append(_reasoning_item(ReasoningBlock(text=message.reasoning)))
    originals = original_arguments(message)
    hosted = {
        raw["id"]: raw["item"]
        for raw in message.tools_calls or ()
        if raw.get("type") in HOSTED_CALLS and isinstance(raw.get("item"), dict)
    }
    text_parts: list[ResponsesOutputText] | None = None
    for j, block in enumerate(message.content):
        if is_dropped(block):
            continue
        if isinstance(block, _TEXTS):
            text = block.text if isinstance(block, TextBlock) else error_text(block)
            if text_parts is None:
                text_parts = []
                items.append(
                    {
                        "type": "message",
                        "role": "assistant",
                        "id": output_message_id(message, texts),
                        "status": "completed",
                        "content": text_parts,
                    }
                )
                texts += 1
            text_parts.append({"type": "output_text", "text": text, "annotations": []})
            continue
        text_parts = None
        if isinstance(block, ReasoningBlock):
            if keep_reasoning(block, reasoning, needs="id"):
                items.append(_reasoning_item(block))
        elif isinstance(block, ToolCallBlock) and block.id in hosted:
            items.append(cast(ResponsesItem, dict(hosted[block.id])))
        elif isinstance(block, ToolCallBlock) and is_custom_call(block):
            items.append(
                {"type": "custom_tool_call", "call_id": block.id, "name": block.name, "input": block.args[CUSTOM_INPUT]}
            )
        elif isinstance(block, ToolCallBlock):
            items.append(
                {
                    "type": "function_call",
                    "call_id": block.id,
                    "name": block.name,
                    "arguments": arguments_for(block, originals),
                }
            )
        else:
            raise unsupported(block, FORMAT, "assistant", index=index, key=f"content[{j}]")
    if not items:
        items.append(
            {
                "type": "message",
                "role": "assistant",
                "id": output_message_id(message, 0),
                "status": "completed",
                "content": [],
            }
        )
    return items


def _tool_items(message: Message, *, index: int) -> list[ResponsesItem]:
    kind = message.metadata.get(ITEM_KEY)
    custom = kind == "custom_tool_call_output"
    items: list[ResponsesItem] = []
    for block, media in tool_results_with_media(message, index=index):
        if kind == SCREENSHOT_OUTPUT:
            items.append(_screenshot_item(message, block, media, index=index))
            continue
        if kind == "local_shell_call_output":
            items.append(
                {"type": "local_shell_call_output", "id": block.call_id, "output": tool_output_text(block.output)}
            )
            continue
        if kind == "shell_call_output":
            kept = message.metadata.get(OUTCOMES_KEY)
            outcome = kept[0] if isinstance(kept, list) and kept else None
            if not isinstance(outcome, dict):
                outcome = {"type": "exit", "exit_code": 1 if block.status == "error" else 0}
            shell: list[ResponsesShellOutput] = [
                {"stdout": tool_output_text(block.output), "stderr": "", "outcome": outcome}
            ]
            items.append({"type": "shell_call_output", "call_id": block.call_id, "output": shell})
            continue
        if kind == "apply_patch_call_output":
            status: Literal["completed", "failed"] = "failed" if block.status == "error" else "completed"
            output_text = tool_output_text(block.output)
            items.append(
                {"type": "apply_patch_call_output", "call_id": block.call_id, "status": status, "output": output_text}
            )
            continue
        text = result_text(block)
        output: str | list[ResponsesInputPart] = text
        if media:  # what the tool returned besides its text (a screenshot), inside the output as the API takes it
            output = [{"type": "input_text", "text": text}] if text else []
            details = message.metadata.get(DETAIL_KEY)
            output += [
                _input_part(m, "user", index=index, key=f"content[{k}]", details=details) for k, m in enumerate(media)
            ]
        if custom:
            items.append({"type": "custom_tool_call_output", "call_id": block.call_id, "output": output})
        else:
            items.append({"type": "function_call_output", "call_id": block.call_id, "output": output})
    return items


def _screenshot_item(
    message: Message, result: ToolResultBlock, media: Sequence[ContentBlock], *, index: int
) -> ResponsesComputerCallOutput:
    """A ``computer_call_output`` written anew: the call id, the one screenshot and what the item carried besides
    (`FIELDS_KEY`: the safety checks it acknowledged, the page's URL), which the API checks against its call."""
    shots = [block for block in media if isinstance(block, ImageBlock)]
    if len(shots) != 1:
        raise FormatError(
            f"a computer_call_output holds exactly one screenshot, but the result of call {result.call_id!r} in "
            f"message {message.message_id!r} comes with {len(shots)} images; keep its one ImageBlock after the "
            "ToolResultBlock (a screenshot cannot be cleared to text: drop the call and its output together instead)",
            index=index,
            key="content",
        )
    screenshot: ResponsesScreenshot = {"type": "computer_screenshot"}
    _place_image(screenshot, shots[0].media, index=index, key="content")
    item: dict[str, Any] = {"type": SCREENSHOT_OUTPUT, "call_id": result.call_id, "output": screenshot}
    kept = message.metadata.get(FIELDS_KEY)
    if isinstance(kept, Mapping):
        item.update((k, v) for k, v in kept.items() if k not in item)
    return cast(ResponsesComputerCallOutput, item)


def _message_item(
    message: Message, role: Literal["user", "system", "developer"], *, index: int
) -> ResponsesInputMessage:
    details = message.metadata.get(DETAIL_KEY)
    parts = [
        _input_part(b, message.role, index=index, key=f"content[{j}]", details=details)
        for j, b in enumerate(message.content)
        if not is_dropped(b)
    ]
    return {"type": "message", "role": role, "content": parts}


def message_to_responses_items(
    message: Message, *, index: int = 0, reasoning: ReasoningMode = "all"
) -> list[ResponsesItem]:
    """One of our messages as Responses input items."""
    if message.role == "assistant":
        return _assistant_items(message, index=index, reasoning=reasoning)
    if message.role == "tool":
        return _tool_items(message, index=index)
    if message.role == "system":
        return [_system_item(message, index=index)]
    return [_message_item(message, "user", index=index)]


def _system_item(message: Message, *, index: int) -> ResponsesInputMessage:
    role: Literal["system", "developer"] = (
        "developer" if message.metadata.get("openai_role") == "developer" else "system"
    )
    for j, block in enumerate(message.content):
        if not isinstance(block, _TEXTS) and not is_dropped(block):
            raise unsupported(block, FORMAT, "system", index=index, key=f"content[{j}]")
    return _message_item(message, role, index=index)


def _is_system(message: Message) -> bool:
    """Whether ``message`` is system text (written into ``instructions``): one function, not a lambda per call,
    so the write memo sees the same ``always_fresh`` from call to call and reuses what it wrote."""
    return message.role == "system"


def to_responses_input(
    messages: Sequence[Message],
    *,
    system: SystemMode = "items",
    reasoning: ReasoningMode = "all",
    passthrough: bool = True,
    memo: WriteMemo | None = None,
) -> tuple[str | None, list[ResponsesItem]]:
    """Our messages as ``(instructions, input_items)`` (`ResponsesItem` dicts, see `wire`).

    ``reasoning="signed"`` keeps only reasoning that has a Responses item id (the API rejects reasoning items
    without one); the default keeps every reasoning block so a stored transcript round-trips. ``passthrough``
    writes each message read with its source kept (`from_responses_input`, `RESPONSES.read`) and unchanged since
    as the very items it was read from (ids, status, annotations and every other key included). It is on by
    default, so ``to_responses_input(from_responses_input(items))[1]`` gives the caller's items back (with
    ``system="instructions"`` when ``instructions`` were read too); a message changed since, or read from another
    format, is written anew (a warning names the fields a conversion loses). Pass False to write every message in
    windowkeeper's own shape.
    """
    check_mode(reasoning)
    if system not in ("items", "instructions"):
        raise ValueError(f"system={system!r} is not supported; use 'items' or 'instructions'")
    instructions: list[str] = []

    def fresh(i: int, message: Message) -> list[ResponsesItem]:
        if message.role == "system" and system == "instructions":
            item = _system_item(message, index=i)
            instructions.append("".join(p["text"] for p in item["content"] if p["type"] == "input_text"))
            return []
        return message_to_responses_items(message, index=i, reasoning=reasoning)

    items = write_items(
        messages,
        NAME,
        fresh,
        passthrough=passthrough,
        part_type="input_text",
        report=RESPONSES.report,
        always_fresh=_is_system if system == "instructions" else None,
        memo=memo,
        refill=RESPONSES.refill,
    )
    return (SYSTEM_SEPARATOR.join(instructions) if instructions else None), items


# -- Responses -> ours ----------------------------------------------------------------------------------------


def _parse_input_part(part: Any, role: str, *, index: int, key: str) -> ContentBlock:
    p = as_mapping(part, index=index, key=key, what="content part")
    ptype = p.get("type")
    if ptype in ("input_text", "output_text", "text"):
        return TextBlock(text=require_str(p, "text", index=index, key=f"{key}.text", empty_ok=True))
    if ptype == "refusal":
        return TextBlock(text=require_str(p, "refusal", index=index, key=f"{key}.refusal", empty_ok=True))
    if ptype == "input_image":
        if isinstance(p.get("file_id"), str) and p["file_id"]:
            return ImageBlock(media=MediaRef(kind="file_id", file_id=p["file_id"]))
        return ImageBlock(media=media_from_url(require_str(p, "image_url", index=index, key=f"{key}.image_url")))
    if ptype == "input_audio":
        audio = as_mapping(p.get("input_audio"), index=index, key=f"{key}.input_audio", what="input_audio")
        data = require_str(audio, "data", index=index, key=f"{key}.input_audio.data", empty_ok=True)
        mime = audio_mime(audio.get("format"), index=index, key=f"{key}.input_audio.format")
        return AudioBlock(media=MediaRef(kind="data", data_base64=data, mime_type=mime))
    if ptype == "input_file":
        filename = p.get("filename") if isinstance(p.get("filename"), str) else None
        if isinstance(p.get("file_id"), str) and p["file_id"]:
            return DocumentBlock(media=MediaRef(kind="file_id", file_id=p["file_id"], filename=filename))
        if isinstance(p.get("file_url"), str) and p["file_url"]:
            return DocumentBlock(media=MediaRef(kind="url", url=p["file_url"], filename=filename))
        file_data = require_str(p, "file_data", index=index, key=f"{key}.file_data")
        file_mime, data = split_file_data(file_data)
        return DocumentBlock(media=MediaRef(kind="data", data_base64=data, mime_type=file_mime, filename=filename))
    return unknown_part(
        p, "input_text, output_text, refusal, input_image, input_audio or input_file", index=index, key=key
    )


def _parse_message_content(item: Mapping[str, Any], role: str, *, index: int) -> list[ContentBlock]:
    content = item.get("content")
    if content is None:
        raise FormatError("missing required 'content'", index=index, key="content")
    if isinstance(content, str):
        return [TextBlock(text=content)]
    parts = as_list(content, index=index, key="content", what="'content'", text_too=True)
    return [_parse_input_part(p, role, index=index, key=f"content[{j}]") for j, p in enumerate(parts)]


def _texts(entries: Any, kind: str, *, index: int, key: str) -> list[str]:
    out: list[str] = []
    for j, entry in enumerate(as_list(entries or [], index=index, key=key, what=f"'{key}'")):
        e = as_mapping(entry, index=index, key=f"{key}[{j}]", what=kind)
        out.append(require_str(e, "text", index=index, key=f"{key}[{j}].text", empty_ok=True))
    return out


def _parse_reasoning(item: Mapping[str, Any], *, index: int) -> ReasoningBlock:
    summary = _texts(item.get("summary"), "summary_text", index=index, key="summary")
    content = _texts(item.get("content"), "reasoning_text", index=index, key="content")
    rid = item.get("id")
    sig = item.get("encrypted_content")
    ids = {
        "id": rid if isinstance(rid, str) and rid else None,
        "signature": sig if isinstance(sig, str) and sig else None,
    }
    if content:
        return ReasoningBlock(text="\n\n".join(content), summary="\n\n".join(summary), **ids)
    return ReasoningBlock(text="\n\n".join(summary), **ids)


def _item_kind(item: Mapping[str, Any], *, index: int) -> str:
    itype = item.get("type")
    if itype is None and "role" in item:
        itype = "message"
    if not isinstance(itype, str):
        raise FormatError("input item needs a 'type' (or a 'role' for a message)", index=index, key="type")
    return itype


@reader("OpenAI Responses input items")
def from_responses_input(items: Any, instructions: str | None = None, *, keep_source: bool = True) -> list[Message]:
    """Responses ``input`` (item list or plain string) or a response's ``output`` items as our messages.

    ``instructions`` becomes a leading system message. Consecutive reasoning, assistant message and
    function_call items form one assistant message. An item's own ``id`` (the first one, for a merged assistant
    turn) becomes the message id; otherwise the id is derived from content, position and the previous message's
    id, so converting the same input again gives the same ids (see `IdChain`).

    ``keep_source`` (the default) records on each message the item(s) it was read from, as the format
    object's ``read`` does, so that ``to_responses_input`` (``passthrough`` is on by default) writes a message unchanged
    since as those very items: every key the caller sent, unknown ones included. Pass False for messages that are
    to be written anew in windowkeeper's own shape.
    """
    out: list[Message] = []
    chain = IdChain()
    if instructions is not None:
        out.append(Message.text_message(instructions, role="system"))
        chain.assign(out, {"instructions": instructions}, -1)
    if isinstance(items, str):
        text = Message.text_message(items, role="user")
        chain.assign([text], items, 0)
        out.append(text)
        return out
    sources: list[Source] | None = [] if keep_source else None
    listed = messages_input(items, what="Responses input items")
    out.extend(_read(listed, offset=0, previous=chain.previous, sources=sources))
    RESPONSES.keep_all(sources or ())
    return out


HOSTED_CALLS: dict[str, tuple[str, str]] = {
    "local_shell_call": ("local_shell_call_output", "id"),
    "apply_patch_call": ("apply_patch_call_output", "call_id"),
    "shell_call": ("shell_call_output", "call_id"),
    "computer_call": ("computer_call_output", "call_id"),
}
"""Calls of OpenAI's own tools: the call item type, its output's type and the output's key that names the call.
Read as a call and its result, so a trim keeps them together (the API refuses either one alone); the call item is
kept whole and written back as it came. An output in text (a shell call's: one stdout and stderr per command) can
be cleared like a function's; a computer call's is a screenshot (`SCREENSHOT_OUTPUT`), which cannot."""
SCREENSHOT_OUTPUT = "computer_call_output"
"""The output of a computer-use action: the screen after it, and nothing else. Read as a tool result with no text
and the screenshot as an image (priced as one), marked `windowkeeper.messages.WHOLE_KEY`: no text pointer can
stand in an item that must hold a screenshot, so an old step leaves with its call, whole."""
FIELDS_KEY = "openai_fields"
"""Metadata keeping what a ``computer_call_output`` carries besides its call id and screenshot (its id, the safety
checks it acknowledged, the page's URL), so an output written anew (no pass-through) still carries them."""
_HOSTED_OUTPUTS = {output: (call, key) for call, (output, key) in HOSTED_CALLS.items()}
ASSISTANT_ITEM_KINDS = frozenset({"reasoning", "function_call", "custom_tool_call", *HOSTED_CALLS})
ITEM_FIELDS: Mapping[str, frozenset[str] | None] = {
    "message": frozenset({"type", "role", "content"}),
    "reasoning": frozenset({"type", "id", "summary", "encrypted_content", "content"}),
    "function_call": frozenset({"type", "call_id", "name", "arguments", "id"}),
    "function_call_output": frozenset({"type", "call_id", "output"}),
    "custom_tool_call": frozenset({"type", "call_id", "name", "input", "id"}),
    "custom_tool_call_output": frozenset({"type", "call_id", "output"}),
    **dict.fromkeys(HOSTED_CALLS),
    **{output: frozenset({"type", "id", key, "output", "status"}) for output, (_, key) in _HOSTED_OUTPUTS.items()},
    SCREENSHOT_OUTPUT: None,
}
"""Every item type this reader models, with the keys of it that make what it reads (None: every key, for an item
kept whole: a call of OpenAI's own tools, and a screenshot output, whose other fields are kept with it). Whoever
compares items by what windowkeeper models of them (the gateway's projection) takes both from here, so a type
taught to the reader is modelled there too, instead of staying an opaque text in a second table. A message's or a
function output's own ``id`` and ``status`` are left out: they name the item rather than say anything, and two
sends of one conversation may differ in them."""
KNOWN_ITEM_KINDS = frozenset(ITEM_FIELDS)
"""Item types read into blocks; any other (``web_search_call``, ``item_reference``, ``mcp_call``...) joins the
assistant turn it stands in as a block holding its JSON, and passes through unchanged."""
ITEM_KEY = "openai_item"
"""Metadata naming the item type a tool result was read from when it is not ``function_call_output`` (a custom
tool's output), so that a result windowkeeper rewrites is written back as the same type."""


def continues_turn(item: Any) -> bool:
    """Whether ``item`` belongs to an assistant turn (reasoning, function_call or assistant message items merge
    into one message with their neighbours of the same kind), so a tail cannot be read starting next to it."""
    value = plain(item)
    if not isinstance(value, Mapping):
        return False
    kind = value.get("type")
    return (
        kind in ASSISTANT_ITEM_KINDS
        or (kind in (None, "message") and value.get("role") == "assistant")
        or (isinstance(kind, str) and kind not in KNOWN_ITEM_KINDS)
    )


OUTCOMES_KEY = "openai_outcomes"
"""Metadata keeping a shell call's outcomes (exit codes, timeouts), so an output windowkeeper rewrites keeps them."""


def _shell_output(output: Any, *, index: int) -> tuple[str, list[Any]]:
    """A ``shell_call_output``'s commands as one text (each command's stdout, then its stderr) and their outcomes."""
    entries = as_list(output, index=index, key="output", what="shell_call_output 'output'")
    texts: list[str] = []
    outcomes: list[Any] = []
    for j, raw in enumerate(entries):
        entry = as_mapping(raw, index=index, key=f"output[{j}]", what="shell output")
        stdout, stderr = entry.get("stdout"), entry.get("stderr")
        texts.append("\n".join(t for t in (stdout, stderr) if isinstance(t, str) and t))
        outcomes.append(plain(entry.get("outcome")))
    return "\n".join(texts), outcomes


def _failed(outcome: Any) -> bool:
    """Whether a shell command's outcome is a failure: a timeout or a non-zero exit code."""
    if not isinstance(outcome, Mapping):
        return False
    return outcome.get("type") == "timeout" or (outcome.get("type") == "exit" and outcome.get("exit_code") != 0)


def _native_call(
    call: ToolCallBlock, arguments: Mapping[str, str], hosted: Mapping[str, dict[str, Any]]
) -> dict[str, Any]:
    """The provider-native mirror of one call of an assistant turn (`Message.tools_calls`): a function's arguments
    as sent, a custom tool's input, the whole item of a call of OpenAI's own tools."""
    if is_custom_call(call):
        return {"id": call.id, "type": "custom", "custom": {"name": call.name, "input": call.args[CUSTOM_INPUT]}}
    if call.id in hosted:
        return {"id": call.id, "type": call.tool_type, "item": hosted[call.id]}
    return {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": arguments[call.id]}}


def _screenshot_result(item: Mapping[str, Any], *, index: int) -> Message:
    """A ``computer_call_output`` as a tool message: an empty result answering its call, then the screenshot."""
    output = as_mapping(item.get("output"), index=index, key="output", what="computer_call_output 'output'")
    if output.get("type") != "computer_screenshot":
        raise FormatError(
            f"computer_call_output 'output' must be a computer_screenshot, got type {output.get('type')!r}: send "
            "{'type': 'computer_screenshot', 'image_url': ...} or {'type': 'computer_screenshot', 'file_id': ...}",
            index=index,
            key="output.type",
        )
    file_id = output.get("file_id")
    if isinstance(file_id, str) and file_id:
        media = MediaRef(kind="file_id", file_id=file_id)
    else:
        media = media_from_url(require_str(output, "image_url", index=index, key="output.image_url"))
    result = ToolResultBlock(call_id=require_str(item, "call_id", index=index), output="")
    answer = Message(role="tool", content=[result, ImageBlock(media=media)])
    answer.metadata[ITEM_KEY] = SCREENSHOT_OUTPUT
    answer.metadata[WHOLE_KEY] = True
    fields = {str(k): plain(v) for k, v in plain(item).items() if k not in ("type", "call_id", "output")}
    if fields:
        answer.metadata[FIELDS_KEY] = fields
    return answer


@reader("OpenAI Responses input items")
def read_items(
    items: Sequence[Any], *, offset: int = 0, previous: str | None = None, sources: list[Source] | None = None
) -> list[Message]:
    """Messages from items ``offset``, ``offset + 1``, ... of a longer list (no instructions), as
    `from_responses_input` reads them when ``previous`` is the id of the last message read before them. Start the
    tail where no assistant turn spans the boundary (see `continues_turn`)."""
    return _read(items, offset=offset, previous=previous, sources=sources)


def _read(
    items: Sequence[Any], *, offset: int, previous: str | None, sources: list[Source] | None = None
) -> list[Message]:
    out: list[Message] = []
    chain = IdChain(previous, sources)
    turn: list[ContentBlock] | None = None
    turn_items: list[Mapping[str, Any]] = []
    turn_index = 0
    arguments: dict[str, str] = {}

    def add(message: Message, source: Any, index: int, provided: str | None) -> None:
        chain.assign([message], source, index, provided=provided)
        out.append(message)

    def close() -> None:
        nonlocal turn
        if turn is not None:
            calls = [b for b in turn if isinstance(b, ToolCallBlock)]
            hosted = {str(it.get("call_id")): dict(it) for it in turn_items if it.get("type") in HOSTED_CALLS}
            native = [_native_call(c, arguments, hosted) for c in calls] if calls else None
            provided = next((pid for pid in map(provided_id, turn_items) if pid), None)
            # ``Message(role="assistant", content=turn, tools_calls=native, message_id=PENDING_ID)`` without the
            # validation pass (`read_message`: the same fields, fields set and boundary rule)
            message = read_message("assistant", turn, {}, tools_calls=native, calls_given=True, metadata_given=False)
            add(message, list(turn_items), turn_index, provided)
            turn = None
            turn_items.clear()
            arguments.clear()

    for i, raw in enumerate(items, start=offset):
        item = as_mapping(raw, index=i, key="type", what="input item")
        kind = _item_kind(item, index=i)
        if (
            kind in ASSISTANT_ITEM_KINDS
            or (kind == "message" and item.get("role") == "assistant")
            or kind not in KNOWN_ITEM_KINDS
        ):
            if turn is None:
                turn = []
                turn_index = i
            turn_items.append(item)
            if kind == "reasoning":
                turn.append(_parse_reasoning(item, index=i))
            elif kind == "function_call":
                call_id = require_str(item, "call_id", index=i)
                raw_args = item.get("arguments")
                turn.append(
                    ToolCallBlock(
                        id=call_id,
                        name=require_str(item, "name", index=i),
                        args=parse_args(raw_args, index=i, key="arguments"),
                    )
                )
                arguments[call_id] = raw_args if isinstance(raw_args, str) else ""
            elif kind == "custom_tool_call":
                text = require_str(item, "input", index=i, empty_ok=True)
                turn.append(
                    ToolCallBlock(
                        id=require_str(item, "call_id", index=i),
                        name=require_str(item, "name", index=i),
                        args={CUSTOM_INPUT: text},
                        tool_type="custom",
                    )
                )
            elif kind in HOSTED_CALLS:
                call_id = require_str(item, "call_id", index=i)
                args = {k: v for k, v in plain(item).items() if k not in ("type", "id", "call_id", "status")}
                name = kind.removesuffix("_call")
                turn.append(
                    ToolCallBlock(id=call_id, name=name, args=json_args(args, index=i, key="type"), tool_type=kind)
                )
            elif kind not in KNOWN_ITEM_KINDS:
                turn.append(unknown_block(kind, item))
            else:
                turn.extend(_parse_message_content(item, "assistant", index=i))
            continue
        close()
        if kind == SCREENSHOT_OUTPUT:
            add(_screenshot_result(item, index=i), item, i, provided_id(item))
        elif kind in _HOSTED_OUTPUTS:
            output = item.get("output")
            if output is None:  # an apply_patch_call_output's is optional (a status alone)
                output = ""
            failed = item.get("status") == "failed"
            outcomes: list[Any] = []
            if kind == "shell_call_output":
                output, outcomes = _shell_output(output, index=i)
                failed = any(_failed(outcome) for outcome in outcomes)
            if not isinstance(output, str):
                raise FormatError(f"{kind} 'output' must be a string", index=i, key="output")
            result = ToolResultBlock(
                call_id=require_str(item, _HOSTED_OUTPUTS[kind][1], index=i),
                output=output,
                status="error" if failed else "completed",
            )
            answer = Message.tool_message([result])
            answer.metadata[ITEM_KEY] = kind
            if outcomes:
                answer.metadata[OUTCOMES_KEY] = outcomes
            add(answer, item, i, provided_id(item))
        elif kind in ("function_call_output", "custom_tool_call_output"):
            output = item.get("output")
            media: list[ContentBlock] = []
            if isinstance(output, list):
                texts: list[str] = []
                for j, p in enumerate(plain(part) for part in output):
                    ptype = p.get("type") if isinstance(p, Mapping) else None
                    if ptype in ("input_text", "output_text", "text"):
                        texts.append(require_str(p, "text", index=i, key=f"output[{j}].text", empty_ok=True))
                    elif ptype in ("input_image", "input_file"):  # a screenshot or file the tool returned
                        media.append(_parse_input_part(p, "user", index=i, key=f"output[{j}]"))
                    else:
                        texts.append(unknown_block(str(ptype if ptype else type(p).__name__), p).text)
                output = "".join(texts)
            if not isinstance(output, str):
                raise FormatError(f"{kind} 'output' must be a string", index=i, key="output")
            result = ToolResultBlock(call_id=require_str(item, "call_id", index=i), output=output)
            answer = read_message("tool", [result, *media], {}, metadata_given=False)  # as `Message.tool_message`
            if kind != "function_call_output":
                answer.metadata[ITEM_KEY] = kind
            details = _image_details(item.get("output") or (), media) if media else None
            if details:
                answer.metadata[DETAIL_KEY] = details
            add(answer, item, i, provided_id(item))
        elif kind == "message":
            role = item.get("role")
            if role not in ("user", "system", "developer"):
                raise FormatError(
                    f"unknown role {role!r}; expected user, assistant, system or developer", index=i, key="role"
                )
            metadata: dict[str, Any] = {"openai_role": "developer"} if role == "developer" else {}
            api_role = "user" if role == "user" else "system"
            content = _parse_message_content(item, api_role, index=i)
            parts = item.get("content")
            details = _image_details(parts, content) if isinstance(parts, list) else None
            if details:
                metadata[DETAIL_KEY] = details
            message = Message(role=api_role, content=content, metadata=metadata, message_id=PENDING_ID)
            add(message, item, i, provided_id(item))
        else:
            raise FormatError(
                f"unsupported item type {kind!r} (expected message, reasoning, function_call or function_call_output)",
                index=i,
                key="type",
            )
    close()
    return out


_RESPONSES_PARTS = frozenset({"input_text", "output_text", "input_image", "input_file"})


class OpenAIResponsesFormat(ProviderFormat):
    """OpenAI Responses ``input`` items: an assistant turn is several items, the system text ``instructions``."""

    parts_key = "content"
    name = NAME
    round_trip = RoundTripRules(
        reasoning_fields=frozenset({"summary", "id", "signature"}),
        merge_assistants=True,
        default_media_mime=True,
        canonical_audio_mime=True,
        text_documents_as_text=True,
    )
    priority = 20
    title = FORMAT
    output_parts = frozenset({"input_text", "output_text", "text", "input_image", "input_file"})

    def output_key(self, item: Mapping[str, Any]) -> str | None:
        return "output" if item.get("type") in ("function_call_output", "custom_tool_call_output") else None

    def output_text(self, item: Mapping[str, Any], key: str) -> str | None:
        # a string output is read as it is, into a `ToolResultBlock` (whose validation applies `clean_text`)
        value = item.get(key)
        return clean_text(value) if isinstance(value, str) else None

    def modelled_keys(self, item: Mapping[str, Any]) -> frozenset[str]:
        kind = item.get("type", "message" if "role" in item else None)
        keys = ITEM_FIELDS.get(kind) if isinstance(kind, str) else None
        return keys if keys is not None else frozenset(item)

    expected = (
        "Responses input items such as {'type': 'message', 'role': 'user', 'content': 'hi'}, "
        "{'type': 'function_call', ...} or {'type': 'function_call_output', 'call_id': ..., 'output': ...}"
    )

    def read_items(
        self, items: Sequence[Any], *, offset: int, previous: str | None, sources: list[Source] | None
    ) -> list[Message]:
        return read_items(items, offset=offset, previous=previous, sources=sources)

    def safe_start(self, items: Sequence[Any], index: int) -> bool:
        if index == 0 or index >= len(items):
            return True
        return not (continues_turn(items[index - 1]) and continues_turn(items[index]))

    def write_messages(self, messages: Sequence[Message], *, options: Mapping[str, Any]) -> list[Any]:
        passthrough = options.get("passthrough", True)
        return to_responses_input(messages, reasoning="signed", passthrough=passthrough, memo=options.get("memo"))[1]

    def write(self, system: str | None, messages: Sequence[Message], **options: Any) -> tuple[list[Any], Any]:
        """The caller's own system and developer items stay in ``input`` as they came, where they came (one said
        mid-conversation stays there while the item after it is in the view); ``instructions`` holds what
        windowkeeper adds: the ``system=`` text and the summary. They were moved into ``instructions``, so an
        ``input`` sent alone lost them."""
        lead = options.get("system_messages")
        if lead is None or not options.get("passthrough", True):
            return super().write(system, messages, **options)
        own = [m for m in lead if source_record(m) is not None]
        made = [system_text(m, FORMAT, index=None) for m in lead if source_record(m) is None]
        # joined as the prompt layer joins the system zone's sections (``prompt.sections.SECTION_SEPARATOR``)
        instructions = "\n\n".join(text for text in made if text) or None
        placed = in_place(own, messages, options.get("system_anchors"))
        return self.write_messages(placed, options=options), instructions

    def distinctive(self, item: Any) -> str | None:
        d = plain(item)
        if not isinstance(d, Mapping) or "parts" in d:
            return None
        if "type" in d:
            return "type"
        for j, ptype in content_part_types(d.get("content")):
            if ptype in _RESPONSES_PARTS:
                return f"content[{j}].type"
        return None

    def tolerates(self, item: Any, key: str) -> bool:
        d = plain(item)
        return key == "role" and isinstance(d, Mapping) and d.get("role") in ("system", "developer")

    def tool(self, name: str, description: str, parameters: Mapping[str, Any]) -> dict[str, Any]:
        return {"type": "function", "name": name, "description": description, "parameters": dict(parameters)}


RESPONSES = register_format(OpenAIResponsesFormat())
"""The OpenAI Responses format object."""
