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

from ..llm.formats import (
    from_responses_input,
    to_anthropic,
    to_gemini,
    to_langchain,
    to_openai_chat,
    to_responses_input,
)
from ..llm.formats._source import SOURCE_KEY, source_record
from ..llm.formats.registry import get_format
from ..messages import Message
from ..prompt import (
    AssembledPrompt,
    assemble,
    join_sections,
    scratchpad_section,
    summary_section,
    system_message,
    system_message_text,
)
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


_SYSTEM_FIELDS = frozenset({"system", "instructions", "system_instruction", "systemInstruction"})
"""Request keys holding a system prompt: left out of a body when there is none to write."""


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
    envelope = conversation.envelope
    # no system prompt to write: its key goes, unless the file held it as null too
    return {k: v for k, v in body.items() if v is not None or k not in _SYSTEM_FIELDS or envelope.get(k, 0) is None}


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
    prompt = assemble(state, tools=tools)
    rendered = prompt.to_messages()
    # a message the strategy left unchanged goes back as the item it was read from, in the format it was read in;
    # in another format it is converted (as it would be without the source: no warnings for what it cannot carry)
    own = fmt is resolve(OutFormat.INPUT, conversation)
    reused = conversation.envelope is not None and conversation.format == fmt.value
    has_tools = bool(tools) and not (reused and "tools" in (conversation.envelope or {}))
    extra: dict[str, Any] = {"tools": tools} if has_tools and fmt is not OutFormat.GEMINI else {}
    # the formats holding the system prompt as messages of their list (Anthropic and Gemini have a field for it)
    lead = _with_own_system(state, prompt) if own and fmt in _SYSTEM_IN_LIST else None
    if own:
        rendered = _notes_apart(rendered if lead is None else lead)
    if fmt is OutFormat.OPENAI:
        return _body(conversation, "messages", to_openai_chat(rendered, passthrough=own), fmt=fmt, **extra), fmt
    if fmt is OutFormat.RESPONSES:
        # a request that held its system prompt in ``instructions`` gets it (and the summary) back there
        held = isinstance((conversation.envelope or {}).get("instructions"), str) and reused
        if held and lead is not None:
            instructions, items = _responses_held(rendered)
        else:
            mode: Any = "instructions" if held else "items"
            instructions, items = to_responses_input(rendered, system=mode, passthrough=own)
        if own and reused:
            items = _text_input(conversation, items)
        return _body(conversation, "input", items, fmt=fmt, instructions=instructions, **extra), fmt
    if fmt is OutFormat.ANTHROPIC:
        system, turns = to_anthropic(rendered, passthrough=own)
        if own:
            system = _own_system(conversation, fmt, prompt.system, system)
        return _body(conversation, "messages", alternate(turns, "content"), fmt=fmt, system=system, **extra), fmt
    if fmt is OutFormat.GEMINI:
        system_instruction, contents = to_gemini(rendered, passthrough=own)
        if own:
            system_instruction = _own_system(conversation, fmt, prompt.system, system_instruction)
        merged = alternate(contents, "parts")
        return _body(conversation, "contents", merged, fmt=fmt, **_gemini_system(conversation, system_instruction)), fmt
    return _langchain(conversation, rendered, passthrough=own), fmt


def _text_input(conversation: Conversation, items: list[Any]) -> Any:
    """The request's own ``input`` text when the items written are exactly what it was read as (a plain-text
    input holds one user message, which has no item of its own to pass through): else ``items``."""
    original = (conversation.envelope or {}).get("input")
    if isinstance(original, str) and items == to_responses_input(from_responses_input(original), passthrough=False)[1]:
        return original
    return items


def _with_own_system(state: AgentState, prompt: AssembledPrompt) -> list[Message] | None:
    """The view to write with the system text of ``prompt`` as the messages it was joined from: the file's own
    system messages where they were, each still the item it was read from (its id and every key), and the summary
    and scratchpad as one system message of windowkeeper's after the leading ones. Written as one new text
    instead, an unchanged system message came back with a new id (LangChain) or without its keys (a Chat
    message's ``name``). None when the view holds no system message, or its pieces do not make the text the
    budget counted."""
    view = [m for m in state.context if m.role != "system" or system_message_text(m)]
    lead = [m for m in view if m.role == "system"]
    if not lead:
        return None
    tail = join_sections([summary_section(prompt.summary), scratchpad_section(prompt.scratchpad)])
    if join_sections([*(system_message_text(m) for m in lead), tail]) != prompt.system:
        return None
    if not tail:
        return view
    start = next((i for i, m in enumerate(view) if m.role != "system"), len(view))
    return [*view[:start], system_message(tail), *view[start:]]


