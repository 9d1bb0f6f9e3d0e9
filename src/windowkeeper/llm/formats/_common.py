"""Helpers shared by the provider converters: payload coercion, media references, JSON arguments.

Every converter reads untrusted dicts (files, SDK replies), so the checks here raise `FormatError` with the
message index and the key path of the offending value instead of letting a ``KeyError`` escape.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import re
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, TypeVar, cast

from pydantic import ValidationError
from pydantic_core import to_json

from ...blocks import (
    UNKNOWN_PREFIX,
    AnnotationBlock,
    AudioBlock,
    ContentBlock,
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
    tool_output_text,
)
from ...blocks import _make as make_block
from ...boundary import MAX_JSON_DEPTH, clean_id, clean_json, clean_text, json_depth
from ...errors import FormatError
from ...messages import BlockList, Message, _key_sorted, _make_message
from ...messages import _NotPlain as _NotSortable
from .wire import AudioFormat

logger = logging.getLogger(__name__)

ReasoningMode = Literal["all", "signed", "none"]
"""Which reasoning blocks a converter writes: every one, only those a provider can verify, or none."""

_DATA_URI = re.compile(r"^data:(?P<mime>[^;,]*)(?P<params>(;[^;,]*)*?);base64,(?P<data>.*)$", re.DOTALL)

MediaBlock = ImageBlock | AudioBlock | VideoBlock | DocumentBlock


def plain(obj: Any) -> Any:
    """A plain-JSON view of ``obj``: SDK pydantic objects are dumped, mappings and sequences copied shallowly."""
    if type(obj) is dict:
        return obj  # the common case, read for every item and part: a dict has no ``model_dump`` to look up
    dump = getattr(obj, "model_dump", None)
    if callable(dump) and not isinstance(obj, type):
        return dump(mode="json", exclude_none=True)
    return obj


def as_mapping(obj: Any, *, index: int, key: str, what: str) -> Mapping[str, Any]:
    if type(obj) is dict:
        return obj  # a dict is its own plain view and a Mapping: no dump to look up, no ABC check
    value = plain(obj)
    if not isinstance(value, Mapping):
        raise FormatError(f"{what} must be an object (dict), got {type(value).__name__}", index=index, key=key)
    return value


def as_list(obj: Any, *, index: int, key: str, what: str, text_too: bool = False) -> list[Any]:
    """``obj`` as a list of parts; ``text_too`` says the caller also took a plain string, so the error names both
    forms (a user who sent ``content: 123`` should not be told a string is wrong)."""
    value = plain(obj)
    if isinstance(value, _STRINGS) or not isinstance(value, Sequence):
        shape = "a string or a list of parts" if text_too else "a list"
        raise FormatError(f"{what} must be {shape}, got {type(value).__name__}", index=index, key=key)
    return list(value)


def require_str(d: Mapping[str, Any], name: str, *, index: int, key: str | None = None, empty_ok: bool = False) -> str:
    """``d[name]`` as a string, or a `FormatError` naming ``key`` (defaults to ``name``)."""
    where = key or name
    if name not in d or d[name] is None:
        raise FormatError(f"missing required {name!r}", index=index, key=where)
    value = d[name]
    if not isinstance(value, str):
        raise FormatError(f"{name!r} must be a string, got {type(value).__name__}", index=index, key=where)
    if not value and not empty_ok:
        raise FormatError(f"{name!r} must not be empty", index=index, key=where)
    return value


def messages_input(messages: Any, *, what: str) -> list[Any]:
    """Accept a list of messages, or a single message (dict or SDK object) as a one-element list."""
    value = plain(messages)
    if isinstance(value, Mapping):
        return [value]
    if isinstance(value, _STRINGS) or not isinstance(value, Sequence):
        raise FormatError(f"{what} must be a list of messages, got {type(value).__name__}")
    return list(value)


# -- the reader boundary -------------------------------------------------------------------------------------

_Reader = TypeVar("_Reader", bound=Callable[..., Any])

_STRINGS = (str, bytes)
_SEQUENCES = (list, tuple)
"""Class tuples built once: ``str | bytes`` written inline builds a union object on every call."""

_MALFORMED = (TypeError, AttributeError, KeyError, IndexError, ValueError, UnicodeError, OverflowError)
"""What a converter's code raises on a shape it did not expect; at the boundary each becomes a `FormatError`."""


