"""Conversion between `Message` lists and Gemini ``system_instruction`` + ``contents``.

Gemini differs from the other formats in three ways that shape this module:

* Roles are ``user`` and ``model``; function responses travel in a ``user`` content, and all responses to one
  model turn's (parallel) calls go in one content.
* ``functionResponse.response`` must be a JSON object: a non-object output is wrapped as ``{"result": output}``
  and an error as ``{"error": output}``; reading back unwraps exactly those single-key shapes.
* Calls may carry no id. Reading keeps a ``functionCall.id`` and otherwise synthesizes
  ``{id_prefix}_{content_index}_{part_index}`` (stable for the same input), pairing each response with its call
  by id, else with the first unanswered call of the same name in the latest model turn (a response answering
  none gets an id synthesized the same way, which no call has: a tool result without its call). Writing puts on a
  response the id its call is sent with: for a message read with its source kept, the id its own functionCall
  part carried (whatever it looks like, however often the caller reuses it); otherwise a call keeps its id unless
  it looks synthesized or was used twice in the request. Each response is named after its call.

Parts are written in the REST (camelCase) spelling; reading accepts camelCase and the SDK's snake_case.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, cast, overload

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
from ...errors import FormatError
from ...messages import Message
from ._common import (
    RESULT_MEDIA,
    IdChain,
    ReasoningMode,
    Source,
    as_list,
    as_mapping,
    check_mode,
    error_text,
    is_dropped,
    json_args,
    keep_reasoning,
    media_block_for_mime,
    media_kind,
    messages_input,
    openai_tools_calls,
    plain,
    read_message,
    reader,
    resolve_data_block,
    system_text,
    tool_results_with_media,
    unknown_block,
    unsupported,
)
from ._source import (
    cut_from,
    is_recall,
    keep_source,
    keep_turn_keys,
    original_items,
    recall_for_next,
    source_record,
    split_parts,
    turn_keys,
    unchanged,
    whole_group,
    with_turn_keys,
)
from .registry import ProviderFormat, register_format
from .rules import RoundTripRules
from .wire import (
    GeminiContent,
    GeminiFileData,
    GeminiFunctionCall,
    GeminiFunctionResponse,
    GeminiPart,
    GeminiSDKContent,
    GeminiSDKPart,
    GeminiSystemInstruction,
)

if TYPE_CHECKING:
    from google.genai.types import FunctionResponseDict, FunctionResponsePartDict
else:
    FunctionResponseDict = FunctionResponsePartDict = dict

logger = logging.getLogger(__name__)

FORMAT = "Gemini"
NAME = "gemini"
DEFAULT_ID_PREFIX = "call"
_SYNTHESIZED = re.compile(r"^[A-Za-z0-9]+_\d+_\d+$")
"""The ids reading makes up for calls without one (``{id_prefix}_{content}_{part}``): not written back, unless
the caller's own content shows the id was its own (a caller may name its calls ``call_0_0`` too)."""


def _get(d: Mapping[str, Any], camel: str, snake: str) -> Any:
    return d[camel] if camel in d else d.get(snake)


# -- ours -> Gemini -------------------------------------------------------------------------------------------


def _media_part(block: ContentBlock, role: str, *, index: int, key: str) -> GeminiPart:
    block = resolve_data_block(block)
    if not isinstance(block, ImageBlock | AudioBlock | VideoBlock | DocumentBlock):
        raise unsupported(block, FORMAT, role, index=index, key=key)
    media = block.media
    if media is None:
        if isinstance(block, DocumentBlock) and block.text is not None:
            return {"inlineData": {"mimeType": "text/plain", "data": _b64(block.text)}}
        raise FormatError("DocumentBlock has neither media nor text", index=index, key=key)
    kind = media_kind(media)
    if kind == "data" and media.data_base64 is not None:
        if not media.mime_type:
            raise FormatError(
                "Gemini inlineData needs a MIME type; set MediaRef.mime_type", index=index, key=f"{key}.media.mime_type"
            )
        return {"inlineData": {"mimeType": media.mime_type, "data": media.data_base64}}
    uri = media.url if kind == "url" else media.file_id
    if not uri:
        raise FormatError("media reference holds no url, file id or data", index=index, key=f"{key}.media")
    file_data: GeminiFileData = {"fileUri": uri}
    if media.mime_type:
        file_data["mimeType"] = media.mime_type
    return {"fileData": file_data}


def _b64(text: str) -> str:
    import base64

    return base64.b64encode(text.encode("utf-8")).decode("ascii")


def _b64decode(data: str) -> bytes:
    """Base64 in either alphabet: google-genai's ``model_dump(mode="json")`` (how SDK objects reach the readers)
    writes URL-safe base64 (``-``, ``_``), and the API's JSON takes both, so both are the caller's."""
    import base64

    return base64.b64decode(data.replace("-", "+").replace("_", "/"), validate=True)


def _data_text(data: Any) -> Any:
    """``inlineData.data`` as base64 text: google-genai's dict spelling (``BlobDict``, what ``spelling="sdk"``
    writes) holds the raw bytes."""
    import base64

    return base64.b64encode(data).decode("ascii") if isinstance(data, bytes | bytearray) else data


def _unb64(data: str, *, index: int, key: str) -> str | None:
    """The text of text/plain ``inlineData``, or None when its bytes are not UTF-8 (a Latin-1 file): those stay
    media, as they came, for nothing can say which text they hold."""
    import binascii

    try:
        raw = _b64decode(data)
    except (binascii.Error, ValueError) as exc:
        raise FormatError(f"text/plain inlineData is not base64: {exc}", index=index, key=key) from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _response_payload(block: ToolResultBlock) -> dict[str, Any]:
    if block.status == "error":
        return {"error": block.output}
    if isinstance(block.output, dict) and not _is_wrapper(block.output):
        return dict(block.output)
    return {"result": block.output}


