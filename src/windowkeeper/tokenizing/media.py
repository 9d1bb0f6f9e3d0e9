"""Token estimates for images, audio, video, documents, opaque data and encrypted payloads.

Providers bill media by what it depicts (pixels, seconds, pages), not by the characters of its base64 encoding,
so a counter that tokenized the payload would overcount a screenshot by ~100x, and one that skipped it would count
it as free. Each estimate uses the best information available, in this order: explicit metadata (width/height,
duration, pages), the dimensions an inline image's own header states (read with ``imagesize`` from its first
bytes), then the byte size (``size_bytes`` or the decoded length of inline base64, computed from the string length
without decoding), then a documented default. Every estimate is at least 1 token.

The constants are published rates where one exists (OpenAI's image tiling, Gemini's per-second video and audio
rates, Anthropic's per-page PDF range) and deliberately round assumptions otherwise; they are module constants so every
assumption is visible in one place.
"""

from __future__ import annotations

import base64
import binascii
import io
import math
import re
from collections.abc import Callable

import imagesize

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
IMAGE_HEADER_BYTES = 65_536
"""How much of an inline image is decoded to read its dimensions: PNG, GIF and WebP state them in their first few
dozen bytes; a JPEG in its frame header, which follows its metadata (EXIF, a thumbnail) and is almost always within
the first 64 kB. An image whose header is not found there is estimated from its byte size."""

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

ENCRYPTED_CHARS_PER_TOKEN = 5.0
"""Base64 characters of an encrypted payload per hidden token it carries (see `encrypted_tokens`)."""


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


