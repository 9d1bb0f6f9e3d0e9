"""Memory events: normalizing what callers add, and turning stored events back into messages.

Callers add either the reference's event dicts (``{"message": {...}, "state": {...}}``, plain-text content) or our
`Message` objects. A `Message` becomes an event whose text renders its tool calls and results, so gists,
summaries and token counts all see one text; the original is kept as JSON so `history` and the message view can
give back the exact object. Its text is stored once: when the source holds the event's text verbatim, that copy
is left out and put back on reading (`pack_source`, `full_source`).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, cast

from ..blocks import (
    AudioBlock,
    ContentBlock,
    DocumentBlock,
    ErrorBlock,
    ImageBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    VideoBlock,
    make_block,
    tool_output_text,
)
from ..boundary import clean_id, clean_json
from ..errors import FormatError
from ..messages import ROLES, Message
from .structured import event_tool_calls

COMPACTION_KEY = "__compaction__"
SUMMARY_MARK = "__summarized_by__"
SUMMARY_STATE_KEY = "__summary__"
RESERVED_STATE_KEYS = frozenset({COMPACTION_KEY, SUMMARY_MARK, SUMMARY_STATE_KEY})
"""State keys only the memory writes; caller input carrying one is rejected, never trusted."""
_INTERNAL_MESSAGE_KEYS = ("calls_in_content",)
"""Message flags the memory sets for events made from a `Message`; dropped from caller dicts."""


def _now_iso() -> datetime:
    return datetime.now(UTC)


def _json_default(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    raise TypeError(f"{type(value).__name__} is not JSON-serializable")


def _render_block(block: Any) -> str:
    if isinstance(block, TextBlock):
        return block.text
    if isinstance(block, ToolCallBlock):
        return f"[tool call {block.name}({json.dumps(block.args, ensure_ascii=False, sort_keys=True)})]"
    if isinstance(block, ToolResultBlock):
        return tool_output_text(block.output)
    if isinstance(block, ErrorBlock):
        return f"[error] {block.error}"
    if isinstance(block, ImageBlock | AudioBlock | VideoBlock):
        ref = block.media.filename or block.media.url or block.media.file_id or block.media.mime_type or ""
        return f"[{block.type} {ref}]".replace(" ]", "]")
    if isinstance(block, DocumentBlock):
        return block.text or block.excerpt or "[document]"
    return ""


def message_to_event(message: Message) -> dict[str, Any]:
    """An event for a `Message`: text content (tool calls/results rendered), role kept, calls kept structured."""
    parts = [_render_block(b) for b in message.content]
    calls = message.tool_call_blocks()
    if calls and not any(isinstance(b, ToolCallBlock) for b in message.content):
        parts.extend(_render_block(c) for c in calls)
    body: dict[str, Any] = {
        "id": str(message.message_id),
        "role": message.role,
        "content": "\n".join(p for p in parts if p),
        "timestamp": (
            datetime.fromtimestamp(message.timestamp, UTC).isoformat()
            if message.timestamp is not None
            else _now_iso().isoformat()
        ),
    }
    if calls:
        body["tool_calls"] = [{"id": c.id, "name": c.name, "arguments": dict(c.args)} for c in calls]
        body["calls_in_content"] = True
    result_ids = [b.call_id for b in message.tool_result_blocks()]
    if result_ids:
        body["tool_call_id"] = result_ids[0]
        if len(result_ids) > 1:
            body["tool_call_ids"] = result_ids
    return {"message": body, "state": {}}


def normalize_event(event: Mapping[str, Any] | Message) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """A JSON-clean copy of ``event`` with an id and timestamp, plus the original `Message` JSON if there was one.

    Bad shapes raise `FormatError` naming the key, before anything is stored.
    """
    if isinstance(event, Message):
        return message_to_event(event), event.model_dump(mode="json")
    if not isinstance(event, Mapping):
        raise FormatError(f"an event must be a dict or a Message, got {type(event).__name__}")
    try:
        # clean_json: the text rule of windowkeeper.boundary (lone surrogates become U+FFFD) for dict events too
        copy = clean_json(json.loads(json.dumps(dict(event), default=_json_default, ensure_ascii=False)))
    except RecursionError as exc:
        raise FormatError("event nests too deep to store; flatten message/state", key="event") from exc
    except (TypeError, ValueError) as exc:
        raise FormatError(
            f"event is not JSON-serializable ({exc}); store plain values in message/state", key="event"
        ) from exc
    message = copy.get("message")
    if not isinstance(message, dict):
        raise FormatError("event needs a 'message' dict", key="message")
    role = message.get("role")
    if role not in ROLES:
        raise FormatError(f"role {role!r} is not one of {', '.join(ROLES)}", key="message.role")
    content = message.get("content")
    if content is None:
        message["content"] = ""
    elif not isinstance(content, str):
        raise FormatError(
            f"content must be a string, got {type(content).__name__}; add a Message object for rich content",
            key="message.content",
        )
    if message.get("id") in (None, ""):
        message["id"] = uuid.uuid4().hex
    else:
        # the id as given, before clean_json: clean_id keeps two different lone surrogates two different ids
        given = event.get("message")
        given_id = given.get("id") if isinstance(given, Mapping) else None
        message["id"] = clean_id(str(given_id if isinstance(given_id, str) else message["id"]))
    if message.get("timestamp") is None:
        message["timestamp"] = _now_iso().isoformat()
    state = copy.setdefault("state", {})
    if not isinstance(state, dict):
        raise FormatError(f"state must be a dict, got {type(state).__name__}", key="state")
    reserved = sorted(RESERVED_STATE_KEYS.intersection(state))
    if reserved:
        raise FormatError(
            f"state key(s) {reserved} are reserved for the memory's own bookkeeping (compaction, summaries); "
            "rename them, or add the original event rather than one read back from list()",
            key=f"state.{reserved[0]}",
        )
    for internal in _INTERNAL_MESSAGE_KEYS:
        message.pop(internal, None)
    return copy, None


def same_event(
    stored: Mapping[str, Any], new: Mapping[str, Any], stored_source: Any = None, new_source: Any = None
) -> bool:
    """Whether ``new`` repeats ``stored`` (a retried add): same role, content, tool calls and state.

    Timestamps are ignored, since an add without one is stamped with the time of the call.
    """
    if stored_source is not None or new_source is not None:
        if stored_source is None or new_source is None:
            return False
        return {k: v for k, v in stored_source.items() if k != "timestamp"} == {
            k: v for k, v in new_source.items() if k != "timestamp"
        }
    a, b = dict(stored["message"]), dict(new["message"])
    for msg in (a, b):
        msg.pop("timestamp", None)
    return a == b and dict(stored.get("state") or {}) == dict(new.get("state") or {})


def result_ids(event: Mapping[str, Any]) -> list[str]:
    msg = event["message"]
    ids = msg.get("tool_call_ids") or ([msg["tool_call_id"]] if msg.get("tool_call_id") else [])
    return [str(i) for i in ids]


def event_to_message(event: Mapping[str, Any], *, for_counting: bool = False) -> Message:
    """The message a model would be sent for ``event`` (its current, possibly compacted, text).

    Tool calls and results become blocks so tool pairing is preserved. With ``for_counting`` an event made from a
    `Message` (its calls already rendered into the text, flagged ``calls_in_content``) gets no call blocks, so
    its calls are not counted twice.
    """
    msg = event["message"]
    text = str(msg.get("content") or "")
    role = msg["role"]
    # `make_block` / `Message.from_blocks`: the same message as the constructors give, without a validator call
    # per field (a reopened session builds every compacted event this way)
    blocks: list[ContentBlock] = []
    ids = result_ids(event) if role == "tool" else []
    if ids and not for_counting:
        blocks.append(make_block("tool_result", call_id=ids[0], output=text))
        blocks.extend(make_block("tool_result", call_id=i, output="") for i in ids[1:])
    elif text:
        blocks.append(make_block("text", text=text))
    if role == "assistant" and not (for_counting and msg.get("calls_in_content")):
        blocks.extend(
            make_block("tool_call", id=cid, name=name, args=args) for cid, name, args in event_tool_calls(event)
        )
    return Message.from_blocks(role, blocks, message_id=str(msg["id"]), timestamp=None)


SOURCE_TEXT_KEY = "source_text"
"""Doc field of an event added as a `Message` whose source holds the event's text once more: ``[block, field]``
names the string in ``source["content"]`` that equals the event's original content. That string is stored as
``null`` (the text is stored once, in the event) and `full_source` puts it back. Records written before this field
existed hold the whole source and no such field; they are read as they are."""
_TEXT_FIELDS = {"text": "text", "tool_result": "output"}
"""Block type -> the string field a `Message` event's content can equal (a text block, a tool result's output)."""


def original_content(event: Mapping[str, Any]) -> str:
    """The event's content as it was added: its current text, or the original a compaction kept in its state."""
    info = (event.get("state") or {}).get(COMPACTION_KEY)
    if isinstance(info, Mapping) and "original_content" in info:
        return str(info["original_content"])
    return str(event["message"].get("content") or "")