def _is_wrapper(obj: Mapping[str, Any]) -> bool:
    return len(obj) == 1 and ("result" in obj or "error" in obj)


def _model_parts(
    message: Message, *, index: int, reasoning: ReasoningMode, ids: set[str] | None = None
) -> list[GeminiPart]:
    """Model parts in block order.

    A reasoning block with a signature but no text stands for a signature the model attached to a non-thought
    part (Gemini requires it back on that part, e.g. a functionCall), so it is attached to the next part.
    """
    parts: list[GeminiPart] = []
    pending: str | None = None

    def flush() -> None:
        nonlocal pending
        if pending is not None:
            parts.append({"text": "", "thoughtSignature": pending})
            pending = None

    blocks: list[ContentBlock] = [ReasoningBlock(text=message.reasoning)] if message.reasoning else []
    blocks.extend(message.content)
    offset = 1 if message.reasoning else 0
    for j, block in enumerate(blocks):
        key = f"content[{j - offset}]"
        if is_dropped(block):
            continue
        part: GeminiPart
        if isinstance(block, ReasoningBlock):
            if not keep_reasoning(block, reasoning, needs="signature"):
                continue
            flush()
            if not block.text and block.signature:
                pending = block.signature
                continue
            part = {"text": block.text, "thought": True}
            if block.signature:
                part["thoughtSignature"] = block.signature
            parts.append(part)
            continue
        if isinstance(block, TextBlock):
            part = {"text": block.text}
        elif isinstance(block, ErrorBlock):
            part = {"text": error_text(block)}
        elif isinstance(block, ToolCallBlock):
            call: GeminiFunctionCall = {"name": block.name, "args": dict(block.args)}
            if ids is not None and block.id in ids:
                call["id"] = block.id
            part = {"functionCall": call}
        elif isinstance(block, ToolResultBlock):
            raise unsupported(block, FORMAT, "assistant", index=index, key=key)
        else:
            part = _media_part(block, "assistant", index=index, key=key)
        if pending is not None:
            part["thoughtSignature"] = pending
            pending = None
        parts.append(part)
    flush()
    return parts


def _user_parts(message: Message, *, index: int) -> list[GeminiPart]:
    parts: list[GeminiPart] = []
    for j, block in enumerate(message.content):
        key = f"content[{j}]"
        if is_dropped(block):
            continue
        if isinstance(block, TextBlock):
            parts.append({"text": block.text})
        elif isinstance(block, ErrorBlock):
            parts.append({"text": error_text(block)})
        elif isinstance(block, ToolCallBlock | ToolResultBlock | ReasoningBlock):
            raise unsupported(block, FORMAT, "user", index=index, key=key)
        else:
            parts.append(_media_part(block, "user", index=index, key=key))
    return parts


def _response_parts(
    message: Message, names: Mapping[str, str], *, index: int, ids: set[str] | None = None
) -> list[GeminiPart]:
    parts: list[GeminiPart] = []
    for j, (block, media) in enumerate(tool_results_with_media(message, index=index)):
        name = names.get(block.call_id) or block.name
        if not name:
            raise FormatError(
                f"cannot name the Gemini functionResponse for call id {block.call_id!r}: no earlier tool call "
                "has that id and the ToolResultBlock has no name",
                index=index,
                key=f"content[{j}].call_id",
            )
        response: GeminiFunctionResponse = {"name": name, "response": _response_payload(block)}
        if ids is not None and block.call_id in ids:
            response["id"] = block.call_id
        if media:  # what the tool returned besides its payload (a screenshot), as the response's own parts
            response["parts"] = [_media_part(m, "user", index=index, key=f"content[{j}]") for m in media]
        parts.append({"functionResponse": response})
    return parts


_RESPONSE_MODELLED = frozenset({"name", "response", "id", "parts"})
"""The keys of a ``functionResponse`` the writer writes from the message (the id only where the request needs it)."""
_RESPONSE_DELIVERY = {"willContinue": "willContinue", "will_continue": "willContinue", "scheduling": "scheduling"}
"""The keys of a ``functionResponse`` that say how the API delivers it (more responses to the same call follow;
when the model reacts to it), in either spelling, with their REST spelling."""


def _refill_responses(message: Message, written: list[GeminiPart]) -> list[GeminiPart]:
    """The ``functionResponse`` parts written anew for the tool ``message`` (read from Gemini, changed since) with
    the caller's own keys of the response each stands for.

    A response cut to fit (`cut_from`) is still the caller's, shorter: it keeps every key of theirs the writer did
    not write (``willContinue``, ``scheduling``, a vendor key), and an object response of one text value is cut
    under its own key (``{"output": "<cut>"}``) rather than written as the object's JSON text under ``result``.
    A pointer standing for a cleared response is windowkeeper's own, as the other writers write it
    (docs/formats.md; a vendor key may describe the content the pointer replaced), but keeps what the API needs to
    deliver it in the response's place: ``willContinue`` (a non-blocking call's later responses still follow;
    without it the pointer would read as the call's last one) and ``scheduling`` (when the model reacts to it)."""
    own = _own_responses(message)
    results = message.tool_result_blocks()
    if not own or len(results) != len(written):
        return written
    out = list(written)
    for k, (result, part) in enumerate(zip(results, written, strict=True)):
        fr = part.get("functionResponse")
        client = own.get(result.call_id) or (next(iter(own.values())) if len(own) == len(results) == 1 else None)
        if fr is None or client is None:
            continue
        was = _response_output(client)
        cut = cut_from(tool_output_text(result.output), tool_output_text(was))
        kept: dict[str, Any] = dict(fr)
        for key, value in client.items():
            rest = _RESPONSE_DELIVERY.get(key)
            if rest is not None:
                kept.setdefault(rest, value)
            elif cut and key not in _RESPONSE_MODELLED:
                kept.setdefault(key, value)
        if cut and isinstance(result.output, str) and result.status != "error":
            kept["response"] = _cut_response(was, result.output) or kept["response"]
        out[k] = {**part, "functionResponse": cast(GeminiFunctionResponse, kept)}
    return out