_SCALARS = frozenset({int, str, float, bool, type(None)})
"""Argument types `reader` has no nesting to check in."""


def reader(what: str) -> Callable[[_Reader], _Reader]:
    """Make a ``from_*`` converter raise only `FormatError` on bad input, whatever the shape of the damage.

    The converters check the shapes they know and name the index and key; a payload mutated in a way nobody
    anticipated (a list where a dict belongs, a cycle, a pydantic refusal deep inside a block, 1,000 levels of
    nesting) used to leak `ValidationError`, `RecursionError`, `TypeError` or `AttributeError` (268 of 19,000
    mutated payloads). This wrapper is the one place that turns those into a `FormatError` saying what was
    being read, with the original error chained, so callers need one ``except FormatError``. Payloads nested
    deeper than a store can keep (`MAX_JSON_DEPTH`) are refused up front.
    """

    def wrap(fn: _Reader) -> _Reader:
        @functools.wraps(fn)
        def guarded(*args: Any, **kwargs: Any) -> Any:
            for value in (*args, *kwargs.values()):
                # only containers can nest (an index, an id or None cannot): the reader of a new tail is called
                # with a few of those on every call of a `Window`
                if type(value) in _SCALARS:
                    continue
                if json_depth(value, limit=MAX_JSON_DEPTH + 8) > MAX_JSON_DEPTH + 8:
                    raise FormatError(
                        f"{what} nest more than {MAX_JSON_DEPTH + 8} levels deep, deeper than any store can keep; "
                        "flatten the deep tool arguments or output, or send them as a JSON string",
                    )
            try:
                return fn(*args, **kwargs)
            except FormatError:
                raise
            except RecursionError as exc:
                raise FormatError(f"{what} nest too deep (or refer to themselves) to be read") from exc
            except ValidationError as exc:
                errors = exc.errors()
                first: Mapping[str, Any] = errors[0] if errors else {}
                where = ".".join(str(part) for part in first.get("loc", ()))
                raise FormatError(
                    f"{what} hold a value that does not fit a {exc.title} ({where or 'value'}: "
                    f"{first.get('msg', exc)}); check the payload against the provider's format",
                ) from exc
            except _MALFORMED as exc:
                trace = exc.__traceback__
                if isinstance(exc, TypeError) and trace is not None and trace.tb_next is None:
                    # raised by the call itself, before the reader ran: wrong arguments, not a malformed payload
                    raise
                raise FormatError(
                    f"{what} are malformed ({type(exc).__name__}: {exc}); check the payload against the "
                    "provider's format",
                ) from exc

        return cast(_Reader, guarded)

    return wrap


# -- stable message ids --------------------------------------------------------------------------------------

STABLE_ID_PREFIX = "wkm_"
"""Prefix of the ids the ``from_*`` converters derive; tells a derived id from one a provider supplied."""


class _NotPlain(Exception):
    """Raised by the fast `canonical_json` encoder at the first value JSON has no spelling for."""


def _not_plain(value: Any) -> Any:
    raise _NotPlain


_CANONICAL = json.JSONEncoder(sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=_not_plain)
"""Encodes a payload that is plain JSON already (the common case: dicts parsed from the wire) in one C call."""

PENDING_ID = "wkm_pending"
"""The id a reader gives a message it is about to assign a derived id (`IdChain.assign`): a placeholder rather
than the field's random default, which would be made and thrown away for every message read."""


