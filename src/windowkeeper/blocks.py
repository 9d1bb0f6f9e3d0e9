"""Content blocks: the typed pieces a `Message` is made of.

Every block carries a literal ``type`` so that one discriminated union (`ContentBlock`) validates any stored or
received history and rejects an unknown block type with an error that names it. Blocks are frozen values: a
change to a message's content is made by replacing blocks, which keeps cached token counts honest.

Every text field goes through `windowkeeper.boundary.clean_text` and every free-form JSON field (tool arguments,
tool output) through `clean_json`, so a lone surrogate is replaced by U+FFFD here, once, for every caller.
"""

from __future__ import annotations

import re
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


# -- building blocks from stored JSON without validation -------------------------------------------------------
#
# Reading a stored history back builds every block again; through pydantic that is a validator call per text field
# and a model constructor per block, most of the cost of reopening a session. `block_from_stored` builds a block
# straight from the JSON its own ``model_dump(mode="json")`` wrote, after checking that each value has exactly the
# type that dump produces and applying the same boundary rule (`clean_text`, `clean_id`, `clean_json`), so the block
# equals the one validation builds. Anything else (a missing ``type``, an extra key, an int where a float is
# written, a block type added later) returns ``None`` and the caller validates in full, which also reports errors.


class NotStoredForm(Exception):
    """Raised inside the stored-form builders: this value is not what a dump writes; validate it in full."""


def _text(value: Any, clean: bool) -> Any:
    if type(value) is not str:
        raise NotStoredForm
    return clean_text(value) if clean else value


def _opt_text(value: Any, clean: bool) -> Any:
    return None if value is None else _text(value, clean)


def _ident(value: Any, clean: bool) -> Any:
    if type(value) is not str:
        raise NotStoredForm
    return clean_id(value) if clean else value


def _opt_ident(value: Any, clean: bool) -> Any:
    return None if value is None else _ident(value, clean)


def _opt_int(value: Any, clean: bool) -> Any:
    if value is None or type(value) is int:
        return value
    raise NotStoredForm


_STR_ONLY = frozenset({str})
"""Key types a decoded JSON object has (checked in C: ``issuperset(map(type, keys))``)."""


def _json_dict(value: Any, clean: bool) -> Any:
    # a new dict, its values shared, as validating ``dict[str, Any]`` gives
    if type(value) is not dict or (value and not _STR_ONLY.issuperset(map(type, value))):
        raise NotStoredForm
    return dict(clean_json(value)) if clean else dict(value)


def _json_copy(value: Any, clean: bool, depth: int = 0) -> Any:
    # new containers all the way down, as validating a ``JsonValue`` gives; decoded JSON is always a valid one
    kind = type(value)
    if kind is str:
        return clean_text(value) if clean else value
    if kind is dict:
        if depth >= _COPY_DEPTH or (value and not _STR_ONLY.issuperset(map(type, value))):
            raise NotStoredForm
        return {(clean_text(k) if clean else k): _json_copy(v, clean, depth + 1) for k, v in value.items()}
    if kind is list:
        if depth >= _COPY_DEPTH:
            raise NotStoredForm
        return [_json_copy(v, clean, depth + 1) for v in value]
    if kind is int or kind is float or kind is bool or value is None:
        return value
    raise NotStoredForm  # not something JSON decodes to (a tuple, a set, an object): validation decides


_COPY_DEPTH = 200
"""Deeper data is left to validation, which refuses what nothing could serialize."""


def _json_value(value: Any, clean: bool) -> Any:
    return _json_copy(value, clean)


def _status(value: Any, clean: bool) -> Any:
    if value == "completed" or value == "error":
        return value
    raise NotStoredForm


def _opt_floats(value: Any, clean: bool) -> Any:
    if value is None:
        return None
    if type(value) is not list or any(type(item) is not float for item in value):
        raise NotStoredForm
    return list(value)


def _media(value: Any, clean: bool) -> Any:
    return _build(MediaRef, value, clean)


