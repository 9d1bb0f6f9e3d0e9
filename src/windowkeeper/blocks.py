"""Content blocks: the typed pieces a `Message` is made of.

Every block carries a literal ``type`` so that one discriminated union (`ContentBlock`) validates any stored or
received history and rejects an unknown block type with an error that names it. Blocks are frozen values: a
change to a message's content is made by replacing blocks, which keeps cached token counts honest.

Every text field goes through `windowkeeper.boundary.clean_text` and every free-form JSON field (tool arguments,
tool output) through `clean_json`, so a lone surrogate is replaced by U+FFFD here, once, for every caller.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, JsonValue

from .boundary import clean_id, clean_json, clean_text

Text = Annotated[str, AfterValidator(clean_text)]
"""A string with lone surrogates replaced (see `windowkeeper.boundary`)."""

Id = Annotated[str, AfterValidator(clean_id)]
"""An identifier with lone surrogates escaped, so two different ids never become one."""


_CONFIG = ConfigDict(frozen=True, extra="forbid", ser_json_inf_nan="constants")
"""NaN and Infinity are written as JSON constants, never silently as ``null``: stores then refuse them loudly."""


class _Block(BaseModel):
    model_config = _CONFIG


class MediaRef(BaseModel):
    """Where a piece of media lives: a URL, a provider file id, or inline base64 data.

    The optional size fields let token counters estimate media cost without decoding anything.
    """

    model_config = _CONFIG

    kind: Literal["url", "file_id", "data"] = "url"
    url: Text | None = None
    file_id: Text | None = None
    data_base64: Text | None = None
    mime_type: Text | None = None
    size_bytes: int | None = None
    filename: Text | None = None
    sha256: Text | None = None
    width: int | None = None
    height: int | None = None
    duration_ms: int | None = None
    page: int | None = None


class AnnotationRef(BaseModel):
    """A citation or reference attached to text (search results, file citations)."""

    model_config = _CONFIG

    url: Text | None = None
    file_id: Text | None = None
    page: int | None = None
    index: int | None = None
    title: Text | None = None


class TextBlock(_Block):
    type: Literal["text"] = "text"
    text: Text
    annotations: list[AnnotationRef] = Field(default_factory=list)


class ImageBlock(_Block):
    type: Literal["image"] = "image"
    media: MediaRef
    alt_text: Text | None = None
    bbox: list[float] | None = None


class AudioBlock(_Block):
    type: Literal["audio"] = "audio"
    media: MediaRef
    transcript: Text | None = None
    sample_rate: int | None = None
    channels: int | None = None


class VideoBlock(_Block):
    type: Literal["video"] = "video"
    media: MediaRef
    thumbnail: MediaRef | None = None


class DocumentBlock(_Block):
    type: Literal["document"] = "document"
    media: MediaRef | None = None
    text: Text | None = None
    pages: list[int] | None = None
    excerpt: Text | None = None


class DataBlock(_Block):
    type: Literal["data"] = "data"
    mime_type: Text
    data_base64: Text | None = None
    media: MediaRef | None = None


class ToolCallBlock(_Block):
    """A tool invocation requested by the model; ``id`` pairs it with its `ToolResultBlock`."""

    type: Literal["tool_call"] = "tool_call"
    id: Id
    name: Text
    args: Annotated[dict[str, Any], AfterValidator(clean_json)] = Field(default_factory=dict)
    tool_type: Text | None = None


class ToolResultBlock(_Block):
    """The output of one tool call; ``call_id`` equals the `ToolCallBlock.id` it answers."""

    type: Literal["tool_result"] = "tool_result"
    call_id: Id
    output: Annotated[JsonValue, AfterValidator(clean_json)] = None
    status: Literal["completed", "error"] = "completed"
    name: Text | None = None


class ReasoningBlock(_Block):
    """Model reasoning. ``id`` and ``signature`` are the provider's opaque handles (OpenAI Responses reasoning item
    id and ``encrypted_content``, Anthropic thinking signature, Gemini ``thoughtSignature``) that a provider needs
    to accept the reasoning back in a later request."""

    type: Literal["reasoning"] = "reasoning"
    text: Text
    summary: Text | None = None
    id: Text | None = None
    signature: Text | None = None


class ErrorBlock(_Block):
    type: Literal["error"] = "error"
    error: Text
    tool_call_id: Id | None = None
    code: Text | None = None


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