_READ_FIELDS = frozenset({"message_id", "role", "content", "metadata"})
_READ_FIELDS_WITH_CALLS = _READ_FIELDS | {"tools_calls"}


def read_message(
    role: str,
    content: list[ContentBlock],
    metadata: dict[str, Any],
    *,
    tools_calls: list[dict[str, Any]] | None = None,
    calls_given: bool = False,
    metadata_given: bool = True,
    calls_clean: bool = False,
) -> Message:
    """``Message(role=role, content=content, metadata=metadata, [tools_calls=tools_calls,] message_id=PENDING_ID)``
    for a reader, built without pydantic's validation pass, which costs as much as everything else of reading a
    message: the reader made every value of the right type (a known role, blocks it constructed and validated,
    fresh dicts), so only the boundary rule is applied to the fields it covers, as the constructor's
    ``model_post_init`` does. The same message, field for field (``calls_given``: ``tools_calls`` was passed;
    ``metadata_given``: ``metadata`` was, which the LangChain reader passes only for a named message;
    ``calls_clean``: ``tools_calls`` holds ASCII strings only, which `clean_json` would return unchanged)."""
    fields: dict[str, Any] = {
        "message_id": PENDING_ID,
        "role": role,
        "content": BlockList(content),
        "delta": False,
        "tools_calls": clean_json(tools_calls) if tools_calls and not calls_clean else tools_calls,
        "reasoning": None,
        "timestamp": time.time(),
        "metadata": clean_json(metadata) if metadata else metadata,
        "usages": None,
        "raw": None,
    }
    given = set(_READ_FIELDS_WITH_CALLS if calls_given else _READ_FIELDS)
    if not metadata_given:
        given.discard("metadata")
    return _make_message(fields, given)


_STR_ONLY = frozenset({str})


_CALL_FIELDS = frozenset({"id", "name", "args", "tool_type"})
_RESULT_FIELDS = frozenset({"call_id", "output", "name"})


def call_block(call_id: str, name: str, args: dict[str, Any], tool_type: str | None) -> ToolCallBlock:
    """``ToolCallBlock(id=call_id, name=name, args=args, tool_type=tool_type)`` for a reader, built without
    pydantic's validation pass (~8 us of the ~10 a call block cost) when every value has exactly the type
    validation would keep (strings, a dict with string keys): the boundary rule applied as the validators apply it
    (`clean_id`, `clean_text`, a new dict of the `clean_json` arguments), the same fields set. Anything else is
    validated, which also raises what validation raises."""
    if (
        type(call_id) is str
        and type(name) is str
        and (tool_type is None or type(tool_type) is str)
        and type(args) is dict
        and _STR_ONLY.issuperset(map(type, args))
    ):
        try:
            cleaned = clean_json(args)
        except ValueError:
            pass  # nested too deep for any store: validation refuses it as it does
        else:
            values = {
                "type": "tool_call",
                "id": clean_id(call_id),
                "name": clean_text(name),
                "args": dict(cleaned),
                "tool_type": None if tool_type is None else clean_text(tool_type),
            }
            return cast(ToolCallBlock, make_block(ToolCallBlock, values, set(_CALL_FIELDS)))
    return ToolCallBlock(id=call_id, name=name, args=args, tool_type=tool_type)


def result_block(call_id: str, output: str, name: str | None) -> ToolResultBlock:
    """``ToolResultBlock(call_id=call_id, output=output, name=name)`` for a reader's string output, built without
    pydantic's validation pass as `call_block` builds a call (the values of exactly the type validation keeps)."""
    if type(call_id) is str and type(output) is str and (name is None or type(name) is str):
        values = {
            "type": "tool_result",
            "call_id": clean_id(call_id),
            "output": clean_text(output),
            "status": "completed",
            "name": None if name is None else clean_text(name),
        }
        return cast(ToolResultBlock, make_block(ToolResultBlock, values, set(_RESULT_FIELDS)))
    return ToolResultBlock(call_id=call_id, output=output, name=name)