def _opt_media(value: Any, clean: bool) -> Any:
    return None if value is None else _build(MediaRef, value, clean)


def _media_kind(value: Any, clean: bool) -> Any:
    if value == "url" or value == "file_id" or value == "data":
        return value
    raise NotStoredForm


def _annotation(value: Any, clean: bool) -> Any:
    return _build(AnnotationRef, value, clean)


def _annotations(value: Any, clean: bool) -> Any:
    if type(value) is not list:
        raise NotStoredForm
    return [_build(AnnotationRef, item, clean) for item in value]


def _opt_ints(value: Any, clean: bool) -> Any:
    if value is None:
        return None
    if type(value) is not list or any(type(item) is not int for item in value):
        raise NotStoredForm
    return list(value)


_Check = Any  # Callable[[Any, bool], Any]; kept loose so the table below stays readable
_FIELD_CHECKS: dict[type[BaseModel], dict[str, _Check]] = {
    MediaRef: {
        "kind": _media_kind,
        "url": _opt_text,
        "file_id": _opt_text,
        "data_base64": _opt_text,
        "mime_type": _opt_text,
        "size_bytes": _opt_int,
        "filename": _opt_text,
        "sha256": _opt_text,
        "width": _opt_int,
        "height": _opt_int,
        "duration_ms": _opt_int,
        "page": _opt_int,
    },
    AnnotationRef: {"url": _opt_text, "file_id": _opt_text, "page": _opt_int, "index": _opt_int, "title": _opt_text},
    TextBlock: {"type": None, "text": _text, "annotations": _annotations},
    ImageBlock: {"type": None, "media": _media, "alt_text": _opt_text, "bbox": _opt_floats},
    AudioBlock: {
        "type": None,
        "media": _media,
        "transcript": _opt_text,
        "sample_rate": _opt_int,
        "channels": _opt_int,
    },
    VideoBlock: {"type": None, "media": _media, "thumbnail": _opt_media},
    DocumentBlock: {
        "type": None,
        "media": _opt_media,
        "text": _opt_text,
        "pages": _opt_ints,
        "excerpt": _opt_text,
    },
    DataBlock: {"type": None, "mime_type": _text, "data_base64": _opt_text, "media": _opt_media},
    ToolCallBlock: {"type": None, "id": _ident, "name": _text, "args": _json_dict, "tool_type": _opt_text},
    ToolResultBlock: {"type": None, "call_id": _ident, "output": _json_value, "status": _status, "name": _opt_text},
    ReasoningBlock: {"type": None, "text": _text, "summary": _opt_text, "id": _opt_text, "signature": _opt_text},
    ErrorBlock: {"type": None, "error": _text, "tool_call_id": _opt_ident, "code": _opt_text},
    AnnotationBlock: {"type": None, "annotation": _annotation},
}
"""Per model, every field in declaration order with the check of its dumped JSON form (``type``: the literal)."""

_BY_TYPE: dict[str, type[BaseModel]] = {
    cls.model_fields["type"].default: cls for cls in _FIELD_CHECKS if "type" in cls.model_fields
}
_set_attribute = object.__setattr__
_new_object = object.__new__
"""Every model here inherits ``object.__new__`` (none defines ``__new__``): called directly, without looking it up."""
set_dict = BaseModel.__dict__["__dict__"].__set__
set_fields_set = BaseModel.__dict__["__pydantic_fields_set__"].__set__
set_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
set_private = BaseModel.__dict__["__pydantic_private__"].__set__
"""The setters of the four slots every pydantic model instance holds, taken from `BaseModel`'s own descriptors:
a model built without validation (a restarted thread's log read builds two or three per message) sets each
through its setter, about 80 ns a slot less than ``object.__setattr__``, which finds the descriptor by name
first."""