def _responses_held(rendered: list[Message]) -> tuple[str | None, list[Any]]:
    """A Responses request whose system prompt was ``instructions``: what was read from there (no item of its
    own) and the summary go back there, and a system item of ``input`` stays an item, as it came."""
    made = [m for m in rendered if m.role == "system" and source_record(m) is None]
    instructions = join_sections(system_message_text(m) for m in made)
    _none, items = to_responses_input([m for m in rendered if not any(m is x for x in made)], passthrough=True)
    return instructions, items


_SYSTEM_IN_LIST = frozenset({OutFormat.OPENAI, OutFormat.RESPONSES, OutFormat.LANGCHAIN})
_GEMINI_SYSTEM_KEYS = ("system_instruction", "systemInstruction")


def _gemini_place(conversation: Conversation) -> tuple[str | None, str]:
    """Where the Gemini request read held its system instruction, as the reader looks for it: ``(None, key)`` at
    the top (REST, either spelling), ``("config", key)`` in the SDK's ``config``."""
    envelope = conversation.envelope if conversation.format == OutFormat.GEMINI.value else None
    if envelope:
        for key in _GEMINI_SYSTEM_KEYS:
            if key in envelope:
                return None, key
        config = envelope.get("config")
        if isinstance(config, dict):
            for key in _GEMINI_SYSTEM_KEYS:
                if key in config:
                    return "config", key
    return None, "system_instruction"


def _gemini_system(conversation: Conversation, value: Any) -> dict[str, Any]:
    """The body keys that put ``value`` where the file held its system instruction. Added as
    ``system_instruction`` beside the file's own ``systemInstruction`` or ``config``, the request carried two,
    or keyword arguments the SDK's ``generate_content`` does not take."""
    container, key = _gemini_place(conversation)
    if container is None:
        return {key: value}
    config = dict((conversation.envelope or {})[container])
    if value is None:
        config.pop(key, None)
    else:
        config[key] = value
    return {container: config}


def _system_source(conversation: Conversation, fmt: OutFormat) -> Any:
    """The system value the file's request body held, as it came (None for a message list)."""
    envelope = conversation.envelope if conversation.format == fmt.value else None
    if not envelope:
        return None
    if fmt is OutFormat.ANTHROPIC:
        return envelope.get("system")
    container, key = _gemini_place(conversation)
    held = envelope.get(container) if container else envelope
    return held.get(key) if isinstance(held, dict) else None


def _own_system(conversation: Conversation, fmt: OutFormat, system: str | None, written: Any) -> Any:
    """The system value to write in a request body: the file's own (Anthropic text blocks with their
    ``cache_control``, a Gemini content with its keys, or plain text) with the summary after it, when the text is
    still the file's; else ``written``, the system text in the format's plain shape."""
    source = _system_source(conversation, fmt)
    if source is None:
        return written
    if isinstance(source, str):  # text stays text (the SDK's usual config.system_instruction), summary appended
        return system if fmt is OutFormat.GEMINI else written
    _items, value = get_format(fmt.value).write(system, [], system_source=source)
    return value


def encode(data: Any, fmt: OutFormat, container: str | None = None) -> bytes:
    """The bytes of a written file: a session log one event per line, JSON Lines as the input held them (one
    message, or the one conversation, per line), anything else one indented document."""
    if fmt in JSONL_FORMATS or (container == "messages-per-line" and isinstance(data, list)):
        lines = (json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":")) for value in data)
        return ("\n".join(lines) + "\n").encode("utf-8")
    if container is not None:
        return (json.dumps(data, ensure_ascii=False, allow_nan=False, separators=(",", ":")) + "\n").encode("utf-8")
    return (json.dumps(data, ensure_ascii=False, indent=1, allow_nan=False) + "\n").encode("utf-8")