def canonical_json(obj: Any) -> str:
    """``obj`` (a provider payload, SDK objects dumped) as compact JSON with sorted keys: equal payloads, equal text.

    A payload of plain JSON values with string keys is encoded directly: with its keys put in order and written
    by pydantic's serializer (a quarter of the standard encoder's time on long strings) when it holds no float
    and no lone surrogate (where the two spell a value differently, or pydantic refuses it; every other value,
    every code point and escape included, is written the same), else by the standard encoder. Anything else (an
    SDK object, a mapping that is not a dict, keys of mixed types) is first walked into plain values, which gives
    the same text for the plain case."""
    if type(obj) is dict:
        try:
            return to_json(_key_sorted(obj)).decode()
        except (_NotSortable, ValueError):  # PydanticSerializationError (a lone surrogate) is a ValueError
            pass
    return _canonical_text(obj)


def _canonical_text(obj: Any) -> str:
    """`canonical_json` past its fast path: the standard encoder, or the walk into plain values first."""
    if type(obj) is dict:
        try:
            return _CANONICAL.encode(obj)
        except (_NotPlain, TypeError, ValueError):
            pass  # a value to dump first, keys that do not sort, or a cycle: the walk below decides

    def walk(value: Any) -> Any:
        value = plain(value)
        if isinstance(value, Mapping):
            return {str(k): walk(v) for k, v in value.items()}
        if isinstance(value, _SEQUENCES):
            return [walk(v) for v in value]
        return value

    return json.dumps(walk(obj), sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=repr)


def derived_id(payload: str, index: int, part: int, previous: str | None) -> str:
    """The id of the ``part``-th message read from the provider message at ``index`` with canonical ``payload``.

    The previous message's id is folded in, so equal content at different places (two "ok" replies) gets two
    ids, while re-reading the same list always gives the same ones: the budget manager then recognizes the
    history it planned on the previous call and a re-converted list keeps the prompt prefix as stable as kept
    `Message` objects would.
    """
    raw = f"{index}\x1f{part}\x1f{previous or ''}\x1f{payload}"
    # surrogatepass: a payload with a lone surrogate still gets its id (the text itself is cleaned by Message)
    return STABLE_ID_PREFIX + hashlib.blake2b(raw.encode("utf-8", "surrogatepass"), digest_size=12).hexdigest()


def _derived_id_bytes(payload: bytes, index: int, part: int, previous: str | None) -> str:
    """`derived_id` of the payload whose text encodes to ``payload`` (UTF-8, surrogates passed): the same id, the
    head hashed before the payload rather than joined to its text and the whole encoded again."""
    head = f"{index}\x1f{part}\x1f{previous or ''}\x1f".encode("utf-8", "surrogatepass")
    digest = hashlib.blake2b(head, digest_size=12)
    digest.update(payload)
    return STABLE_ID_PREFIX + digest.hexdigest()


def _canonical_bytes(obj: Any) -> tuple[bytes, bool]:
    """``canonical_json(obj)`` as the bytes `derived_id` hashes, and whether ``obj`` is a dict that holds plain
    JSON only (str keys; str, bool, None, 64-bit int, list and dict values) every string of which is ASCII: then
    `clean_json` returns it unchanged, which its source record need not walk again to learn. The fast path's
    bytes are pydantic's UTF-8, which is what the text's ``encode`` gives (it holds no lone surrogate)."""
    if type(obj) is dict:
        try:
            payload = to_json(_key_sorted(obj))
        except (_NotSortable, ValueError):
            pass
        else:
            return payload, payload.isascii()
    return _canonical_text(obj).encode("utf-8", "surrogatepass"), False


Source = tuple[Any, list[Message]]
"""What a reader read one group from (a provider item, or the list of items of one Responses turn) and the
messages it gave, in order: collected when a caller wants sources kept (see `_source`)."""