def _build(cls: type[BaseModel], data: Any, clean: bool) -> Any:
    """``cls`` from its dumped JSON ``data`` without pydantic's validators, or `NotStoredForm`.

    Only the complete dumped form is built here (every field present, no other key): a dict with fewer keys
    or more is validated instead, which fills in defaults and names what is wrong.
    """
    checks = _FIELD_CHECKS[cls]
    if type(data) is not dict or data.keys() != checks.keys():
        raise NotStoredForm
    values = {name: data[name] if check is None else check(data[name], clean) for name, check in checks.items()}
    return _make(cls, values)


def _make(cls: type[BaseModel], values: dict[str, Any], fields_set: set[str] | None = None) -> Any:
    """A ``cls`` holding ``values`` (every field, in declaration order, already in their validated form);
    ``fields_set`` as the constructor records it (default: every field, as validating a dump records it)."""
    obj = _new_object(cls)
    set_dict(obj, values)
    set_fields_set(obj, _FIELD_SETS[cls].copy() if fields_set is None else fields_set)
    set_extra(obj, None)
    set_private(obj, None)
    return obj


_FIELD_SETS: dict[type[BaseModel], set[str]] = {cls: set(cls.model_fields) for cls in _FIELD_CHECKS}


def _text_block(data: dict[str, Any], clean: bool) -> Any:
    # the common blocks are checked inline: a function call per field was most of the cost
    text, annotations = data["text"], data["annotations"]
    if type(text) is not str or type(annotations) is not list or len(data) != 3:
        raise NotStoredForm
    return _make(
        TextBlock,
        {
            "type": "text",
            "text": clean_text(text) if clean else text,
            "annotations": [_build(AnnotationRef, a, clean) for a in annotations] if annotations else [],
        },
    )


def _tool_call_block(data: dict[str, Any], clean: bool) -> Any:
    call_id, name, args, tool_type = data["id"], data["name"], data["args"], data["tool_type"]
    if type(call_id) is not str or type(name) is not str or len(data) != 5:
        raise NotStoredForm
    return _make(
        ToolCallBlock,
        {
            "type": "tool_call",
            "id": clean_id(call_id) if clean else call_id,
            "name": clean_text(name) if clean else name,
            "args": _json_dict(args, clean),
            "tool_type": _opt_text(tool_type, clean),
        },
    )


def _tool_result_block(data: dict[str, Any], clean: bool) -> Any:
    call_id, output, status, name = data["call_id"], data["output"], data["status"], data["name"]
    if type(call_id) is not str or (status != "completed" and status != "error") or len(data) != 5:
        raise NotStoredForm
    return _make(
        ToolResultBlock,
        {
            "type": "tool_result",
            "call_id": clean_id(call_id) if clean else call_id,
            "output": (clean_text(output) if clean else output) if type(output) is str else _json_copy(output, clean),
            "status": status,
            "name": _opt_text(name, clean),
        },
    )


_FAST: dict[str, Any] = {"text": _text_block, "tool_call": _tool_call_block, "tool_result": _tool_result_block}


def make_block(kind: str, **values: Any) -> ContentBlock:
    """A text, tool call or tool result block from values whose types the caller guarantees (``str`` text and
    ids, a ``dict`` of ``args``), without pydantic's validators; the boundary rule is still applied.

    For code of this library that builds many blocks from its own stored data (a reopened memory builds every
    compacted event this way): the block equals the one the constructor builds. Anything else: use the classes.
    """
    # the calls a reopened memory makes for every compacted event, each kept to a few checks
    if kind == "text" and len(values) == 1:
        text = values.get("text")
        if type(text) is str:
            return _make(TextBlock, {"type": "text", "text": clean_text(text), "annotations": []}, {"text"})  # type: ignore[no-any-return]
    elif kind == "tool_result" and len(values) == 2:
        call_id, output = values.get("call_id"), values.get("output")
        if type(call_id) is str and type(output) is str:
            return _make(  # type: ignore[no-any-return]
                ToolResultBlock,
                {
                    "type": "tool_result",
                    "call_id": clean_id(call_id),
                    "output": clean_text(output),
                    "status": "completed",
                    "name": None,
                },
                {"call_id", "output"},
            )
    elif kind == "tool_result" and len(values) == 4:
        # a budget manager's pointer to a cleared result: call id, output, status and name, one per cleared result
        call_id, output, status, name = (
            values.get("call_id"),
            values.get("output"),
            values.get("status"),
            values.get("name"),
        )
        if (
            type(call_id) is str
            and type(output) is str
            and (status == "completed" or status == "error")
            and (type(name) is str or (name is None and "name" in values))
        ):
            return _make(  # type: ignore[no-any-return]
                ToolResultBlock,
                {
                    "type": "tool_result",
                    "call_id": clean_id(call_id),
                    "output": clean_text(output),
                    "status": status,
                    "name": None if name is None else clean_text(name),
                },
                {"call_id", "output", "status", "name"},
            )
    try:
        block: ContentBlock = _FAST[kind]({**_FULL_DEFAULTS[kind], **values}, True)
        _set_attribute(block, "__pydantic_fields_set__", set(values))  # as the constructor records it
    except (NotStoredForm, KeyError):
        block = _BY_TYPE[kind](**values)  # type: ignore[assignment]  # validation names what is wrong
    return block