def _own_responses(message: Message) -> dict[str | None, Mapping[str, Any]]:
    """The caller's ``functionResponse`` payloads the tool ``message`` was read from, by ``id`` (None for one
    without): the part its source record holds for it, or the parts of the one content it came from."""
    record = source_record(message)
    if record is None or record.get("format") != NAME:
        return {}
    blocks = record.get("blocks")
    parts = blocks if isinstance(blocks, list) else [p for item in original_items(message, NAME) for p in _parts(item)]
    out: dict[str | None, Mapping[str, Any]] = {}
    for part in parts:
        fr = _get(part, "functionResponse", "function_response") if isinstance(part, Mapping) else None
        if isinstance(fr, Mapping):
            raw = fr.get("id")
            out.setdefault(raw if isinstance(raw, str) and raw else None, fr)
    return out


def _response_output(fr: Mapping[str, Any]) -> Any:
    """The output the reader makes of the caller's ``functionResponse`` ``fr`` (a wrapper unwrapped)."""
    response = fr.get("response", {})
    if isinstance(response, Mapping) and _is_wrapper(response):
        return next(iter(response.values()))
    return response


def _cut_response(was: Any, cut: str) -> dict[str, Any] | None:
    """The caller's object response of one text value (``{"output": text}``) with that value cut, from ``cut`` (the
    object's JSON text cut to fit); None when ``cut`` is not such a text with its escapes whole (the writer's
    ``{"result": cut}`` stands then)."""
    if not isinstance(was, Mapping) or len(was) != 1:
        return None
    ((key, value),) = was.items()
    if not isinstance(key, str) or not isinstance(value, str):
        return None
    head = tool_output_text({key: ""})[:-2]  # '{"output": "'
    if not (cut.startswith(head) and cut.endswith('"}')):
        return None
    try:
        text = json.loads('"' + cut[len(head) : -2] + '"', strict=False)
    except ValueError:
        return None
    return {key: text} if isinstance(text, str) else None


def _provider_id(call_id: str) -> bool:
    """Whether ``call_id`` came from Gemini (a ``functionCall.id``) rather than being made up when reading."""
    return not _SYNTHESIZED.match(call_id)


Spelling = Literal["rest", "sdk"]
"""How `to_gemini` spells parts: the REST JSON form (camelCase keys, base64 strings; what Gemini files and the HTTP
API use) or google-genai's ``ContentDict`` form (snake_case keys, bytes), which its type checker accepts."""


@overload
def to_gemini(
    messages: Sequence[Message],
    *,
    reasoning: ReasoningMode = "all",
    spelling: Literal["rest"] = "rest",
    passthrough: bool = True,
) -> tuple[GeminiSystemInstruction | None, list[GeminiContent]]: ...


@overload
def to_gemini(
    messages: Sequence[Message],
    *,
    reasoning: ReasoningMode = "all",
    spelling: Literal["sdk"],
    passthrough: bool = True,
) -> tuple[GeminiSDKContent | None, list[GeminiSDKContent]]: ...