class CleanSource(tuple):  # type: ignore[type-arg]
    """A `Source` whose item `IdChain` found to be a dict of plain ASCII JSON while writing its canonical JSON:
    `clean_json` of it is the item itself, so its source record keeps it without a second walk."""

    __slots__ = ()


class IdChain:
    """Gives the messages read from a provider list deterministic ids, in list order.

    A provider-supplied id (a Responses item id, a LangChain message id) is kept; several messages read from one
    provider message get ``{id}#{part}`` after the first. Everything else is `derived_id` of the source payload.
    Every reader assigns ids once per provider item (or turn), so with ``sources`` the chain also collects which
    item gave which messages, in order.
    """

    def __init__(self, previous: str | None = None, sources: list[Source] | None = None) -> None:
        self.previous: str | None = previous
        self.sources = sources

    def assign(self, messages: Sequence[Message], source: Any, index: int, *, provided: str | None = None) -> None:
        payload: bytes | None = None
        clean = False
        for part, message in enumerate(messages):
            if provided:
                mid = provided if part == 0 else f"{provided}#{part}"
                message.message_id = mid
            else:
                if payload is None:
                    payload, clean = _canonical_bytes(source)
                mid = _derived_id_bytes(payload, index, part, self.previous)
                # a derived id is ASCII hex (nothing for the field's validation or cleaning to do), and ids are not
                # fingerprinted: set as pydantic's assignment would, without its ~4 us per message
                message.__dict__["message_id"] = mid
                message.__pydantic_fields_set__.add("message_id")
            self.previous = mid
        if self.sources is not None:
            self.sources.append(CleanSource((source, list(messages))) if clean else (source, list(messages)))


def provided_id(obj: Mapping[str, Any]) -> str | None:
    """A non-empty string ``id`` a provider item carries, else None."""
    value = obj.get("id")
    return value if isinstance(value, str) and value else None


# -- tool-call arguments ------------------------------------------------------------------------------------


def dump_args(args: Mapping[str, Any]) -> str:
    """Arguments as the compact JSON string OpenAI-style APIs send."""
    return json.dumps(args, ensure_ascii=False, separators=(",", ":"))


def json_args(raw: Mapping[str, Any], *, index: int, key: str) -> dict[str, Any]:
    """Already-decoded tool-call arguments as a dict, refused with a `FormatError` when they hold a value JSON cannot
    carry: a message's fingerprint, every store and every provider write them as JSON, and an ``object()`` deep in
    the arguments used to pass the reader and fail later, far from the caller's mistake. Checked with the
    serializer the fingerprint uses (pydantic's), so exactly what would fail there is refused here (a date, which
    it writes as a string, is not), in about a seventh of ``json.dumps``'s time."""
    value = dict(raw)
    try:
        to_json(value)
    except (TypeError, ValueError) as exc:  # PydanticSerializationError is a ValueError
        raise FormatError(
            f"arguments hold a value JSON cannot carry ({exc}); pass only dicts, lists, strings, numbers, booleans "
            "and None, or the arguments as a JSON string",
            index=index,
            key=key,
        ) from None
    return value


def parse_args(raw: Any, *, index: int, key: str) -> dict[str, Any]:
    """Decode a tool call's arguments (JSON string or already-decoded object) into a dict."""
    if raw is None:
        return {}
    if isinstance(raw, Mapping):
        return json_args(raw, index=index, key=key)
    if not isinstance(raw, str):
        raise FormatError(f"arguments must be a JSON object string, got {type(raw).__name__}", index=index, key=key)
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        shown = raw if len(raw) <= 80 else raw[:77] + "..."
        raise FormatError(
            f"arguments are not valid JSON ({exc.msg} at char {exc.pos}): {shown!r}", index=index, key=key
        ) from None
    if not isinstance(value, dict):
        raise FormatError(f"arguments must decode to a JSON object, got {type(value).__name__}", index=index, key=key)
    return value


