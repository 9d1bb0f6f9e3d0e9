"""Token estimates for images, audio, video, documents and opaque data.

Providers bill media by what it depicts (pixels, seconds, pages), not by the characters of its base64 encoding,
so a counter that tokenized the payload would overcount a screenshot by ~100x, and one that skipped it would count
it as free. Each estimate uses the best information available, in this order: explicit metadata (width/height,
duration, pages), then the byte size (``size_bytes`` or the decoded length of inline base64, computed from the
string length without decoding), then a documented default. Every estimate is at least 1 token.

The constants are published rates where one exists (OpenAI's image tiling, Gemini's per-second video and audio
rates, Anthropic's per-page PDF range) and deliberately round assumptions otherwise; they are module constants so every
assumption is visible in one place.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

from ..blocks import AudioBlock, DataBlock, DocumentBlock, ImageBlock, MediaRef, VideoBlock

# OpenAI high-detail image pricing: fit into 2048x2048, scale the short side down to 768, then
# 85 base tokens + 170 per 512x512 tile.
IMAGE_BASE_TOKENS = 85
IMAGE_TILE_TOKENS = 170
IMAGE_TILE_PX = 512
IMAGE_MAX_SIDE_PX = 2048
IMAGE_SHORT_SIDE_PX = 768
IMAGE_DEFAULT_TOKENS = IMAGE_BASE_TOKENS + 4 * IMAGE_TILE_TOKENS
"""A square image of at least 768 px (4 tiles): what an image of unknown size is assumed to cost."""
IMAGE_BYTES_PER_PIXEL = 0.5
"""Typical compressed size of photos and screenshots; turns a byte size into a pixel count (square assumed)."""

AUDIO_TOKENS_PER_SECOND = 32.0
AUDIO_BYTES_PER_SECOND = 16_000.0
"""128 kbit/s compressed audio."""
AUDIO_DEFAULT_SECONDS = 30.0

VIDEO_TOKENS_PER_SECOND = 290.0
"""One sampled frame per second (258) plus its audio track (32)."""
VIDEO_BYTES_PER_SECOND = 250_000.0
"""2 Mbit/s compressed video."""
VIDEO_DEFAULT_SECONDS = 10.0

DOCUMENT_TOKENS_PER_PAGE = 1500
"""Lower end of the 1,500-3,000 tokens a PDF page costs when sent as text plus page image."""
DOCUMENT_BYTES_PER_PAGE = 60_000.0

DATA_BYTES_PER_TOKEN = 4.0
"""Opaque data sent as a file is assumed to cost like text of the same byte length."""


def base64_decoded_size(data: str) -> int:
    """Byte length the base64 string decodes to, without decoding it (a ``data:...;base64,`` prefix is skipped)."""
    comma = data.find(",", 0, 256)
    if comma != -1 and data.startswith("data:"):
        data = data[comma + 1 :]
    length = len(data)
    if length == 0:
        return 0
    if length > 4096 and "\n" not in data[:4096] and " " not in data[:4096]:
        # compact payloads: no whitespace to strip, count directly
        stripped = length
    else:
        stripped = length - sum(data.count(ws) for ws in ("\n", "\r", " ", "\t"))
    padding = 2 if data.endswith("==") else 1 if data.endswith("=") else 0
    return max(0, stripped * 3 // 4 - padding)


def media_size_bytes(media: MediaRef | None) -> int | None:
    """The media's byte size from ``size_bytes`` or its inline base64 payload; ``None`` when unknown."""
    if media is None:
        return None
    if media.size_bytes is not None and media.size_bytes > 0:
        return media.size_bytes
    if media.data_base64:
        return base64_decoded_size(media.data_base64)
    return None


def image_tokens_for_size(width: int, height: int) -> int:
    """OpenAI's high-detail tile formula for an image of ``width`` x ``height`` pixels."""
    w, h = float(max(1, width)), float(max(1, height))
    if max(w, h) > IMAGE_MAX_SIDE_PX:
        scale = IMAGE_MAX_SIDE_PX / max(w, h)
        w, h = w * scale, h * scale
    if min(w, h) > IMAGE_SHORT_SIDE_PX:
        scale = IMAGE_SHORT_SIDE_PX / min(w, h)
        w, h = w * scale, h * scale
    tiles = math.ceil(w / IMAGE_TILE_PX) * math.ceil(h / IMAGE_TILE_PX)
    return IMAGE_BASE_TOKENS + IMAGE_TILE_TOKENS * tiles


def image_tokens(media: MediaRef | None) -> int:
    """Estimate for an image: from its dimensions, else its byte size (as a square), else the default."""
    if media is not None and media.width and media.height:
        return image_tokens_for_size(media.width, media.height)
    size = media_size_bytes(media)
    if size:
        side = max(1, round(math.sqrt(size / IMAGE_BYTES_PER_PIXEL)))
        return image_tokens_for_size(side, side)
    return IMAGE_DEFAULT_TOKENS


