"""Writing a managed view back as a file: in the input's own format by default, or in another one.

A request body comes back as the same body (every other key kept, in its order) with the new messages; a bare
message list as a list; a session log as the same log (see `windowkeeper.io.transcript`). Anthropic and Gemini
require turns to alternate, so consecutive turns of one role (a tool result followed by the user's text) are
merged into one turn, as the API itself would read them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from enum import StrEnum
from typing import Any

from ..llm.formats import to_anthropic, to_gemini, to_langchain, to_openai_chat, to_responses_input
from ..llm.formats._source import SOURCE_KEY
from ..messages import Message
from ..prompt import assemble
from ..prompt.recall import is_recall
from ..state import AgentState
from . import claude_log, rollout
from .reader import Conversation, InputFormat
from .source import ConversationFileError


class OutFormat(StrEnum):
    """The shape ``compact`` writes; ``input`` is the input's own format."""

    INPUT = "input"
    WINDOWKEEPER = "windowkeeper"
    OPENAI = "openai"
    RESPONSES = "responses"
    ANTHROPIC = "anthropic"
    GEMINI = "gemini"
    LANGCHAIN = "langchain"
    CLAUDE_CODE = "claude-code"
    CODEX = "codex"


_OWN_FORMAT = {
    InputFormat.TAU_BENCH.value: OutFormat.OPENAI,
    InputFormat.SWE_AGENT.value: OutFormat.OPENAI,
}
"""Inputs that are records around an OpenAI Chat conversation are written as that conversation."""

JSONL_FORMATS = frozenset({OutFormat.CLAUDE_CODE, OutFormat.CODEX})


def resolve(out_format: OutFormat, conversation: Conversation) -> OutFormat:
    """The concrete format to write ``conversation`` in."""
    if out_format is OutFormat.INPUT:
        return _OWN_FORMAT.get(conversation.format) or OutFormat(conversation.format)
    if out_format in JSONL_FORMATS and (
        conversation.transcript is None or conversation.transcript.kind != out_format.value
    ):
        raise ConversationFileError(
            f"--out-format {out_format.value} writes a {out_format.value} log back, and the input is "
            f"{conversation.format}; pick another --out-format"
        )
    return out_format


def alternate(turns: Sequence[Any], key: str) -> list[dict[str, Any]]:
    """Merge consecutive turns of one role (content lists or strings under ``key``) into one turn."""
    out: list[dict[str, Any]] = []
    for turn in turns:
        if out and out[-1].get("role") == turn.get("role"):
            merged = dict(out[-1])
            merged[key] = _as_list(merged.get(key), key) + _as_list(turn.get(key), key)
            out[-1] = merged
        else:
            out.append(dict(turn))
    return out


def _as_list(value: Any, key: str) -> list[Any]:
    if isinstance(value, list):
        return list(value)
    if isinstance(value, str):
        return [{"type": "text", "text": value}] if key == "content" else [{"text": value}]
    return []


def _body(conversation: Conversation, key: str, messages: Any, **replaced: Any) -> Any:
    """The input's request body with ``key`` replaced (others in their order), or the new parts alone. Only a
    body of the format being written is reused: another provider's model name and settings mean nothing here."""
    fmt = replaced.pop("fmt")
    if conversation.envelope is None or conversation.messages_key != key or conversation.format != fmt.value:
        parts = {k: v for k, v in replaced.items() if v is not None}
        return {**parts, key: messages} if parts else messages
    body: dict[str, Any] = {}
    for k, v in conversation.envelope.items():
        body[k] = messages if k == key else replaced.pop(k, v)
    for k, v in replaced.items():
        if v is not None:
            body[k] = v
    return {k: v for k, v in body.items() if v is not None or k not in ("system", "instructions", "system_instruction")}


def _drop_sources(messages: list[dict[str, Any]]) -> None:
    """Take out the source items the reader kept on each message (for writing the input's format back): in our
    own format they would only repeat every message in its input shape, doubling the file."""
    for message in messages:
        raw = message.get("raw")
        if isinstance(raw, dict) and SOURCE_KEY in raw:
            rest = {k: v for k, v in raw.items() if k != SOURCE_KEY}
            message["raw"] = rest or None