def original_arguments(message: Message) -> dict[str, str]:
    """Call id -> the exact OpenAI ``arguments`` string a message was parsed from (kept in ``tools_calls``)."""
    out: dict[str, str] = {}
    for raw in message.tools_calls or ():
        fn = raw.get("function")
        args = fn.get("arguments") if isinstance(fn, Mapping) else raw.get("arguments")
        if isinstance(raw.get("id"), str) and isinstance(args, str):
            out[raw["id"]] = args
    return out


CUSTOM_INPUT = "input"
"""The one argument under which a custom (freeform) tool call keeps its text: such a tool takes a string, not JSON
arguments (Chat Completions ``{"type": "custom", "custom": {"name", "input"}}``)."""


def is_custom_call(call: ToolCallBlock) -> bool:
    """A call of a custom tool as the readers keep it, so a writer gives it back its string input."""
    return call.tool_type == "custom" and list(call.args) == [CUSTOM_INPUT] and isinstance(call.args[CUSTOM_INPUT], str)


def arguments_for(block: ToolCallBlock, originals: Mapping[str, str]) -> str:
    """The original arguments string when it still decodes to the block's args, else a fresh compact dump.

    Reusing the original keeps a loaded transcript byte-identical (and provider prompt caches warm).
    """
    raw = originals.get(block.id)
    if raw is not None:
        try:
            if json.loads(raw) == block.args:
                return raw
        except json.JSONDecodeError:
            pass
    return dump_args(block.args)


def openai_tools_calls(
    calls: Sequence[ToolCallBlock], arguments: Mapping[str, str] | None = None
) -> list[dict[str, Any]]:
    """The provider-native mirror stored in `Message.tools_calls` (OpenAI function-call shape)."""
    arguments = arguments or {}
    return [
        {
            "id": c.id,
            "type": "function",
            "function": {"name": c.name, "arguments": arguments.get(c.id) or dump_args(c.args)},
        }
        for c in calls
    ]


# -- media ----------------------------------------------------------------------------------------------------


def split_file_data(value: str) -> tuple[str | None, str]:
    """``(mime_type, base64)`` of an OpenAI ``file_data`` value: a data URI, or bare base64 with no type."""
    parsed = parse_data_uri(value)
    return parsed if parsed is not None else (None, value)


def parse_data_uri(uri: str) -> tuple[str | None, str] | None:
    """``(mime_type, base64_data)`` of a ``data:...;base64,`` URI, or None for any other string."""
    match = _DATA_URI.match(uri)
    if match is None:
        return None
    return (match.group("mime") or None), match.group("data")


def data_uri(media: MediaRef, *, default_mime: str = "application/octet-stream") -> str:
    return f"data:{media.mime_type or default_mime};base64,{media.data_base64 or ''}"


def media_from_url(url: str, *, filename: str | None = None) -> MediaRef:
    """A `MediaRef` from an OpenAI-style URL field, which may hold an inline data URI."""
    parsed = parse_data_uri(url)
    if parsed is not None:
        mime, data = parsed
        return MediaRef(kind="data", data_base64=data, mime_type=mime, filename=filename)
    return MediaRef(kind="url", url=url, filename=filename)


def media_block_for_mime(media: MediaRef) -> MediaBlock:
    """The block type a provider part of unknown kind maps to, chosen from its MIME type."""
    mime = (media.mime_type or "").lower()
    if mime.startswith("image/"):
        return ImageBlock(media=media)
    if mime.startswith("audio/"):
        return AudioBlock(media=media)
    if mime.startswith("video/"):
        return VideoBlock(media=media)
    return DocumentBlock(media=media)


def resolve_data_block(block: ContentBlock) -> ContentBlock:
    """A `DataBlock` re-expressed as the media block its MIME type implies; other blocks unchanged."""
    if not isinstance(block, DataBlock):
        return block
    media = block.media
    if media is None:
        media = MediaRef(kind="data", data_base64=block.data_base64 or "", mime_type=block.mime_type)
    elif media.mime_type is None:
        media = media.model_copy(update={"mime_type": block.mime_type})
    return media_block_for_mime(media)


