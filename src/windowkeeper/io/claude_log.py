"""A coding agent's session log (Claude Code's ``~/.claude/projects/<project>/<session>.jsonl``), read and written.

One event per line. ``user`` and ``assistant`` events carry an Anthropic message in ``message``; an assistant
reply is written one content block per line (text, thinking, tool_use), every line of it sharing
``message.id``, and those lines are merged back into one assistant turn. Tool results come as ``user`` events
holding ``tool_result`` blocks. Every other event type (``summary`` titles, ``system`` notices,
``file-history-snapshot``, ...) is not conversation: it is skipped and counted. Events link by
``uuid``/``parentUuid``; a compacted log is re-linked so each event's parent is the one written before it.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import FormatError
from ..llm.formats import anthropic_message_to_messages, to_anthropic
from ..messages import Message
from ..prompt.sections import summary_section
from .transcript import Group, Transcript, event_objects, parse_timestamp, write_events

KIND = "claude-code"
CONVERSATION_TYPES = frozenset({"user", "assistant"})
OTHER_TYPES = frozenset({"summary", "system", "file-history-snapshot", "queue-operation", "progress"})
_ENVELOPE_KEYS = ("isSidechain", "userType", "cwd", "sessionId", "version", "gitBranch")
_NAMESPACE = uuid.UUID("6c7a2c1e-3f0b-4a51-9d0e-5b1f6f2c9a10")


def looks_like(events: Sequence[Any]) -> bool:
    """Whether the first events look like a session log: typed events with the log's linking keys."""
    for event in events[:50]:
        if not isinstance(event, Mapping):
            continue
        kind = event.get("type")
        if not isinstance(kind, str):
            return False
        if kind in CONVERSATION_TYPES and isinstance(event.get("message"), Mapping) and "uuid" in event:
            return True
        if kind == "summary" and "leafUuid" in event:
            continue
        if kind in OTHER_TYPES:
            continue
        return False
    return False


def _content(message: Mapping[str, Any]) -> list[Any]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    if isinstance(content, list):
        return list(content)
    raise FormatError(f"'message.content' is {type(content).__name__}; expected a string or a list of blocks")


def read(events: Sequence[Any], lines: Sequence[int]) -> tuple[list[Message], Transcript, list[str]]:
    """The messages of a session log, the `Transcript` that writes them back, and every problem by line."""
    transcript = Transcript(KIND, [e if isinstance(e, dict) else {} for e in events])
    messages: list[Message] = []
    problems: list[str] = []
    pending: list[int] = []  # the lines of the assistant reply being merged

    def emit(indices: list[int], role: str, blocks: list[Any]) -> None:
        first = events[indices[0]]
        try:
            out = anthropic_message_to_messages({"role": role, "content": blocks}, indices[0])
        except (FormatError, ValueError, TypeError, KeyError) as exc:
            problems.append(f"line {lines[indices[0]]}: {exc}")
            return
        base = first["message"].get("id") if role == "assistant" else None
        base = str(base or first.get("uuid") or f"line{lines[indices[0]]}")
        stamp = parse_timestamp(first.get("timestamp"))
        for k, message in enumerate(out):
            message.message_id = base if k == 0 else f"{base}#{k}"
            message.timestamp = stamp
        messages.extend(out)
        transcript.add(indices, out)

    def flush() -> None:
        if pending:
            blocks: list[Any] = []
            for i in pending:
                blocks.extend(_content(events[i]["message"]))
            emit(list(pending), "assistant", blocks)
            pending.clear()

    for i, event, kind in event_objects(events, lines, problems):
        if kind not in CONVERSATION_TYPES:
            transcript.skipped[kind] += 1
            continue
        message = event.get("message")
        if not isinstance(message, Mapping):
            problems.append(f"line {lines[i]}: a {kind} event without a 'message' object")
            continue
        try:
            blocks = _content(message)
        except FormatError as exc:
            problems.append(f"line {lines[i]}: {exc}")
            continue
        if kind == "assistant":
            api_id = message.get("id")
            if pending and (api_id is None or events[pending[0]]["message"].get("id") != api_id):
                flush()
            pending.append(i)
            continue
        flush()
        emit([i], "user", blocks)
    flush()
    return messages, transcript, problems


def _blocks(messages: Sequence[Message]) -> list[Any]:
    _system, converted = to_anthropic(list(messages), passthrough=False)
    blocks: list[Any] = []
    for item in converted:
        content = item["content"]
        blocks.extend([{"type": "text", "text": content}] if isinstance(content, str) else content)
    return blocks


def _template(transcript: Transcript) -> dict[str, Any]:
    for event in transcript.events:
        if event.get("type") in CONVERSATION_TYPES:
            return {k: event[k] for k in _ENVELOPE_KEYS if k in event}
    return {}


def _new_event(transcript: Transcript, role: str, blocks: list[Any], seed: str, **extra: Any) -> dict[str, Any]:
    event = _template(transcript)
    event.update(
        type=role,
        message={"role": role, "content": blocks},
        uuid=str(uuid.uuid5(_NAMESPACE, f"{event.get('sessionId')}:{seed}")),
        **extra,
    )
    return event


def write(transcript: Transcript, view: Sequence[Message], summary: str | None) -> list[dict[str, Any]]:
    """The log of ``view`` (and ``summary``, as a leading compact-summary user event), re-linked by parentUuid."""

    def rewrite(group: Group | None, messages: list[Message]) -> list[dict[str, Any]]:
        if group is None:
            out = []
            for message in messages:
                role = "assistant" if message.role == "assistant" else "user"
                out.append(_new_event(transcript, role, _blocks([message]), str(message.message_id)))
            return out
        first = transcript.events[group.events[0]]
        # the envelope stays; the tool's raw output (shown by the agent's UI, never sent) would undo a clearing
        event = copy.deepcopy({k: v for k, v in first.items() if k != "toolUseResult"})
        event["message"]["content"] = _blocks(messages)
        return [event]

    events = write_events(transcript, view, rewrite)
    text = summary_section(summary)
    if text:
        events.insert(
            0, _new_event(transcript, "user", [{"type": "text", "text": text}], "summary", isCompactSummary=True)
        )
    parent: Any = None
    linked: list[dict[str, Any]] = []
    for event in events:
        if "uuid" in event:
            if "parentUuid" not in event or event["parentUuid"] != parent:
                event = {**event, "parentUuid": parent}
            parent = event["uuid"]
        linked.append(event)
    return linked