def _timed_tokens(
    media: MediaRef | None, tokens_per_second: float, bytes_per_second: float, default_seconds: float
) -> int:
    if media is not None and media.duration_ms:
        seconds = media.duration_ms / 1000.0
    else:
        size = media_size_bytes(media)
        seconds = size / bytes_per_second if size else default_seconds
    return max(1, math.ceil(seconds * tokens_per_second))


def audio_tokens(media: MediaRef | None) -> int:
    return _timed_tokens(media, AUDIO_TOKENS_PER_SECOND, AUDIO_BYTES_PER_SECOND, AUDIO_DEFAULT_SECONDS)


def video_tokens(media: MediaRef | None) -> int:
    return _timed_tokens(media, VIDEO_TOKENS_PER_SECOND, VIDEO_BYTES_PER_SECOND, VIDEO_DEFAULT_SECONDS)


def _pages_tokens(pages: float) -> int:
    return max(1, math.ceil(pages * DOCUMENT_TOKENS_PER_PAGE))


def document_tokens(block: DocumentBlock, count_text: Callable[[str], int]) -> int:
    """A document costs its extracted text when present, else its pages, else its byte size, else one page."""
    if block.text:
        return max(1, count_text(block.text))
    if block.pages:
        return _pages_tokens(len(block.pages))
    size = media_size_bytes(block.media)
    if size:
        return _pages_tokens(max(1.0, size / DOCUMENT_BYTES_PER_PAGE))
    if block.excerpt:
        return max(1, count_text(block.excerpt))
    return _pages_tokens(1)


def data_tokens(block: DataBlock) -> int:
    """Opaque data is routed by MIME type: media types use their media estimate, anything else its byte size."""
    media = block.media
    if block.data_base64 and (media is None or media_size_bytes(media) is None):
        # the payload sits on the block itself: give the estimators its size, keep any dimensions/duration
        size = base64_decoded_size(block.data_base64)
        if media is None:
            media = MediaRef(kind="data", size_bytes=size)
        else:
            media = media.model_copy(update={"size_bytes": size})
    mime = block.mime_type.lower()
    if mime.startswith("image/"):
        return image_tokens(media)
    if mime.startswith("audio/"):
        return audio_tokens(media)
    if mime.startswith("video/"):
        return video_tokens(media)
    known = media_size_bytes(media)
    if mime == "application/pdf":
        return _pages_tokens(max(1.0, known / DOCUMENT_BYTES_PER_PAGE) if known else 1.0)
    return max(1, math.ceil(known / DATA_BYTES_PER_TOKEN)) if known else 1


MediaBlock = ImageBlock | AudioBlock | VideoBlock | DocumentBlock | DataBlock


def media_tokens(block: MediaBlock, count_text: Callable[[str], int]) -> int:
    """Estimated tokens of any media block; ``count_text`` prices a document's extracted text."""
    if isinstance(block, ImageBlock):
        return image_tokens(block.media)
    if isinstance(block, AudioBlock):
        return audio_tokens(block.media)
    if isinstance(block, VideoBlock):
        return video_tokens(block.media)
    if isinstance(block, DocumentBlock):
        return document_tokens(block, count_text)
    return data_tokens(block)


_DATA_URI = re.compile(r"data:([\w.+-]+/[\w.+-]+);base64,([A-Za-z0-9+/=]{64,})")


def stand_in_tokens(text: str, count_text: Callable[[str], int]) -> int:
    """Tokens of the stand-in of a part no format models (``[unknown kind] {json}``, see
    `windowkeeper.blocks.UNKNOWN_PREFIX`: a Responses ``computer_call_output``...), pricing the media it embeds as
    data URIs (a screenshot) as media, not as the characters of their base64: one 80 KB screenshot tokenized as text
    is ~55,000 tokens, as an image ~1,000. The counters call it only for such a text (they test the prefix inline,
    on their hot path)."""
    if "base64," not in text:
        return count_text(text)
    media = 0
    for found in _DATA_URI.finditer(text):
        ref = MediaRef(kind="data", data_base64=found.group(2), mime_type=found.group(1))
        kind = found.group(1).split("/", 1)[0]
        block: MediaBlock = (
            ImageBlock(media=ref)
            if kind == "image"
            else AudioBlock(media=ref)
            if kind == "audio"
            else DocumentBlock(media=ref)
        )
        media += media_tokens(block, count_text)
    return media + count_text(without_embedded_data(text))


def without_embedded_data(text: str) -> str:
    """``text`` with the payload of each ``data:`` URI it embeds (``data:image/png;base64,...``) left out: what an
    index or a reader of a stand-in's JSON can use of it (base64 is neither searchable nor readable)."""
    if "base64," not in text:
        return text
    return _DATA_URI.sub(r"data:\1;base64,", text)


__all__ = [
    "AUDIO_TOKENS_PER_SECOND",
    "DOCUMENT_TOKENS_PER_PAGE",
    "IMAGE_DEFAULT_TOKENS",
    "VIDEO_TOKENS_PER_SECOND",
    "MediaBlock",
    "audio_tokens",
    "base64_decoded_size",
    "data_tokens",
    "document_tokens",
    "image_tokens",
    "image_tokens_for_size",
    "media_size_bytes",
    "media_tokens",
    "video_tokens",
]