_FULL_DEFAULTS: dict[str, dict[str, Any]] = {
    "text": {"type": "text", "annotations": []},
    "tool_call": {"type": "tool_call", "args": {}, "tool_type": None},
    "tool_result": {"type": "tool_result", "output": None, "status": "completed", "name": None},
}


def block_from_stored(data: Any, *, clean: bool = True) -> ContentBlock | None:
    """The block whose ``model_dump(mode="json")`` is ``data``, built without validation; ``None`` when ``data``
    is not in that form (validate it instead: that also explains what is wrong).

    ``data`` must be decoded JSON (dicts, lists, str, int, float, bool, None). The block equals the one
    ``TypeAdapter(ContentBlock).validate_python(data)`` builds, at a fraction of the cost. ``clean=False`` skips
    the boundary rule and is only for data known to hold no lone surrogate (decoded by a parser that refuses them).
    """
    if type(data) is not dict:
        return None
    kind = data.get("type")
    cls = _BY_TYPE.get(kind)  # type: ignore[arg-type]
    if cls is None:
        return None  # no type, or one this version does not know
    try:
        fast = _FAST.get(kind)  # type: ignore[arg-type]
        block: ContentBlock = _build(cls, data, clean) if fast is None else fast(data, clean)
    except (NotStoredForm, KeyError):
        return None
    return block


_NESTED: dict[type[BaseModel], tuple[tuple[str, type[BaseModel], bool], ...]] = {
    TextBlock: (("annotations", AnnotationRef, True),),
    ImageBlock: (("media", MediaRef, False),),
    AudioBlock: (("media", MediaRef, False),),
    VideoBlock: (("media", MediaRef, False), ("thumbnail", MediaRef, False)),
    DocumentBlock: (("media", MediaRef, False),),
    DataBlock: (("media", MediaRef, False),),
    AnnotationBlock: (("annotation", AnnotationRef, False),),
}
"""Per block model, its fields that hold models: (name, model, whether a list of them)."""


def block_from_trusted(data: Any) -> ContentBlock | None:
    """`block_from_stored` for a block this library dumped itself and that is unchanged since (see
    `windowkeeper.messages.message_from_trusted`): only its shape is checked (a type this version knows, the
    complete set of keys, nested models likewise), its values are taken as they are, in ``data`` itself."""
    if type(data) is not dict:
        return None
    spec = _TRUSTED.get(data.get("type"))  # type: ignore[arg-type]
    if spec is None:
        return None  # no type, or one this version does not know
    cls, keys, nested, fields_set = spec
    if data.keys() != keys:
        return None
    for name, model, many in nested:
        value = data[name]
        if many:
            if type(value) is not list:
                return None
            if value:
                items = [_trusted_model(model, item) for item in value]
                if None in items:
                    return None
                data[name] = items
        elif value is not None:
            made = _trusted_model(model, value)
            if made is None:
                return None
            data[name] = made
    # `_make` inlined: this runs for every block of a restarted thread's log
    block: ContentBlock = _new_object(cls)  # type: ignore[assignment]  # cls is the model of the block's type
    set_dict(block, data)
    set_fields_set(block, fields_set.copy())
    set_extra(block, None)
    set_private(block, None)
    return block