def media_kind(media: MediaRef) -> Literal["url", "file_id", "data"]:
    """Which field of a `MediaRef` actually holds the media (``kind`` may disagree with the filled field)."""
    if media.kind == "data" and media.data_base64 is not None:
        return "data"
    if media.kind == "file_id" and media.file_id:
        return "file_id"
    if media.kind == "url" and media.url:
        return "url"
    if media.data_base64 is not None:
        return "data"
    if media.file_id:
        return "file_id"
    if media.url:
        return "url"
    return media.kind


AUDIO_FORMATS: dict[str, str] = {"wav": "audio/wav", "mp3": "audio/mpeg"}
_AUDIO_MIME_TO_FORMAT: dict[str, AudioFormat] = {
    "audio/wav": "wav",
    "audio/x-wav": "wav",
    "audio/wave": "wav",
    "audio/mpeg": "mp3",
    "audio/mp3": "mp3",
}


def audio_format(media: MediaRef, *, index: int, key: str) -> AudioFormat:
    """OpenAI ``input_audio.format`` for a MIME type (only wav and mp3 are accepted there)."""
    fmt = _AUDIO_MIME_TO_FORMAT.get((media.mime_type or "").lower())
    if fmt is None:
        raise FormatError(
            f"audio with MIME type {media.mime_type!r} cannot be sent as input_audio; "
            "use base64 data with mime_type 'audio/wav' or 'audio/mpeg'",
            index=index,
            key=key,
        )
    return fmt


def audio_mime(fmt: Any, *, index: int, key: str) -> str:
    if not isinstance(fmt, str) or not fmt:
        raise FormatError("input_audio needs a 'format' such as 'wav' or 'mp3'", index=index, key=key)
    return AUDIO_FORMATS.get(fmt.lower(), f"audio/{fmt.lower()}")


def unsupported(block: ContentBlock, fmt: str, role: str, *, index: int | None, key: str) -> FormatError:
    return FormatError(
        f"{type(block).__name__} cannot be carried by {fmt} in a {role!r} message; "
        "remove it or convert it to text before sending",
        index=index,
        key=key,
    )


def error_text(block: ErrorBlock) -> str:
    """How an `ErrorBlock` reads to a model when a format has no error part."""
    return f"Error: {block.error}"


def result_text(block: ToolResultBlock) -> str:
    """A tool result as the text formats without an error flag send: a failed call says so (``Error: ...``), so
    the model can tell the tool failed."""
    text = tool_output_text(block.output)
    if block.status == "error" and not text.lstrip().lower().startswith("error"):
        return f"Error: {text}"
    return text


def unknown_block(kind: str, value: Any) -> TextBlock:
    """A part (or item) of a kind windowkeeper does not model, as a text block holding its JSON.

    The message still counts, fits and passes through unchanged (its source item is written verbatim); only a
    message windowkeeper rewrites, or a conversion to another format, carries the JSON as text (and warns).
    """
    return TextBlock(text=f"{UNKNOWN_PREFIX}{kind}] {canonical_json(value)}")


def unknown_part(part: Mapping[str, Any], expected: str, *, index: int, key: str) -> TextBlock:
    """A part whose ``type`` no reader models, kept as `unknown_block`; a part without a ``type`` is malformed
    (a `FormatError` naming ``expected``, the kinds the format reads)."""
    ptype = part.get("type")
    if not isinstance(ptype, str) or not ptype:
        raise FormatError(
            f"content part has no 'type' (expected {expected}), got {ptype!r}", index=index, key=f"{key}.type"
        )
    return unknown_block(ptype, part)


def is_dropped(block: ContentBlock) -> bool:
    """Blocks no provider format carries and that a model never reads (citations are metadata)."""
    return isinstance(block, AnnotationBlock)