def _notes_apart(messages: list[Message]) -> list[Message]:
    """``messages`` with each recall note standing as its own user message. Written through, a note that serves
    the user message after it would be folded into that message, so the user's own item would not come back as
    it was read, and the file would hold one message fewer than ``compact`` counted."""
    return [
        m.model_copy(update={"metadata": {k: v for k, v in m.metadata.items() if k != "serves"}})
        if is_recall(m) and "serves" in m.metadata
        else m
        for m in messages
    ]


def _langchain(conversation: Conversation, rendered: list[Message], *, passthrough: bool) -> Any:
    objects = to_langchain(rendered, passthrough=passthrough)
    if conversation.flavor == "model_dump":
        items: Any = [m.model_dump() for m in objects]
    elif conversation.flavor == "dumpd":
        from langchain_core.load import dumpd

        items = [dumpd(m) for m in objects]
    else:
        from langchain_core.messages import messages_to_dict

        items = messages_to_dict(objects)
    return _body(conversation, "messages", items, fmt=OutFormat.LANGCHAIN)


def payload(conversation: Conversation, state: AgentState, out_format: OutFormat) -> tuple[Any, OutFormat]:
    """What to write for ``state`` (the managed view of ``conversation``) and the format it is in."""
    fmt = resolve(out_format, conversation)
    tools = conversation.tools
    if fmt in JSONL_FORMATS:
        assert conversation.transcript is not None  # resolve() checked
        module = claude_log if fmt is OutFormat.CLAUDE_CODE else rollout
        return module.write(conversation.transcript, state.context, state.context_summary), fmt
    if fmt is OutFormat.WINDOWKEEPER:
        data: Any = state.model_dump(mode="json", include={"context", "context_summary", "scratchpad"})
        if conversation.format != InputFormat.WINDOWKEEPER.value:
            _drop_sources(data["context"])
        if tools:
            data["tools"] = tools
        return data, fmt
    rendered = assemble(state, tools=tools).to_messages()
    # a message the strategy left unchanged goes back as the item it was read from, in the format it was read in;
    # in another format it is converted (as it would be without the source: no warnings for what it cannot carry)
    own = fmt is resolve(OutFormat.INPUT, conversation)
    if own:
        rendered = _notes_apart(rendered)
    reused = conversation.envelope is not None and conversation.format == fmt.value
    has_tools = bool(tools) and not (reused and "tools" in (conversation.envelope or {}))
    extra: dict[str, Any] = {"tools": tools} if has_tools and fmt is not OutFormat.GEMINI else {}
    if fmt is OutFormat.OPENAI:
        return _body(conversation, "messages", to_openai_chat(rendered, passthrough=own), fmt=fmt, **extra), fmt
    if fmt is OutFormat.RESPONSES:
        # a request that held its system prompt in ``instructions`` gets it (and the summary) back there
        held = isinstance((conversation.envelope or {}).get("instructions"), str) and reused
        instructions, items = to_responses_input(rendered, system="instructions" if held else "items", passthrough=own)
        return _body(conversation, "input", items, fmt=fmt, instructions=instructions, **extra), fmt
    if fmt is OutFormat.ANTHROPIC:
        system, turns = to_anthropic(rendered, passthrough=own)
        return _body(conversation, "messages", alternate(turns, "content"), fmt=fmt, system=system, **extra), fmt
    if fmt is OutFormat.GEMINI:
        system_instruction, contents = to_gemini(rendered, passthrough=own)
        merged = alternate(contents, "parts")
        return _body(conversation, "contents", merged, fmt=fmt, system_instruction=system_instruction), fmt
    return _langchain(conversation, rendered, passthrough=own), fmt


def encode(data: Any, fmt: OutFormat, container: str | None = None) -> bytes:
    """The bytes of a written file: a session log one event per line, JSON Lines as the input held them (one
    message, or the one conversation, per line), anything else one indented document."""
    if fmt in JSONL_FORMATS or (container == "messages-per-line" and isinstance(data, list)):
        lines = (json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":")) for value in data)
        return ("\n".join(lines) + "\n").encode("utf-8")
    if container is not None:
        return (json.dumps(data, ensure_ascii=False, allow_nan=False, separators=(",", ":")) + "\n").encode("utf-8")
    return (json.dumps(data, ensure_ascii=False, indent=1, allow_nan=False) + "\n").encode("utf-8")
