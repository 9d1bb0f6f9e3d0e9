"""Reading conversations and trajectory collections from files, in whichever format they were saved.

Errors name the file, the message index and the field, so a bad record in a 50 MB export can be found.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..errors import FormatError
from ..llm.formats import from_anthropic, from_openai_chat
from ..messages import Message
from ..state import AgentState

FORMATS = ("auto", "openai", "anthropic", "windowkeeper")


class ConversationFileError(FormatError):
    """A conversation file could not be read; the message names the file, index and field."""


def _read_json(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConversationFileError(f"{path}: cannot read file ({exc.strerror})") from exc
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConversationFileError(
            f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
        ) from exc


def _is_ours(item: Any) -> bool:
    return isinstance(item, dict) and isinstance(item.get("content"), list) and "message_id" in item


def _ours(path: Path, items: list[Any]) -> list[Message]:
    out = []
    for index, item in enumerate(items):
        try:
            out.append(Message.model_validate(item))
        except ValidationError as exc:
            err = exc.errors()[0]
            loc = ".".join(str(p) for p in err["loc"])
            raise ConversationFileError(f"{path}: {err['msg']}", index=index, key=loc or None) from exc
    return out


def detect_format(data: Any) -> str:
    """Guess the format of parsed JSON: ours, Anthropic Messages, or OpenAI chat."""
    if isinstance(data, dict):
        if "context" in data or ("messages" in data and data["messages"] and _is_ours(data["messages"][0])):
            return "windowkeeper"
        if "messages" in data and ("system" in data or "anthropic_version" in data):
            return "anthropic"
        if "messages" in data or "history" in data:
            return "openai"
    if isinstance(data, list) and data and _is_ours(data[0]):
        return "windowkeeper"
    return "openai"


def parse_conversation(data: Any, *, fmt: str = "auto", source: str = "<data>") -> list[Message]:
    """Messages from parsed JSON in a given (or detected) format."""
    if fmt not in FORMATS:
        raise ConversationFileError(f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}")
    path = Path(source)
    fmt = detect_format(data) if fmt == "auto" else fmt
    try:
        if fmt == "windowkeeper":
            items = data.get("context", data.get("messages")) if isinstance(data, dict) else data
            if not isinstance(items, list):
                raise ConversationFileError(f"{source}: expected a list of messages", key="messages")
            return _ours(path, items)
        if fmt == "anthropic":
            if not isinstance(data, dict):
                raise ConversationFileError(f"{source}: expected an object with 'system' and 'messages'")
            return from_anthropic(data.get("system"), data.get("messages", []))
        items = data
        if isinstance(data, dict):
            items = data.get("messages", data.get("history", data.get("traj")))
        if not isinstance(items, list):
            raise ConversationFileError(f"{source}: expected a list of OpenAI chat messages", key="messages")
        return from_openai_chat(items)
    except ConversationFileError:
        raise
    except FormatError as exc:
        raise ConversationFileError(f"{source}: {exc}", index=None, key=None) from exc


def load_conversation(path: str | Path, *, fmt: str = "auto") -> list[Message]:
    """One conversation from a JSON file (OpenAI chat list, Anthropic request, or our JSON / AgentState)."""
    p = Path(path)
    return parse_conversation(_read_json(p), fmt=fmt, source=str(p))


def load_state(path: str | Path, *, fmt: str = "auto") -> AgentState:
    """A conversation file as a state: our saved ``AgentState`` JSON keeps its summary and scratchpad."""
    p = Path(path)
    data = _read_json(p)
    state = AgentState(context=parse_conversation(data, fmt=fmt, source=str(p)))
    if isinstance(data, dict) and fmt in ("auto", "windowkeeper"):
        for key in ("context_summary", "scratchpad"):
            value = data.get(key)
            if value is not None and not isinstance(value, str):
                raise ConversationFileError(f"{p}: {key} must be a string", key=key)
            setattr(state, key, value)
    return state


def load_trajectories(path: str | Path, *, limit: int | None = None) -> list[tuple[str, list[Message]]]:
    """Named conversations from a trajectory collection.

    Accepts a tau-bench style JSON list of ``{"traj": [...]}`` records, a SWE-agent ``.traj`` file (``history``),
    a single conversation file, or a folder holding any of these.
    """
    p = Path(path)
    if p.is_dir():
        files = sorted(f for f in p.iterdir() if f.suffix in (".json", ".traj"))
        out: list[tuple[str, list[Message]]] = []
        for f in files:
            out.extend(load_trajectories(f))
            if limit is not None and len(out) >= limit:
                return out[:limit]
        return out
    data = _read_json(p)
    if isinstance(data, list) and data and isinstance(data[0], dict) and "traj" in data[0]:
        out = []
        for i, record in enumerate(data[:limit] if limit else data):
            name = f"{p.stem}#{record.get('task_id', i)}.{record.get('trial', 0)}"
            try:
                out.append((name, from_openai_chat(record["traj"])))
            except FormatError as exc:
                raise ConversationFileError(f"{p}: trajectory {i}: {exc}") from exc
        return out
    if isinstance(data, dict) and "history" in data:
        history = [_swe_message(m) for m in data["history"] if isinstance(m, dict)]
        return [(p.stem, parse_conversation(history, fmt="openai", source=str(p)))]
    return [(p.stem, parse_conversation(data, source=str(p)))]


def _swe_message(raw: dict[str, Any]) -> dict[str, Any]:
    """SWE-agent history entries carry bookkeeping keys next to the chat fields; keep only the chat fields."""
    keep = {"role", "content", "tool_calls", "tool_call_id", "name"}
    msg = {k: v for k, v in raw.items() if k in keep}
    ids = raw.get("tool_call_ids")
    if msg.get("role") == "tool" and not msg.get("tool_call_id") and isinstance(ids, list) and ids:
        msg["tool_call_id"] = ids[0]  # SWE-agent's function-calling trajectories list the answered call ids
    if msg.get("role") not in ("system", "user", "assistant", "tool"):
        msg["role"] = "user"
    if isinstance(msg.get("content"), list):
        msg["content"] = "".join(part.get("text", "") for part in msg["content"] if isinstance(part, dict))
    return msg


__all__ = [
    "FORMATS",
    "ConversationFileError",
    "detect_format",
    "load_conversation",
    "load_state",
    "load_trajectories",
    "parse_conversation",
]
