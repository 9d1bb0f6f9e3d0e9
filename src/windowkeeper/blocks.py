"""Content blocks: the typed pieces a `Message` is made of.

Every block carries a literal ``type`` so that one discriminated union (`ContentBlock`) validates any stored or
received history and rejects an unknown block type with an error that names it. Blocks are frozen values: a
change to a message's content is made by replacing blocks, which keeps cached token counts honest.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue


class _Block(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class MediaRef(BaseModel):
    """Where a piece of media lives: a URL, a provider file id, or inline base64 data.

    The optional size fields let token counters estimate media cost without decoding anything.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["url", "file_id", "data"] = "url"
    url: str | None = None
    file_id: str | None = None
    data_base64: str | None = None
    mime_type: str | None = None
    size_bytes: int | None = None
    filename: str | None = None
    sha256: str | None = None
    width: int | None = None
    height: int | None = None
    duration_ms: int | None = None
    page: int | None = None


class AnnotationRef(BaseModel):
    """A citation or reference attached to text (search results, file citations)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    url: str | None = None
    file_id: str | None = None
    page: int | None = None
    index: int | None = None
    title: str | None = None


class TextBlock(_Block):
    type: Literal["text"] = "text"
    text: str
    annotations: list[AnnotationRef] = Field(default_factory=list)


class ImageBlock(_Block):
    type: Literal["image"] = "image"
    media: MediaRef
    alt_text: str | None = None
    bbox: list[float] | None = None


class AudioBlock(_Block):
    type: Literal["audio"] = "audio"
    media: MediaRef
    transcript: str | None = None
    sample_rate: int | None = None
    channels: int | None = None


class VideoBlock(_Block):
    type: Literal["video"] = "video"
    media: MediaRef
    thumbnail: MediaRef | None = None


class DocumentBlock(_Block):
    type: Literal["document"] = "document"
    media: MediaRef | None = None
    text: str | None = None
    pages: list[int] | None = None
    excerpt: str | None = None


class DataBlock(_Block):
    type: Literal["data"] = "data"
    mime_type: str
    data_base64: str | None = None
    media: MediaRef | None = None


class ToolCallBlock(_Block):
    """A tool invocation requested by the model; ``id`` pairs it with its `ToolResultBlock`."""

    type: Literal["tool_call"] = "tool_call"
    id: str
    name: str
    args: dict[str, Any] = Field(default_factory=dict)
    tool_type: str | None = None


class ToolResultBlock(_Block):
    """The output of one tool call; ``call_id`` equals the `ToolCallBlock.id` it answers."""

    type: Literal["tool_result"] = "tool_result"
    call_id: str
    output: JsonValue = None
    status: Literal["completed", "error"] = "completed"
    name: str | None = None


class ReasoningBlock(_Block):
    """Model reasoning. ``id`` and ``signature`` are the provider's opaque handles (OpenAI Responses reasoning item
    id and ``encrypted_content``, Anthropic thinking signature, Gemini ``thoughtSignature``) that a provider needs
    to accept the reasoning back in a later request."""

    type: Literal["reasoning"] = "reasoning"
    text: str
    summary: str | None = None
    id: str | None = None
    signature: str | None = None


class ErrorBlock(_Block):
    type: Literal["error"] = "error"
    error: str
    tool_call_id: str | None = None
    code: str | None = None


class AnnotationBlock(_Block):
    type: Literal["annotation"] = "annotation"
    annotation: AnnotationRef


ContentBlock = Annotated[
    TextBlock
    | ImageBlock
    | AudioBlock
    | VideoBlock
    | DocumentBlock
    | DataBlock
    | ToolCallBlock
    | ToolResultBlock
    | ReasoningBlock
    | ErrorBlock
    | AnnotationBlock,
    Field(discriminator="type"),
]
"""Any block; validated by its ``type`` tag."""

MEDIA_BLOCK_TYPES: tuple[type[_Block], ...] = (ImageBlock, AudioBlock, VideoBlock, DocumentBlock, DataBlock)


def tool_output_text(output: Any) -> str:
    """Render a tool result's output as the text a model would read."""
    if output is None:
        return ""
    if isinstance(output, str):
        return output
    import json

    return json.dumps(output, ensure_ascii=False, sort_keys=False)


__all__ = [
    "MEDIA_BLOCK_TYPES",
    "AnnotationBlock",
    "AnnotationRef",
    "AudioBlock",
    "ContentBlock",
    "DataBlock",
    "DocumentBlock",
    "ErrorBlock",
    "ImageBlock",
    "MediaRef",
    "ReasoningBlock",
    "TextBlock",
    "ToolCallBlock",
    "ToolResultBlock",
    "VideoBlock",
    "tool_output_text",
]