def to_gemini(
    messages: Sequence[Message],
    *,
    reasoning: ReasoningMode = "all",
    spelling: Spelling = "rest",
    passthrough: bool = True,
) -> (
    tuple[GeminiSystemInstruction | None, list[GeminiContent]] | tuple[GeminiSDKContent | None, list[GeminiSDKContent]]
):
    """Our messages as ``(system_instruction, contents)``; each system message is one text part.

    ``spelling="sdk"`` writes google-genai's ``ContentDict``\\ s for ``generate_content(contents=...)`` and
    ``config={"system_instruction": ...}`` (see `Spelling`); the default is the REST JSON form.

    ``passthrough`` writes each message read with its source kept (`from_gemini`, `GEMINI.read`) and unchanged since
    as the content it was read from (in the caller's own spelling, ids and unknown keys included); the parts of a
    split user content (function responses and text) go back into one content. It is on by default, so
    ``to_gemini(from_gemini(system, contents))`` gives the caller's contents back; a message changed since, or read
    from another format, is written anew (a warning names the fields a conversion loses); pass False to write every
    message in windowkeeper's own shape. Consecutive user-side messages written anew share one user content. A
    recall note serving the user message right after it is written into that message's content, before its text
    (after the function responses a content of both holds), the caller's keys and parts kept: Gemini rejects two
    user contents in a row.
    """
    check_mode(reasoning)
    if spelling not in ("rest", "sdk"):
        raise ValueError(f"spelling={spelling!r} is not supported; use 'rest' or 'sdk'")
    system_parts: list[GeminiPart] = []
    contents: list[GeminiContent] = []
    names: dict[str, str] = {}
    call_ids: set[str] = set()  # the ids written on calls (their responses carry them too)
    seen: set[str] = set()
    open_turn: list[GeminiPart] | None = None  # the user content written anew that user-side messages may join
    joinable = False  # it was opened by tool results or a recall note: the next user-side message joins it
    recall_open = False  # it holds only a recall note (serving no message right after it): a user content joins it
    seq, at, notes = _served_notes(messages)
    keys_at: dict[int, Mapping[str, Any]] = {}  # position in ``contents`` -> the caller's keys of one written anew
    v, n = 0, len(seq)
    while v < n:
        message, i = seq[v], at[v]
        if message.role == "system":
            system_parts.append({"text": system_text(message, FORMAT, index=i)})
            v += 1
            continue
        source = unchanged(message, NAME) if passthrough and spelling == "rest" else None
        parts: list[GeminiPart]
        if source is not None:
            group = whole_group(seq, v, NAME)
            if group is not None:
                items, end = group
                if message.role == "assistant":
                    _track_calls(message, names, call_ids, seen, caller=_call_ids_in(items), exact=True)
                lead = [p for k in range(v, end) for p in _note_parts(messages, notes.get(at[k]), passthrough)]
                if lead:  # the served message is the group's user part, the last of its one content
                    items = [*items[:-1], _with_notes(items[-1], lead)]
                if recall_open and open_turn is not None and len(items) == 1 and _user_content(items[0]):
                    contents[-1] = cast(GeminiContent, _with_notes(items[0], open_turn))
                else:
                    contents.extend(items)
                open_turn, recall_open, joinable = None, False, False
                v = end
                continue
            blocks = source.get("blocks")
            parts = list(blocks) if isinstance(blocks, list) else []
            if message.role == "assistant":
                _track_calls(message, names, call_ids, seen, caller=_call_ids_in([{"parts": parts}]), exact=True)
        else:
            if passthrough:
                GEMINI.report(message, NAME)
            if message.role == "tool":
                parts = _response_parts(message, names, index=i, ids=call_ids | _unpaired_ids(message, names))
                if passthrough and message.raw:  # a response cleared or cut to fit: the caller's keys it keeps
                    parts = _refill_responses(message, parts)
            elif message.role == "assistant":
                _track_calls(message, names, call_ids, seen, caller=_original_call_ids(message), exact=False)
                parts = _model_parts(message, index=i, reasoning=reasoning, ids=call_ids)
            else:
                parts = _user_parts(message, index=i)
                if passthrough and message.raw:  # a turn cut to fit: the parts it did not cut as the caller sent them
                    parts = GEMINI.refill(message, [{"parts": parts}])[0]["parts"]
        if message.role == "user" and i in notes:
            parts = [*_note_parts(messages, notes[i], passthrough), *parts]
        keys = turn_keys(message, NAME) if passthrough and spelling == "rest" else None
        if message.role == "assistant":
            open_turn, recall_open = None, False
            contents.append({"role": "model", "parts": parts})
        elif (
            open_turn is not None
            and joinable
            and (parts or message.role == "tool")
            and (message.role != "tool" or _only_responses(open_turn))
        ):
            open_turn.extend(parts)
            joinable = message.role == "tool"
            recall_open = False
        else:
            open_turn = list(parts)
            contents.append({"role": "user", "parts": open_turn})
            recall_open = is_recall(message)
            joinable = recall_open or message.role == "tool"
        if keys:
            keys_at.setdefault(len(contents) - 1, keys)
        v += 1
    for k, keys in keys_at.items():
        contents[k] = cast(GeminiContent, with_turn_keys(contents[k], keys))
    if spelling == "sdk":
        sdk_system: GeminiSDKContent | None = (
            {"parts": [_sdk_part(p, key=f"system_instruction.parts[{j}]") for j, p in enumerate(system_parts)]}
            if system_parts
            else None
        )
        return sdk_system, [_sdk_content(c, index=k) for k, c in enumerate(contents)]
    system_instruction: GeminiSystemInstruction | None = {"parts": system_parts} if system_parts else None
    return system_instruction, contents


def _served_notes(messages: Sequence[Message]) -> tuple[Sequence[Message], Sequence[int], dict[int, list[int]]]:
    """``(messages written in turn, their indices, notes)``: every recall note serving the user message right after
    it is left out of the turn order and listed in ``notes`` under that message's index, to be written into its
    content. Gemini rejects two user contents in a row, and a note written as a part of the content before its
    question (one opened by function responses) split the caller's content of responses and text in two."""
    notes: dict[int, list[int]] = {}
    for k in range(len(messages) - 1):
        if recall_for_next(messages, k):
            notes.setdefault(k + 1, []).append(k)
    if not notes:
        return messages, range(len(messages)), notes
    skip = {k for ks in notes.values() for k in ks}
    at = [k for k in range(len(messages)) if k not in skip]
    return [messages[k] for k in at], at, notes


def _note_parts(messages: Sequence[Message], notes: Sequence[int] | None, passthrough: bool) -> list[GeminiPart]:
    """The parts of the recall notes ``messages[k]`` for ``k`` in ``notes`` (written anew: windowkeeper made them)."""
    parts: list[GeminiPart] = []
    for k in notes or ():
        if passthrough:
            GEMINI.report(messages[k], NAME)
        parts.extend(_user_parts(messages[k], index=k))
    return parts


def _with_notes(item: Mapping[str, Any], notes: Sequence[Any]) -> dict[str, Any]:
    """A copy of the caller's user content ``item`` with the recall note parts ``notes`` before its first part that
    is not a function response (the user's words the notes serve), every other key and part kept, as the
    Anthropic writer puts a note before the question in the turn it serves."""
    own = item.get("parts")
    parts = list(own) if isinstance(own, list) else []
    at = next((k for k, p in enumerate(parts) if not _response_part(p)), len(parts))
    return {**item, "parts": [*parts[:at], *notes, *parts[at:]]}