def inline_image_size(data_base64: str) -> tuple[int, int] | None:
    """``(width, height)`` as the header of an inline image states them (PNG, JPEG, GIF, WebP and the other
    formats ``imagesize`` reads), or None when its first `IMAGE_HEADER_BYTES` do not tell.

    A screenshot's byte size says little about its shape: a 640x400 PNG priced as a square of its size cost 765
    tokens where the provider's tiling charges 425, and a wide banner can cost more than its square would."""
    start = data_base64.find(",", 0, 256) + 1 if data_base64.startswith("data:") else 0
    head = "".join(data_base64[start : start + IMAGE_HEADER_BYTES // 3 * 4].split())
    try:
        if "-" in head or "_" in head:
            raw = base64.urlsafe_b64decode(head + "=" * (-len(head) % 4))
        else:
            raw = base64.b64decode(head + "=" * (-len(head) % 4))
    except (binascii.Error, ValueError):
        return None
    width, height = imagesize.get(io.BytesIO(raw))
    return (width, height) if width > 0 and height > 0 else None


def image_tokens(media: MediaRef | None) -> int:
    """Estimate for an image: from its dimensions (given, or read from its inline header), else its byte size (as
    a square), else the default."""
    if media is not None and media.width and media.height:
        return image_tokens_for_size(media.width, media.height)
    found = inline_image_size(media.data_base64) if media is not None and media.data_base64 else None
    if found is not None:
        return image_tokens_for_size(*found)
    size = media_size_bytes(media)
    if size:
        side = max(1, round(math.sqrt(size / IMAGE_BYTES_PER_PIXEL)))
        return image_tokens_for_size(side, side)
    return IMAGE_DEFAULT_TOKENS


def encrypted_tokens(payload: str) -> int:
    """Estimated tokens of the hidden text an encrypted payload carries, from its length alone.

    A provider hands back what the model must not show as ciphertext and decrypts it into the context of the next
    request, where it takes room and is billed by its tokens: OpenAI Responses reasoning ``encrypted_content``,
    Anthropic ``redacted_thinking`` ``data`` and a thinking ``signature``, a ``web_search_result``'s
    ``encrypted_content`` (the page), Gemini's ``thoughtSignature`` ("an encrypted representation of the model's
    internal reasoning state"). Neither its summary (often empty) nor its characters (o200k spends a token on
    ~1.5 characters of base64, three times the real cost) say what it costs.

    The estimate: ciphertext is about as long as its plaintext (no compression assumed), base64 turns 3 bytes into
    4 characters, and text runs ~3.75 bytes per token, so one token per `ENCRYPTED_CHARS_PER_TOKEN` (5)
    characters. It matches what was measured: 4.9 to 5.0 characters of gpt-5-mini ``encrypted_content`` per
    reasoning token the API reported for it, over three turns (inspect_ai pull request 3809), and sits just above
    OpenAI's Codex CLI, which estimates a reasoning item as its decoded bytes less a 650-byte envelope at 4 bytes
    per token (about 5.3 characters per token): a budget should err on the side of the window. Whether a model
    still reads reasoning from earlier turns varies by model (Anthropic drops earlier turns' thinking); sent, it is
    counted, since the request must fit either way.
    """
    return math.ceil(len(payload) / ENCRYPTED_CHARS_PER_TOKEN) if payload else 0


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
_BARE_PAYLOAD = re.compile(r'"(data|result|b64_json|file_data|image_data|bytes)":"([A-Za-z0-9+/]{256,}={0,2})"')
"""A media payload written as a bare base64 string under a key that holds one (compact JSON, as stand-ins are
written): an Anthropic base64 ``source`` nested in a server tool's result (a fetched PDF), a Responses
``image_generation_call``'s ``result``. Only payloads whose decoded bytes start with a media file signature
(`_sniff`) count as media: an encrypted blob or any other base64 stays text."""
_ENCRYPTED = re.compile(r'"(encrypted_[a-z_]+)":"([A-Za-z0-9+/=_-]{16,})"')
"""An encrypted value in a stand-in's compact JSON: an Anthropic ``web_search_result``'s page, a Responses
``compaction`` item's summary (`encrypted_tokens` prices it)."""
_SIGNATURES: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF8", "image/gif"),
    (b"%PDF", "application/pdf"),
    (b"ID3", "audio/mpeg"),
    (b"OggS", "audio/ogg"),
    (b"fLaC", "audio/flac"),
    (b"\x1aE\xdf\xa3", "video/webm"),
)


def _sniff(payload: str) -> str | None:
    """The MIME type a base64 ``payload``'s first bytes announce (PNG, JPEG, GIF, WebP, PDF, MP3, WAV, Ogg, FLAC,
    WebM, MP4), or None."""
    try:
        head = base64.b64decode(payload[:16])
    except binascii.Error:
        return None
    for signature, mime in _SIGNATURES:
        if head.startswith(signature):
            return mime
    if head.startswith(b"RIFF"):
        return "image/webp" if head[8:12] == b"WEBP" else "audio/wav" if head[8:12] == b"WAVE" else None
    if head[4:8] == b"ftyp":
        return "audio/mp4" if head[8:11] == b"M4A" else "video/mp4"
    return None


def _payload_tokens(mime: str, payload: str, count_text: Callable[[str], int]) -> int:
    ref = MediaRef(kind="data", data_base64=payload, mime_type=mime)
    kind = mime.split("/", 1)[0]
    block: MediaBlock = (
        ImageBlock(media=ref)
        if kind == "image"
        else AudioBlock(media=ref)
        if kind == "audio"
        else VideoBlock(media=ref)
        if kind == "video"
        else DocumentBlock(media=ref)
    )
    return media_tokens(block, count_text)


def stand_in_tokens(text: str, count_text: Callable[[str], int]) -> int:
    """Tokens of the stand-in of a part no format models (``[unknown kind] {json}``, see
    `windowkeeper.blocks.UNKNOWN_PREFIX`: a Responses ``computer_call_output``...), pricing the media it embeds
    (data URIs, like a screenshot, and bare base64 payloads of media files, like a generated image or a fetched
    PDF) as media, not as the characters of their base64: one 80 KB screenshot tokenized as text is ~55,000
    tokens, as an image ~1,000. An encrypted value in it (a searched page, an encrypted summary) is priced as the
    hidden text it carries (`encrypted_tokens`), not as its base64. The counters call it only for such a text
    (they test the prefix inline, on their hot path)."""
    sniffed: list[tuple[str, str]] = []
    stripped = without_embedded_data(text, sniffed)
    sealed = 0
    if "encrypted_" in stripped:
        stripped, sealed = _without_encrypted(stripped)
    if stripped is text:
        return count_text(text)
    media = sealed
    for found in _DATA_URI.finditer(text):
        media += _payload_tokens(found.group(1), found.group(2), count_text)
    for mime, payload in sniffed:
        media += _payload_tokens(mime, payload, count_text)
    return media + count_text(stripped)


def _without_encrypted(text: str) -> tuple[str, int]:
    """``text`` with each encrypted value (`_ENCRYPTED`) emptied, and the tokens they carry; ``text`` itself when it
    holds none."""
    tokens = 0

    def seal(found: re.Match[str]) -> str:
        nonlocal tokens
        tokens += encrypted_tokens(found.group(2))
        return f'"{found.group(1)}":""'

    out = _ENCRYPTED.sub(seal, text)
    return (out, tokens) if tokens else (text, 0)


def without_embedded_data(text: str, sniffed: list[tuple[str, str]] | None = None) -> str:
    """``text`` with the payload of each media file it embeds left out: a ``data:`` URI's
    (``data:image/png;base64,...``) and a bare base64 payload's (see `_BARE_PAYLOAD`). What an index or a reader of
    a stand-in's JSON can use of it (base64 is neither searchable nor readable). ``text`` itself when it embeds
    none; ``sniffed`` receives ``(mime, payload)`` of each bare payload left out."""
    out = _DATA_URI.sub(r"data:\1;base64,", text) if "base64," in text else text
    if '":"' not in out:
        return out if out != text else text

    def bare(found: re.Match[str]) -> str:
        mime = _sniff(found.group(2))
        if mime is None:
            return found.group(0)
        if sniffed is not None:
            sniffed.append((mime, found.group(2)))
        return f'"{found.group(1)}":""'

    out = _BARE_PAYLOAD.sub(bare, out)
    return out if out != text else text


__all__ = [
    "AUDIO_TOKENS_PER_SECOND",
    "DOCUMENT_TOKENS_PER_PAGE",
    "ENCRYPTED_CHARS_PER_TOKEN",
    "IMAGE_DEFAULT_TOKENS",
    "VIDEO_TOKENS_PER_SECOND",
    "MediaBlock",
    "audio_tokens",
    "base64_decoded_size",
    "data_tokens",
    "document_tokens",
    "encrypted_tokens",
    "image_tokens",
    "image_tokens_for_size",
    "inline_image_size",
    "media_size_bytes",
    "media_tokens",
    "video_tokens",
]
