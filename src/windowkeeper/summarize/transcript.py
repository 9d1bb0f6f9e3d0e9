"""Render messages as the plain-text transcript a summarizer model reads.

One line per message (``role: text``) keeps the transcript compact and lets tests point at exact lines. Tool
results are included because that is where most facts of an agent session live, but each is capped so one huge
result cannot crowd the rest out of the summarizer's window; the cap leaves a visible marker saying how much was cut.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from ..blocks import (
    AnnotationBlock,
    AudioBlock,
    DataBlock,
    DocumentBlock,
    ErrorBlock,
    ImageBlock,
    MediaRef,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    VideoBlock,
    readable_text,
    tool_output_text,
)
from ..errors import ConfigurationError
from ..messages import Message


def one_line(text: str) -> str:
    """Collapse all whitespace runs (newlines included) to single spaces."""
    return " ".join(text.split())


def cap(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters with a marker naming how many were dropped."""
    if limit < 0 or len(text) <= limit:
        return text
    return f"{text[:limit]}… [truncated {len(text) - limit:,} chars]"


def _media_label(media: MediaRef | None) -> str:
    if media is None:
        return ""
    return media.filename or media.url or media.file_id or media.mime_type or ""


def _call_text(call: ToolCallBlock) -> str:
    return f"{call.name}({json.dumps(call.args, ensure_ascii=False, sort_keys=True)})"


def _block_text(block: object, max_result_chars: int) -> str:
    if isinstance(block, TextBlock):
        return readable_text(block.text)
    if isinstance(block, ToolCallBlock):
        return _call_text(block)
    if isinstance(block, ToolResultBlock):
        label = block.name or block.call_id
        status = " error" if block.status == "error" else ""
        body = cap(one_line(tool_output_text(block.output)), max_result_chars)
        return f"[{label}{status}] {body}"
    if isinstance(block, ErrorBlock):
        return f"[error] {block.error}"
    if isinstance(block, ImageBlock):
        return f"[image {block.alt_text or _media_label(block.media)}]".replace(" ]", "]")
    if isinstance(block, AudioBlock):
        inner = f"transcript: {block.transcript}" if block.transcript else _media_label(block.media)
        return f"[audio {inner}]".replace(" ]", "]")
    if isinstance(block, VideoBlock):
        return f"[video {_media_label(block.media)}]".replace(" ]", "]")
    if isinstance(block, DocumentBlock):
        label = _media_label(block.media)
        body = block.excerpt or block.text or ""
        inner = f"{label}: {cap(one_line(body), max_result_chars)}" if body else label
        return f"[document {inner}]".replace(" ]", "]")
    if isinstance(block, DataBlock):
        return f"[data {block.mime_type}]"
    if isinstance(block, ReasoningBlock | AnnotationBlock):
        return ""
    return ""


def render_message(message: Message, *, max_result_chars: int = 2000) -> str:
    """One transcript line for ``message`` (without a trailing newline)."""
    parts = [_block_text(block, max_result_chars) for block in message.content]
    if not any(isinstance(b, ToolCallBlock) for b in message.content):
        parts.extend(_call_text(call) for call in message.tool_call_blocks())
    body = one_line(" ".join(p for p in parts if p))
    return f"{message.role}: {body}" if body else f"{message.role}:"


def render_transcript(messages: Sequence[Message], *, max_result_chars: int = 2000) -> str:
    """The transcript of ``messages``: one ``role: text`` line each, tool calls as ``name(args-json)``."""
    if max_result_chars < 0:
        raise ConfigurationError(f"max_result_chars must be >= 0, got {max_result_chars}")
    return "\n".join(render_message(m, max_result_chars=max_result_chars) for m in messages)