def _user_content(item: Any) -> bool:
    """Whether a caller's content is the user's: the API reads a content without a role as the user's."""
    return isinstance(item, Mapping) and item.get("role", "user") == "user"


def _track_calls(
    message: Message,
    names: dict[str, str],
    call_ids: set[str],
    seen: set[str],
    *,
    caller: set[str] | None,
    exact: bool,
) -> None:
    """Record the names of ``message``'s calls and which ids are written, on the call and on its responses.

    ``caller`` are the ids the caller's own functionCall parts carry for this message: exactly the ids sent when
    its content passes through (``exact``), else the ids it was read with, which a rewritten content keeps. A
    response must carry the id its call was sent with, whatever the id looks like or however often the caller
    reuses it (``id-0`` every turn). Without them (the message was not read from Gemini contents), a call keeps
    its id unless made up when reading or used by an earlier call of this request; its response is then paired by
    name and order, as Gemini does for calls without ids."""
    for call in message.tool_call_blocks():
        names[call.id] = call.name
        if caller is not None and (exact or call.id in caller):
            keep = call.id in caller
        else:
            keep = _provider_id(call.id) and call.id not in seen
        if keep:
            call_ids.add(call.id)
        else:
            call_ids.discard(call.id)
        seen.add(call.id)


def _call_ids_in(items: Sequence[Any]) -> set[str]:
    """The ids on the functionCall parts of the contents ``items`` (either spelling)."""
    return _part_ids((p for item in items for p in _parts(item)), "functionCall", "function_call")


def _part_ids(parts: Iterable[Any], camel: str, snake: str) -> set[str]:
    """The non-empty ``id`` strings of the ``camel`` (or ``snake``) payloads of ``parts``."""
    out: set[str] = set()
    for part in parts:
        payload = _get(part, camel, snake) if isinstance(part, Mapping) else None
        raw = payload.get("id") if isinstance(payload, Mapping) else None
        if isinstance(raw, str) and raw:
            out.add(raw)
    return out


def _original_call_ids(message: Message) -> set[str] | None:
    """The call ids of the Gemini content ``message`` was read from (changed since or not); None when it was not
    read from one with its source kept."""
    record = source_record(message)
    if record is None or record.get("format") != NAME:
        return None
    return _call_ids_in(original_items(message, NAME))


def _unpaired_ids(message: Message, names: Mapping[str, str]) -> set[str]:
    """The ids the caller's own functionResponse parts of the tool message ``message`` carried, for calls not in
    this request (`Window.restore` writes a restored result alone): they go back where the call was sent with
    that id, so the response keeps it."""
    record = source_record(message)
    if record is None or record.get("format") != NAME:
        return set()
    blocks = record.get("blocks")
    parts = blocks if isinstance(blocks, list) else [p for item in original_items(message, NAME) for p in _parts(item)]
    return {i for i in _part_ids(parts, "functionResponse", "function_response") if i not in names}


def _parts(item: Any) -> list[Any]:
    """The ``parts`` of a stored content (none when it has no list of them)."""
    parts = item.get("parts") if isinstance(item, Mapping) else None
    return parts if isinstance(parts, list) else []


def _only_responses(parts: Sequence[Any]) -> bool:
    return all(isinstance(p, Mapping) and ("functionResponse" in p or "function_response" in p) for p in parts)


def _sdk_content(content: GeminiContent, *, index: int) -> GeminiSDKContent:
    return {
        "role": content["role"],
        "parts": [_sdk_part(p, key=f"contents[{index}].parts[{j}]") for j, p in enumerate(content["parts"])],
    }


def _sdk_bytes(data: str, *, key: str) -> bytes:
    import binascii

    try:
        return _b64decode(data)
    except (binascii.Error, ValueError) as exc:
        raise FormatError(
            f"{data[:40]!r} is not base64, so it cannot become the bytes google-genai expects ({exc}); write it with "
            "spelling='rest' or store base64 data",
            key=key,
        ) from None


def _sdk_part(part: GeminiPart, *, key: str) -> GeminiSDKPart:
    """One REST-spelled part in google-genai's ``PartDict`` spelling (base64 strings decoded to bytes)."""
    out: GeminiSDKPart = {}
    if "text" in part:
        out["text"] = part["text"]
    if "thought" in part:
        out["thought"] = part["thought"]
    if "thoughtSignature" in part:
        out["thought_signature"] = _sdk_bytes(part["thoughtSignature"], key=f"{key}.thoughtSignature")
    if "inlineData" in part:
        blob = part["inlineData"]
        out["inline_data"] = {"mime_type": blob["mimeType"], "data": _sdk_bytes(blob["data"], key=f"{key}.inlineData")}
    if "fileData" in part:
        file_data = part["fileData"]
        out["file_data"] = (
            {"file_uri": file_data["fileUri"], "mime_type": file_data["mimeType"]}
            if "mimeType" in file_data
            else {"file_uri": file_data["fileUri"]}
        )
    if "functionCall" in part:
        fc = part["functionCall"]
        out["function_call"] = (
            {"name": fc["name"], "args": fc["args"], "id": fc["id"]}
            if "id" in fc
            else {"name": fc["name"], "args": fc["args"]}
        )
    if "functionResponse" in part:
        response = part["functionResponse"]
        function_response: FunctionResponseDict = {"name": response["name"], "response": response["response"]}
        if "id" in response:
            function_response["id"] = response["id"]
        # how the API delivers the response (a non-blocking call's later responses, when the model reacts to it)
        delivery: Mapping[str, Any] = response
        if isinstance(delivery.get("willContinue"), bool):
            function_response["will_continue"] = delivery["willContinue"]
        if isinstance(delivery.get("scheduling"), str):
            function_response["scheduling"] = cast(Any, delivery["scheduling"])
        if "parts" in response:
            function_response["parts"] = [
                _sdk_response_part(inner, key=f"{key}.functionResponse.parts[{k}]")
                for k, inner in enumerate(response["parts"])
            ]
        out["function_response"] = function_response
    return out