def system_text(message: Message, fmt: str, *, index: int | None) -> str:
    """A system message as the one string formats with a separate system slot take (text and error text only)."""
    parts: list[str] = []
    for j, block in enumerate(message.content):
        if isinstance(block, TextBlock):
            parts.append(block.text)
        elif isinstance(block, ErrorBlock):
            parts.append(error_text(block))
        elif not is_dropped(block):
            raise unsupported(block, fmt, "system", index=index, key=f"content[{j}]")
    return "".join(parts)


RESULT_MEDIA = (ImageBlock, DocumentBlock)
"""Blocks a tool message may carry after a result, as part of that result: a screenshot a computer-use tool
returned, a file a tool fetched. Formats whose results hold media (Anthropic ``tool_result`` content, LangChain
``ToolMessage`` content, Responses ``function_call_output`` lists) write them inside the result
(`tool_results_with_media`); the others cannot, and leave them out with a warning naming them."""


def warn_media_dropped(kind: str, *, index: int) -> None:
    """Say (a `UserWarning` and a log warning) that a format's tool message cannot carry a result's media."""
    text = (
        f"message {index}: a {kind} returned with a tool result cannot be carried by this format's tool message and "
        "is left out; write the conversation as Anthropic or OpenAI Responses messages, whose tool results hold media"
    )
    logger.warning("%s", text)
    warnings.warn(text, UserWarning, stacklevel=4)


def tool_results_with_media(
    message: Message, *, index: int, hint: str = ""
) -> list[tuple[ToolResultBlock, list[ImageBlock | DocumentBlock]]]:
    """Each result of a tool message with the media blocks that follow it (see `RESULT_MEDIA`), in order.

    An `ErrorBlock` answering a call comes out as an error result, so each format writes one kind of result. Any
    other block a model would read is a `FormatError` (``hint`` is appended to its message), and so is a tool
    message without a single result.
    """
    out: list[tuple[ToolResultBlock, list[ImageBlock | DocumentBlock]]] = []
    for j, block in enumerate(message.content):
        if isinstance(block, RESULT_MEDIA) and out:
            out[-1][1].append(block)
            continue
        if isinstance(block, ErrorBlock) and block.tool_call_id:
            block = ToolResultBlock(call_id=block.tool_call_id, output=error_text(block), status="error")
        if isinstance(block, ToolResultBlock):
            out.append((block, []))
        elif not is_dropped(block):
            raise FormatError(
                f"a tool message may only hold ToolResultBlocks and their media, found {type(block).__name__}{hint}",
                index=index,
                key=f"content[{j}]",
            )
    if not out:
        raise FormatError("tool message has no ToolResultBlock", index=index, key="content")
    return out


def tool_results(message: Message, *, index: int, hint: str = "") -> list[ToolResultBlock]:
    """The results of a tool message (`tool_results_with_media`), for a format whose tool messages cannot carry
    media: what a result returned besides its text is left out with a warning naming it."""
    out: list[ToolResultBlock] = []
    for result, media in tool_results_with_media(message, index=index, hint=hint):
        for block in media:
            warn_media_dropped(type(block).__name__, index=index)
        out.append(result)
    return out


def reasoning_blocks(message: Message) -> list[ReasoningBlock]:
    """The message's reasoning as blocks: the ``reasoning`` field (if any) first, then the blocks."""
    out = [ReasoningBlock(text=message.reasoning)] if message.reasoning else []
    out.extend(b for b in message.content if isinstance(b, ReasoningBlock))
    return out


def keep_reasoning(block: ReasoningBlock, mode: ReasoningMode, *, needs: Literal["signature", "id"]) -> bool:
    if mode == "none":
        return False
    if mode == "signed":
        return bool(block.signature if needs == "signature" else block.id)
    return True


def check_mode(mode: str) -> None:
    if mode not in ("all", "signed", "none"):
        raise ValueError(f"reasoning={mode!r} is not supported; use 'all', 'signed' or 'none'")
