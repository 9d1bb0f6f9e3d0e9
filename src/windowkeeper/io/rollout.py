"""A Responses-family rollout (Codex CLI's ``~/.codex/sessions/.../rollout-*.jsonl``), read and written.

Each line is ``{"timestamp", "type", "payload"}``. ``response_item`` payloads are Responses items (message,
reasoning, function_call, function_call_output, custom_tool_call, local_shell_call, web_search_call, ...): the
conversation. ``session_meta`` opens the file (its ``instructions``, when set, are the system prompt) and a
``compacted`` event holds the summary an earlier compaction left (a compaction here writes its summary so too).
``event_msg`` (which repeats the items for the terminal UI and adds token counts) and ``turn_context`` are not
conversation: skipped and counted.

The item types the Responses reader has no name for are read as the function calls and outputs they are (a shell
call's action; a custom tool's call and output the reader models itself), so they are counted and paired; a
compacted rollout writes every unchanged item exactly as it was read.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import FormatError
from ..llm.formats import from_responses_input, to_responses_input
from ..messages import Message
from ..prompt.sections import summary_section
from .transcript import Group, Transcript, event_objects, parse_timestamp, write_events

KIND = "codex"
EVENT_TYPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted"})
_ASSISTANT_SIDE = frozenset(
    {"reasoning", "function_call", "custom_tool_call", "local_shell_call", "web_search_call", "assistant"}
)
_OUTPUT_TYPES = frozenset({"function_call_output", "custom_tool_call_output", "local_shell_call_output"})
_AS_FUNCTION_OUTPUT = frozenset({"function_call_output", "local_shell_call_output"})
"""Outputs read as a ``function_call_output`` (a custom tool's call and output are read as they are: the Responses
reader models them)."""
_LEGACY_ITEMS = frozenset({"message", "reasoning", "function_call", "function_call_output"})


def looks_like(events: Sequence[Any]) -> bool:
    """Whether the first events look like a rollout: ``{"type", "payload"}`` lines of the rollout's types."""
    for event in events[:50]:
        if isinstance(event, Mapping) and isinstance(event.get("payload"), Mapping):
            kind = event.get("type")
            return isinstance(kind, str) and kind in EVENT_TYPES
        if isinstance(event, Mapping) and "record_type" in event:
            continue
        return False
    return False


def _normalized(item: Mapping[str, Any]) -> dict[str, Any]:
    """The item in the types `from_responses_input` reads; tool kinds without a name of their own become calls."""
    kind = item.get("type")
    if kind == "local_shell_call":
        arguments = json.dumps(item.get("action", {}), ensure_ascii=False)
        return {"type": "function_call", "call_id": item.get("call_id"), "name": "local_shell", "arguments": arguments}
    if kind in _AS_FUNCTION_OUTPUT:
        output = item.get("output", "")
        text = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
        return {"type": "function_call_output", "call_id": item.get("call_id"), "output": text}
    if kind == "web_search_call":
        action = json.dumps(item.get("action", {}), ensure_ascii=False)
        return {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": f"web search: {action}"}],
        }
    return dict(item)


def _side(item: Mapping[str, Any]) -> str:
    kind = item.get("type")
    if kind == "message":
        return "assistant" if item.get("role") == "assistant" else "other"
    return "assistant" if kind in _ASSISTANT_SIDE else "other"


def read(events: Sequence[Any], lines: Sequence[int]) -> tuple[list[Message], Transcript, list[str]]:
    """The messages of a rollout, the `Transcript` that writes them back, and every problem by line."""
    transcript = Transcript(KIND, [e if isinstance(e, dict) else {} for e in events])
    messages: list[Message] = []
    problems: list[str] = []
    pending: list[tuple[int, dict[str, Any]]] = []  # the items of the assistant turn being gathered

    def emit(group: list[tuple[int, dict[str, Any]]], instructions: str | None = None) -> None:
        first = group[0][0]
        try:
            out = from_responses_input([item for _, item in group], instructions, keep_source=False)
        except (FormatError, ValueError, TypeError, KeyError) as exc:
            problems.append(f"line {lines[first]}: {str(exc).removeprefix('message 0, ')}")
            return
        stamp = parse_timestamp(events[first].get("timestamp"))
        for k, message in enumerate(out):
            message.message_id = f"line{lines[first]}" if k == 0 else f"line{lines[first]}#{k}"
            message.timestamp = stamp
        messages.extend(out)
        transcript.add([i for i, _ in group], out)

    def flush() -> None:
        if pending:
            emit(list(pending))
            pending.clear()

    for i, event, kind in event_objects(events, lines, problems):
        payload = event.get("payload")
        if "payload" not in event and kind in _LEGACY_ITEMS:
            kind, payload = "response_item", event  # a rollout written before events had envelopes
        if kind == "session_meta" and isinstance(payload, Mapping):
            instructions = payload.get("instructions")
            if isinstance(instructions, str) and instructions.strip():
                flush()
                emit([(i, {"type": "message", "role": "system", "content": instructions})])
            else:
                transcript.skipped["session_meta"] += 1
            continue
        if kind == "compacted" and isinstance(payload, Mapping) and isinstance(payload.get("message"), str):
            flush()
            emit([(i, {"type": "message", "role": "user", "content": payload["message"]})])
            continue
        if kind != "response_item":
            transcript.skipped[str(kind)] += 1
            continue
        if not isinstance(payload, Mapping):
            problems.append(f"line {lines[i]}: a response_item without a 'payload' object")
            continue
        if not isinstance(payload.get("type"), str) or payload["type"] not in (
            _ASSISTANT_SIDE | _OUTPUT_TYPES | {"message"}
        ):
            transcript.skipped[f"response_item:{payload.get('type')}"] += 1
            continue
        item = _normalized(payload)
        if _side(payload) == "assistant":
            pending.append((i, item))
            continue
        flush()
        emit([(i, item)])
    flush()
    return messages, transcript, problems


def write(transcript: Transcript, view: Sequence[Message], summary: str | None) -> list[dict[str, Any]]:
    """The rollout of ``view``: the session_meta line, ``summary`` as a ``compacted`` event, then the kept items."""
    stamp_of = next((e.get("timestamp") for e in transcript.events if "timestamp" in e), None)

    def line(payload: Any, stamp: Any) -> dict[str, Any]:
        return {"timestamp": stamp, "type": "response_item", "payload": payload}

    def rewrite(group: Group | None, messages: list[Message]) -> list[dict[str, Any]]:
        stamp = transcript.events[group.events[0]].get("timestamp") if group is not None else stamp_of
        _instructions, typed = to_responses_input(list(messages), passthrough=False)
        items: list[Any] = list(typed)
        if group is not None and len(group.events) == 1 and len(items) == 1:
            original = transcript.events[group.events[0]]
            payload = original.get("payload", original)
            if isinstance(payload, Mapping) and payload.get("type") in _OUTPUT_TYPES and "output" in items[0]:
                event = copy.deepcopy(original)
                target = event.get("payload", event)
                target["output"] = items[0]["output"]
                return [event]
        return [line(item, stamp) for item in items]

    events = write_events(transcript, view, rewrite)
    head = [e for e in transcript.events[:1] if e.get("type") == "session_meta"]
    if head and (not events or events[0] is not head[0]):
        events.insert(0, head[0])
    text = summary_section(summary)
    if text:
        at = 1 if events and events[0].get("type") == "session_meta" else 0
        # the rollout's own record of a compaction, which Codex replays as the summary of what came before
        events.insert(at, {"timestamp": stamp_of, "type": "compacted", "payload": {"message": text}})
    return events