def _sdk_response_part(part: GeminiPart, *, key: str) -> FunctionResponsePartDict:
    """A media part of a function response in google-genai's spelling (its own part type: data and files only)."""
    out: FunctionResponsePartDict = {}
    if "inlineData" in part:
        blob = part["inlineData"]
        out["inline_data"] = {"mime_type": blob["mimeType"], "data": _sdk_bytes(blob["data"], key=f"{key}.inlineData")}
    if "fileData" in part:
        file_data = part["fileData"]
        out["file_data"] = {"file_uri": file_data["fileUri"], "mime_type": file_data.get("mimeType")}
    return out


# -- Gemini -> ours -------------------------------------------------------------------------------------------


class _Pairing:
    """Pairs id-less function responses with the calls of the latest model turn, by name and order."""

    def __init__(self) -> None:
        self.open: list[ToolCallBlock] = []

    def start_turn(self, calls: list[ToolCallBlock]) -> None:
        self.open = list(calls)

    def take(self, name: str, call_id: str | None, *, unpaired: str) -> str:
        """The id of the call a response answers; ``unpaired`` (an id no call has) when it answers none, so the
        response reads as a tool result without its call, which `validate` reports as it does in the other
        formats (refusing the file hid every other count and problem behind one read error)."""
        for k, call in enumerate(self.open):
            if (call_id is not None and call.id == call_id) or (call_id is None and call.name == name):
                del self.open[k]
                return call.id
        return call_id if call_id is not None else unpaired


def _parse_media(part: Mapping[str, Any], *, index: int, key: str) -> ContentBlock | None:
    inline = _get(part, "inlineData", "inline_data")
    if inline is not None:
        d = as_mapping(inline, index=index, key=f"{key}.inlineData", what="inlineData")
        mime = _get(d, "mimeType", "mime_type")
        data = _data_text(d.get("data") or "")
        if mime == "text/plain":
            text = _unb64(data, index=index, key=f"{key}.inlineData.data")
            if text is not None:
                return DocumentBlock(text=text)
        return media_block_for_mime(MediaRef(kind="data", data_base64=data, mime_type=mime))
    file_data = _get(part, "fileData", "file_data")
    if file_data is not None:
        d = as_mapping(file_data, index=index, key=f"{key}.fileData", what="fileData")
        uri = _get(d, "fileUri", "file_uri")
        if not isinstance(uri, str) or not uri:
            raise FormatError("fileData needs a 'fileUri'", index=index, key=f"{key}.fileData.fileUri")
        return media_block_for_mime(MediaRef(kind="url", url=uri, mime_type=_get(d, "mimeType", "mime_type")))
    return None


def _parse_response(
    fr: Mapping[str, Any], pairing: _Pairing, *, index: int, key: str, unpaired: str
) -> ToolResultBlock:
    name = fr.get("name")
    if not isinstance(name, str) or not name:
        raise FormatError("functionResponse needs a 'name'", index=index, key=f"{key}.name")
    response = fr.get("response", {})
    if not isinstance(response, Mapping):
        raise FormatError("functionResponse 'response' must be an object", index=index, key=f"{key}.response")
    raw_id = fr.get("id")
    call_id = pairing.take(name, raw_id if isinstance(raw_id, str) and raw_id else None, unpaired=unpaired)
    if len(response) == 1 and "error" in response:
        return ToolResultBlock(call_id=call_id, output=response["error"], status="error", name=name)
    if len(response) == 1 and "result" in response:
        return ToolResultBlock(call_id=call_id, output=response["result"], name=name)
    return ToolResultBlock(call_id=call_id, output=dict(response), name=name)


def _response_media(fr: Mapping[str, Any], *, index: int, key: str) -> list[ContentBlock]:
    """The images and documents a function response carries in its own ``parts`` (a screenshot the tool took), as
    blocks of the tool message: counted as media (they were not counted at all) and written back in place."""
    parts = fr.get("parts")
    if not isinstance(parts, list):
        return []
    out: list[ContentBlock] = []
    for k, part in enumerate(parts):
        part_key = f"{key}.parts[{k}]"
        block = _parse_media(as_mapping(part, index=index, key=part_key, what="part"), index=index, key=part_key)
        if isinstance(block, RESULT_MEDIA):
            out.append(block)
    return out