_TRUSTED: dict[str, tuple[type[BaseModel], Any, tuple[tuple[str, type[BaseModel], bool], ...], set[str]]] = {
    kind: (cls, _FIELD_CHECKS[cls].keys(), _NESTED.get(cls, ()), _FIELD_SETS[cls]) for kind, cls in _BY_TYPE.items()
}
"""Per block type, what `block_from_trusted` needs of its model, found in one lookup: the class, its dumped keys,
its nested models and the field set every instance gets a copy of."""


def _trusted_model(cls: type[BaseModel], data: Any) -> Any:
    if type(data) is not dict or data.keys() != _FIELD_CHECKS[cls].keys():
        return None
    return _make(cls, data)


def tool_output_text(output: Any) -> str:
    """Render a tool result's output as the text a model would read."""
    if output is None:
        return ""
    if isinstance(output, str):
        return output
    import json

    return json.dumps(output, ensure_ascii=False, sort_keys=False)


UNKNOWN_PREFIX = "[unknown "
"""How the text standing for a part or item of a kind no format models starts: ``[unknown <kind>] <its JSON>``
(`windowkeeper.llm.formats` writes it, so that such a message still counts, fits and passes through unchanged)."""

_OPAQUE_RUN = re.compile(r"[A-Za-z0-9]{32}")
"""32 letters or digits in a row without a break: base64 data, an encrypted blob, a signature, a digest."""


def unknown_kind(text: str) -> str | None:
    """The kind named by the stand-in of a part no format models (``[unknown <kind>] <its JSON>``), or None when
    ``text`` is not one."""
    if not text.startswith(UNKNOWN_PREFIX):
        return None
    end = text.find("] ", len(UNKNOWN_PREFIX))
    return text[len(UNKNOWN_PREFIX) : end] if end >= 0 else None


def readable_text(text: str) -> str:
    """``text`` as a reader of a summary or a transcript should get it.

    Text stands as it is, except the stand-in of a part of a kind no format models (``[unknown kind] {json}``: a
    web search result, a server-side tool call, a generated image...). Its JSON is mostly ids, type tags and opaque
    values (encrypted content, signatures, base64 data), which tell a reader nothing and which an extractive
    summary would even pick as rare identifiers. What stays is the kind and each readable value under its key:
    ``[web_search_tool_result] url: https://...; title: Lisbon trams``.
    """
    kind = unknown_kind(text)
    if kind is None:
        return text
    end = len(UNKNOWN_PREFIX) + len(kind)
    import json

    try:
        value = json.loads(text[end + 2 :])
    except ValueError:
        return text
    pairs: list[str] = []
    _readable_values(value, "", pairs, tagged=False)
    return f"[{kind}] {'; '.join(pairs)}" if pairs else f"[{kind}]"


def _readable_values(value: Any, key: str, out: list[str], *, tagged: bool = True) -> None:
    """``key: value`` for each scalar inside ``value`` a reader can use: no ids or opaque strings. A ``type`` is
    kept only where it says what happened (``action: type: click``), not as the tag of the part itself (its kind,
    already named) or of each entry of a list (``web_search_result``)."""
    if isinstance(value, dict):
        for k, v in value.items():
            if (tagged or k != "type") and k != "id" and not k.endswith(("_id", "Id")):
                _readable_values(v, str(k), out)
    elif isinstance(value, list):
        for v in value:
            _readable_values(v, key, out, tagged=False)
    elif isinstance(value, str):
        text = value.strip()
        opaque = _OPAQUE_RUN.search(text) and not text.count(" ") and not text.startswith(("http://", "https://"))
        if text and not opaque:
            out.append(f"{key}: {text}" if key else text)
    elif isinstance(value, bool | int | float):
        out.append(f"{key}: {value}" if key else str(value))