def pack_source(doc: dict[str, Any]) -> None:
    """Store an event's source `Message` without the text the event already holds (see `SOURCE_TEXT_KEY`).

    Only an exact match is replaced (a one-block message: text, or a tool result with a string output, the common
    case), so `full_source` gives back byte-identical JSON; anything else is stored whole.
    """
    source = doc.get("source")
    if not isinstance(source, dict) or SOURCE_TEXT_KEY in doc:
        return
    content = original_content(doc["event"])
    blocks = source.get("content")
    if not content or not isinstance(blocks, list):
        return
    for index, block in enumerate(blocks):
        name = _TEXT_FIELDS.get(str(block.get("type"))) if isinstance(block, dict) else None
        if name is not None and block.get(name) == content:
            packed = list(blocks)
            packed[index] = {**block, name: None}
            doc["source"] = {**source, "content": packed}
            doc[SOURCE_TEXT_KEY] = [index, name]
            return


def full_source(doc: Mapping[str, Any]) -> dict[str, Any] | None:
    """The source `Message` JSON of a stored event doc (``None`` for a dict event), its packed text put back.

    ``doc`` must hold the original content: an uncompacted event, or one whose archived original was restored.
    """
    source = doc.get("source")
    ref = doc.get(SOURCE_TEXT_KEY)
    if not isinstance(source, dict) or ref is None:
        return cast("dict[str, Any] | None", source)
    index, name = ref
    blocks = list(source["content"])
    blocks[index] = {**blocks[index], name: original_content(doc["event"])}
    return {**source, "content": blocks}


def original_event(event: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``event`` with any compaction undone (content byte-identical to what was added)."""
    copy: dict[str, Any] = json.loads(json.dumps(event, ensure_ascii=False))
    info = copy.get("state", {}).pop(COMPACTION_KEY, None)
    if isinstance(info, dict) and "original_content" in info:
        copy["message"]["content"] = info["original_content"]
    return copy