def _parse_contents_entry(d: Any, index: int, pairing: _Pairing, id_prefix: str) -> list[Message]:
    content = as_mapping(d, index=index, key="role", what="content")
    # the API reads a content without a role as the user's (its own quickstart sends one so); it passes through
    # unchanged, and a message windowkeeper writes anew says "user"
    role = content.get("role", "user")
    if role not in ("user", "model", "function"):
        raise FormatError(f"unknown role {role!r}; expected user or model", index=index, key="role")
    parts = as_list(content.get("parts", []), index=index, key="parts", what="'parts'")
    blocks: list[ContentBlock] = []
    results: list[tuple[ToolResultBlock, list[ContentBlock]]] = []
    for j, raw in enumerate(parts):
        key = f"parts[{j}]"
        part = as_mapping(raw, index=index, key=key, what="part")
        signature = _get(part, "thoughtSignature", "thought_signature")
        signature = signature if isinstance(signature, str) and signature else None
        call = _get(part, "functionCall", "function_call")
        response = _get(part, "functionResponse", "function_response")
        block: ContentBlock | None = None
        if part.get("thought") is True:
            text = part.get("text")
            blocks.append(ReasoningBlock(text=text if isinstance(text, str) else "", signature=signature))
            continue
        if call is not None:
            if role != "model":
                raise FormatError("functionCall parts belong in model contents", index=index, key=f"{key}.functionCall")
            c = as_mapping(call, index=index, key=f"{key}.functionCall", what="functionCall")
            name = c.get("name")
            if not isinstance(name, str) or not name:
                raise FormatError("functionCall needs a 'name'", index=index, key=f"{key}.functionCall.name")
            args = c.get("args") or {}
            if not isinstance(args, Mapping):
                raise FormatError("functionCall 'args' must be an object", index=index, key=f"{key}.functionCall.args")
            raw_id = c.get("id")
            call_id = raw_id if isinstance(raw_id, str) and raw_id else f"{id_prefix}_{index}_{j}"
            block = ToolCallBlock(
                id=call_id, name=name, args=json_args(args, index=index, key=f"{key}.functionCall.args")
            )
        elif response is not None:
            if role == "model":
                raise FormatError(
                    "functionResponse parts belong in user contents", index=index, key=f"{key}.functionResponse"
                )
            fr = as_mapping(response, index=index, key=f"{key}.functionResponse", what="functionResponse")
            unpaired = f"{id_prefix}_{index}_{j}"  # shaped as a synthesized call id, and no call is at this part
            result = _parse_response(fr, pairing, index=index, key=f"{key}.functionResponse", unpaired=unpaired)
            results.append((result, _response_media(fr, index=index, key=f"{key}.functionResponse")))
            continue
        elif isinstance(part.get("text"), str):
            if signature is not None and not part["text"]:
                blocks.append(ReasoningBlock(text="", signature=signature))
                continue
            block = TextBlock(text=part["text"])
        else:
            block = _parse_media(part, index=index, key=key)
            if block is None:
                # executableCode, codeExecutionResult, videoMetadata-only... kept as their JSON
                block = unknown_block("part " + ",".join(sorted(map(str, part))), part)
        if signature is not None:
            blocks.append(ReasoningBlock(text="", signature=signature))
        blocks.append(block)
    if role == "model":
        calls = [b for b in blocks if isinstance(b, ToolCallBlock)]
        pairing.start_turn(calls)
        # ``Message(role=..., content=..., tools_calls=...)`` without the validation pass (`read_message`: the same
        # fields, fields set and boundary rule; every block was built and validated above)
        tools_calls = openai_tools_calls(calls) if calls else None
        return [read_message("assistant", blocks, {}, tools_calls=tools_calls, calls_given=True, metadata_given=False)]
    out = [read_message("tool", [r, *media], {}, metadata_given=False) for r, media in results]
    if blocks or not results:
        out.append(read_message("user", blocks, {}, metadata_given=False))
    return out


@reader("Gemini contents")
def gemini_content_to_messages(content: Any, index: int = 0, *, id_prefix: str = DEFAULT_ID_PREFIX) -> list[Message]:
    """One Gemini content (e.g. a reply's ``candidates[0].content``) as ours.

    Pass an ``id_prefix`` unique to the reply so ids synthesized for its calls cannot collide with earlier turns.
    Message ids are derived from the content and ``index``.
    """
    out = _parse_contents_entry(content, index, _Pairing(), id_prefix)
    IdChain().assign(out, content, index)
    return out


@reader("Gemini contents")
def from_gemini(
    system_instruction: Any, contents: Any, *, id_prefix: str = DEFAULT_ID_PREFIX, keep_source: bool = True
) -> list[Message]:
    """``system_instruction`` (None or any shape google-genai takes for it: a content, a part, a string, a list of
    parts or strings, as objects or dicts) and ``contents`` as our messages.

    Ids are derived from content, position and the previous message's id, so converting the same input again
    gives the same ids (see `IdChain`).

    ``keep_source`` (the default) records on each message the item(s) it was read from, as the format
    object's ``read`` does, so that ``to_gemini`` (``passthrough`` is on by default) writes a message unchanged
    since as those very items: every key the caller sent, unknown ones included. Pass False for messages that are
    to be written anew in windowkeeper's own shape.
    """
    out: list[Message] = []
    chain = IdChain()
    if system_instruction is not None:
        if isinstance(system_instruction, str):
            out.append(Message.text_message(system_instruction, role="system"))
            chain.assign(out, {"system_instruction": system_instruction}, -1)
        else:
            si = as_mapping(
                _system_content(system_instruction), index=0, key="system_instruction", what="system_instruction"
            )
            for j, part in enumerate(
                as_list(si.get("parts", []), index=0, key="system_instruction.parts", what="parts")
            ):
                p = as_mapping(part, index=0, key=f"system_instruction.parts[{j}]", what="part")
                text = p.get("text")
                if not isinstance(text, str):
                    raise FormatError(
                        "system_instruction parts must be text", index=0, key=f"system_instruction.parts[{j}].text"
                    )
                system = Message.text_message(text, role="system")
                chain.assign([system], {"system_instruction": text, "part": j}, -1)
                out.append(system)
    items = messages_input(contents, what="Gemini contents")
    sources: list[Source] | None = [] if keep_source else None
    out.extend(_read(items, offset=0, previous=chain.previous, id_prefix=id_prefix, sources=sources))
    GEMINI.keep_all(sources or ())
    return out


