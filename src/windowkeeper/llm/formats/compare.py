"""Structural comparison of message lists modulo what a provider format can carry.

``canonical(messages, fmt)`` reduces a list to plain dicts holding only what survives ``to_X`` then ``from_X``,
applying the normalization rules written in ``docs/formats.md``. Two lists are equivalent for a format when
their canonical forms are equal, which is how round trips are tested without pretending providers keep message
ids, timestamps or metadata.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

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
from ...messages import Message
from ._common import error_text, is_dropped, media_block_for_mime, media_kind, resolve_data_block, result_text
from .registry import get_format
from .rules import RoundTripRules

Format = Literal["openai_chat", "openai_responses", "anthropic", "gemini", "langchain"]
FORMATS: tuple[Format, ...] = ("openai_chat", "openai_responses", "anthropic", "gemini", "langchain")


_DEFAULT_MIME = {ImageBlock: "image/png", DocumentBlock: "application/pdf"}
_AUDIO_CANON = {"audio/x-wav": "audio/wav", "audio/wave": "audio/wav", "audio/mp3": "audio/mpeg"}


def _media(block: ContentBlock, media: MediaRef, rules: RoundTripRules) -> dict[str, Any]:
    kind = media_kind(media)
    out: dict[str, Any] = {}
    if kind == "data":
        mime = media.mime_type
        if rules.default_media_mime:
            mime = mime or _DEFAULT_MIME.get(type(block))
        if isinstance(block, AudioBlock) and rules.canonical_audio_mime:
            mime = _AUDIO_CANON.get(mime or "", mime)
        out.update(kind="data", data=media.data_base64, mime=mime)
    elif kind == "file_id" and not rules.file_id_as_url:
        out.update(kind="file_id", ref=media.file_id)
    else:
        out.update(kind="url", ref=media.url if kind == "url" else media.file_id)
    if kind != "data" and rules.keep_media_mime_on_ref:
        out["mime"] = media.mime_type
    if isinstance(block, DocumentBlock) and rules.document_filename:
        out["filename"] = media.filename
    return out


def _block(block: ContentBlock, rules: RoundTripRules) -> dict[str, Any]:
    block = resolve_data_block(block)
    media_types = ImageBlock | AudioBlock | VideoBlock | DocumentBlock
    if rules.retype_media_by_mime and isinstance(block, media_types) and block.media is not None:
        block = media_block_for_mime(block.media)
    if isinstance(block, TextBlock):
        return {"type": "text", "text": block.text}
    if isinstance(block, ErrorBlock):
        return {"type": "text", "text": error_text(block)}
    if isinstance(block, ToolCallBlock):
        return {"type": "tool_call", "id": block.id, "name": block.name, "args": block.args}
    if isinstance(block, ReasoningBlock):
        out: dict[str, Any] = {"type": "reasoning", "text": block.text}
        for name in sorted(rules.reasoning_fields):
            out[name] = getattr(block, name)
        return out
    if isinstance(block, ToolResultBlock):
        return {
            "type": "tool_result",
            "call_id": block.call_id,
            "output": block.output,
            "status": block.status,
            "name": block.name,
        }
    if isinstance(block, DocumentBlock) and block.media is None:
        if rules.text_documents_as_text and block.text is not None:
            return {"type": "text", "text": block.text}  # written as a text part (no document part there)
        return {"type": "document", "text": block.text}
    if isinstance(block, ImageBlock | AudioBlock | VideoBlock | DocumentBlock):
        assert block.media is not None
        return {"type": block.type, "media": _media(block, block.media, rules)}
    return block.model_dump(mode="json")


def _tool_result(block: ToolResultBlock, rules: RoundTripRules, names: dict[str, str]) -> dict[str, Any]:
    output: Any = block.output
    if rules.json_outputs:
        if isinstance(output, dict) and len(output) == 1 and ("result" in output or "error" in output):
            output = next(iter(output.values()))
    else:
        output = tool_output_text(output)
        if block.status == "error" and not rules.tool_status:
            output = result_text(block)  # formats without an error flag say it in the text
    name = (
        block.name
        if rules.tool_name == "keep"
        else names.get(block.call_id, block.name)
        if rules.tool_name == "call"
        else None
    )
    return {
        "type": "tool_result",
        "call_id": block.call_id,
        "output": output,
        "status": block.status if rules.tool_status else "completed",
        "name": name,
    }


def _reasoning_first(content: list[dict[str, Any]], merge: bool) -> list[dict[str, Any]]:
    reasoning = [b for b in content if b["type"] == "reasoning"]
    rest = [b for b in content if b["type"] != "reasoning"]
    if merge:
        text = "\n".join(b["text"] for b in reasoning)
        reasoning = [{"type": "reasoning", "text": text}] if text else []
    return reasoning + rest


def canonical(messages: Sequence[Message], fmt: Format) -> list[dict[str, Any]]:
    """What of ``messages`` a round trip through ``fmt`` keeps, as comparable plain dicts."""
    rules = get_format(fmt).round_trip
    names: dict[str, str] = {}
    out: list[dict[str, Any]] = []
    systems: list[str] = []
    for message in messages:
        blocks: list[ContentBlock] = [ReasoningBlock(text=message.reasoning)] if message.reasoning else []
        blocks.extend(b for b in message.content if not is_dropped(b))
        if message.role == "assistant":
            names.update((c.id, c.name) for c in message.tool_call_blocks())
        if message.role == "tool":
            for block in blocks:
                if isinstance(block, ErrorBlock) and block.tool_call_id:
                    block = ToolResultBlock(call_id=block.tool_call_id, output=error_text(block), status="error")
                if isinstance(block, ToolResultBlock):
                    out.append({"role": "tool", "content": [_tool_result(block, rules, names)]})
            continue
        content = [_block(b, rules) for b in blocks]
        if message.role == "system" and rules.system != "keep":
            systems.append("".join(b["text"] for b in content if b["type"] == "text"))
            continue
        if message.role == "assistant":
            if rules.reasoning != "in_place":
                content = _reasoning_first(content, merge=rules.reasoning == "merge_front")
            if rules.calls_last:
                content = [b for b in content if b["type"] != "tool_call"] + [
                    b for b in content if b["type"] == "tool_call"
                ]
            if rules.signature_text:
                content = _gemini_signature_text(content)
            if rules.merge_assistants and out and out[-1]["role"] == "assistant":
                out[-1]["content"].extend(content)
                continue
        if rules.empty_is_blank_text and not any(b["type"] in ("text", "tool_call") for b in content):
            # No text and no calls is written as content "" and read back as one empty text block.
            content = [*content, {"type": "text", "text": ""}]
        out.append({"role": message.role, "content": content})
    if systems and rules.system == "one_front":
        out.insert(0, {"role": "system", "content": [{"type": "text", "text": "\n\n".join(systems)}]})
    elif rules.system == "each_front":
        out[0:0] = [{"role": "system", "content": [{"type": "text", "text": t}]} for t in systems]
    if rules.renumber_ids:
        _renumber(out)
    return out


def _gemini_signature_text(content: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A signature-only reasoning block rides on the next part; an empty text part there is not read back."""
    out: list[dict[str, Any]] = []
    for block in content:
        prev = out[-1] if out else None
        if (
            block == {"type": "text", "text": ""}
            and prev is not None
            and prev["type"] == "reasoning"
            and not prev["text"]
            and prev.get("signature")
        ):
            continue
        out.append(block)
    return out


def _renumber(out: list[dict[str, Any]]) -> None:
    """Rename call ids by order of appearance (a reused id starts a new name), results following their call."""
    current: dict[str, str] = {}
    counter = 0
    for message in out:
        for block in message["content"]:
            if block["type"] == "tool_call":
                counter += 1
                current[block["id"]] = f"call#{counter}"
                block["id"] = current[block["id"]]
            elif block["type"] == "tool_result":
                block["call_id"] = current.get(block["call_id"], block["call_id"])


def equivalent(a: Sequence[Message], b: Sequence[Message], fmt: Format) -> bool:
    return canonical(a, fmt) == canonical(b, fmt)


def first_difference(a: Sequence[Message], b: Sequence[Message], fmt: Format) -> str | None:
    """A readable description of where two lists first differ for ``fmt``, or None when equivalent."""
    ca, cb = canonical(a, fmt), canonical(b, fmt)
    for i, (x, y) in enumerate(zip(ca, cb, strict=False)):
        if x != y:
            return f"message {i} differs:\n  left:  {x}\n  right: {y}"
    if len(ca) != len(cb):
        return f"lengths differ: {len(ca)} vs {len(cb)}"
    return None
