"""What a round trip through a format keeps: each format object states its own rules (`ProviderFormat.round_trip`).

``compare.canonical`` reduces a list of messages by these rules to what survives ``write`` then ``read`` in the
format, so a round trip is tested without pretending a provider keeps what it cannot (see ``docs/formats.md``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True, kw_only=True)
class RoundTripRules:
    """The normalizations a round trip through one format applies (see ``docs/formats.md``)."""

    system: Literal["keep", "one_front", "each_front"] = "keep"
    """System messages stay in place, merge into one at the front, or move to the front one per part."""
    tool_status: bool = False
    """Whether a tool result's error status survives (else it reads back ``completed``, the text saying so)."""
    tool_name: Literal["keep", "drop", "call"] = "drop"
    """A tool result's name is kept, dropped, or taken from its call."""
    json_outputs: bool = False
    """Whether non-text tool outputs survive as JSON (else they come back as their JSON text)."""
    renumber_ids: bool = False
    """Whether call ids may be replaced (compared by order of appearance)."""
    reasoning: Literal["merge_front", "hoist", "in_place"] = "in_place"
    """Reasoning merges into one block at the front, moves to the front of its turn, or stays in place."""
    reasoning_fields: frozenset[str] = frozenset()
    """The `ReasoningBlock` fields besides ``text`` that survive."""
    empty_is_blank_text: bool = False
    """Whether a message with no text and no calls reads back with one empty text block."""
    merge_assistants: bool = False
    """Whether consecutive assistant messages read back as one."""
    calls_last: bool = False
    """Whether tool calls read back after the text of their message."""
    keep_media_mime_on_ref: bool = False
    """Whether a URL or file-id media reference keeps its MIME type."""
    file_id_as_url: bool = False
    """Whether file ids read back as URLs."""
    retype_media_by_mime: bool = False
    """Whether media blocks read back re-typed by their MIME type."""
    default_media_mime: bool = False
    """Whether base64 media without a MIME type reads back with a default (``image/png``, ``application/pdf``)."""
    canonical_audio_mime: bool = False
    """Whether audio MIME aliases (``audio/x-wav``, ``audio/mp3``...) read back unified."""
    document_filename: bool = True
    """Whether a document's filename survives."""
    text_documents_as_text: bool = False
    """Whether a text-only document reads back as a text block (formats without a document part)."""
    signature_text: bool = False
    """Whether an empty text part carrying a signature reads back as the signature alone (Gemini)."""