def _system_content(system: Any) -> Any:
    """``system_instruction`` as a content (``{"parts": [...]}``), as google-genai's ``t_content`` makes one
    before sending it: a part (object or dict), a string or a list of them is the one user content holding them.
    Reading only a content's ``parts`` dropped a single-part instruction the SDK sends (and the API follows)."""
    if isinstance(system, str):
        return {"parts": [{"text": system}]}
    value = plain(system)
    if isinstance(value, list | tuple):
        return {"parts": [{"text": p} if isinstance(p, str) else plain(p) for p in value]}
    if isinstance(value, Mapping) and not _is_content(value):
        return {"parts": [value]}
    return value


def _is_content(value: Any) -> bool:
    """Whether a dict is a content rather than a part (google-genai tries ``Content`` first, whose keys these are)."""
    return isinstance(value, Mapping) and (not value or "parts" in value or "role" in value)


def _read(
    items: Sequence[Any], *, offset: int, previous: str | None, id_prefix: str, sources: list[Source] | None = None
) -> list[Message]:
    chain = IdChain(previous, sources)
    pairing = _Pairing()
    out: list[Message] = []
    for i, entry in enumerate(items, start=offset):
        converted = _parse_contents_entry(entry, i, pairing, id_prefix)
        chain.assign(converted, entry, i)
        out.extend(converted)
    return out


@reader("Gemini contents")
def read_items(
    items: Sequence[Any],
    *,
    offset: int = 0,
    previous: str | None = None,
    id_prefix: str = DEFAULT_ID_PREFIX,
    sources: list[Source] | None = None,
) -> list[Message]:
    """Messages from contents ``offset``, ``offset + 1``, ... of a longer list (no system instruction), as
    `from_gemini` reads them when ``previous`` is the id of the last message read before them. Function responses
    are paired with the calls of the preceding model content, so start the tail at a content without any."""
    return _read(items, offset=offset, previous=previous, id_prefix=id_prefix, sources=sources)


def _response_part(part: Any) -> bool:
    p = plain(part)
    return isinstance(p, Mapping) and ("functionResponse" in p or "function_response" in p)


_CONTENT_MODELLED = frozenset({"role", "parts"})
"""The keys of a content the reader makes messages from; any other is kept with them (`keep_turn_keys`)."""


class GeminiFormat(ProviderFormat):
    """Gemini ``contents``: user and model contents of parts, function responses in user contents."""

    parts_key = "parts"
    name = NAME
    round_trip = RoundTripRules(
        system="each_front",
        tool_status=True,
        tool_name="call",
        json_outputs=True,
        renumber_ids=True,
        reasoning_fields=frozenset({"signature"}),
        keep_media_mime_on_ref=True,
        file_id_as_url=True,
        retype_media_by_mime=True,
        document_filename=False,
        signature_text=True,
    )
    priority = 10
    title = FORMAT
    expected = (
        "Gemini contents such as {'role': 'user', 'parts': [{'text': 'hi'}]} (roles user and model; "
        "the system instruction goes to system=)"
    )

    def read_items(
        self, items: Sequence[Any], *, offset: int, previous: str | None, sources: list[Source] | None
    ) -> list[Message]:
        return read_items(items, offset=offset, previous=previous, sources=sources)

    def keep(self, source: Any, messages: Sequence[Message]) -> None:
        item = plain(source)
        blocks = split_parts(item.get("parts"), messages, _response_part)
        keep_source(self.name, messages, [source], blocks)
        keep_turn_keys(messages, item, _CONTENT_MODELLED)

    def safe_start(self, items: Sequence[Any], index: int) -> bool:
        if index == 0 or index >= len(items):
            return True
        entry = plain(items[index])
        parts = entry.get("parts") if isinstance(entry, Mapping) else None
        return not any(_response_part(p) for p in (parts if isinstance(parts, list) else []))

    def read_system(self, system: Any) -> str | None:
        if system is None or isinstance(system, str):
            return super().read_system(system)
        messages = from_gemini(system, [])
        return "\n\n".join(m.text() for m in messages if m.role == "system") or None

    def write_messages(self, messages: Sequence[Message], *, options: Mapping[str, Any]) -> list[Any]:
        return list(to_gemini(messages, reasoning="signed", passthrough=bool(options.get("passthrough", True)))[1])

    def write(self, system: str | None, messages: Sequence[Message], **options: Any) -> tuple[list[Any], Any]:
        out = self.write_messages(messages, options=options)
        given = options.get("system_source")
        source = None if given is None or isinstance(given, str) else _system_content(given)
        if isinstance(source, Mapping) and isinstance(source.get("parts"), list):
            tail = self.system_tail(given, system)
            if tail is not None:
                # the caller's system instruction as it came (its parts and keys), the summary as a part after them;
                # a part or list of parts given in place of a content becomes the content the SDK would make of it
                if tail:
                    return out, {**source, "parts": [*source["parts"], {"text": tail}]}
                return out, source if _is_content(plain(given)) else given
        return out, ({"parts": [{"text": system}]} if system else None)

    def distinctive(self, item: Any) -> str | None:
        d = plain(item)
        if not isinstance(d, Mapping):
            return None
        if "parts" in d:
            return "parts"
        return "role" if d.get("role") == "model" else None

    def foreign(self, item: Any) -> tuple[str, str | None] | None:
        d = plain(item)
        if isinstance(d, Mapping) and "content" in d and "parts" not in d:
            from .registry import guess_format

            return "content", guess_format(item)
        return super().foreign(item)

    def tool(self, name: str, description: str, parameters: Mapping[str, Any]) -> dict[str, Any]:
        return {"functionDeclarations": [{"name": name, "description": description, "parameters": dict(parameters)}]}


GEMINI = register_format(GeminiFormat())
"""The Gemini format object."""
