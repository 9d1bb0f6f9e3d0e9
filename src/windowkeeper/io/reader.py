"""One reader for conversation files, used by ``inspect``, ``compact``, ``simulate`` and the benchmarks.

A file holds one or more conversations in one of these shapes (detected, or forced with ``fmt``):

- ``windowkeeper``: our messages (a list, ``{"messages": [...]}`` or a saved ``AgentState`` with ``context``);
- ``openai``: an OpenAI Chat message list or request body (``{"model", "messages", "tools"}``; tools are counted;
  an Anthropic request read as one keeps its ``system`` as the leading system message, with a warning);
- ``responses``: an OpenAI Responses ``input`` item list or request body (``input``, ``instructions``, ``tools``);
- ``anthropic``: an Anthropic Messages request (``system`` optional) or message list with content blocks;
- ``gemini``: a Gemini ``contents`` list or request (``system_instruction``/``systemInstruction``, ``tools``);
- ``langchain``: LangChain messages as JSON (``messages_to_dict`` or ``dumpd``; needs ``langchain-core``);
- ``tau-bench``: a tau-bench results file, a list of ``{"task_id", "trial", "traj": [...]}`` records;
- ``swe-agent``: a SWE-agent ``.traj`` file, with function calling (``tool_calls``/``tool_call_ids``) or without;
- ``jsonl``: JSON Lines holding either one message per line or one conversation (any shape above) per line.

Conversion never stops at the first bad message: every problem is collected with its index and reported together
in a `ConversationFileError`.
"""

from __future__ import annotations

import ast
import json
import os
import shlex
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..errors import FormatError, MissingDependencyError
from ..llm.formats import (
    anthropic_message_to_messages,
    from_anthropic,
    from_gemini,
    from_langchain,
    from_responses_input,
    gemini_content_to_messages,
    openai_chat_message_to_message,
)
from ..llm.formats.registry import get_format
from ..messages import Message
from ..state import AgentState
from . import claude_log, rollout
from .source import (
    DEFAULT_MAX_BYTES,
    DEFAULT_TIMEOUT,
    STDIN,
    ConversationFileError,
    ParsedDocument,
    RawDocument,
    parse_document,
    read_text,
)
from .transcript import Transcript


class InputFormat(StrEnum):
    """The shapes a conversation file may have; ``auto`` detects it."""

    AUTO = "auto"
    WINDOWKEEPER = "windowkeeper"
    OPENAI = "openai"
    RESPONSES = "responses"
    ANTHROPIC = "anthropic"
    GEMINI = "gemini"
    LANGCHAIN = "langchain"
    TAU_BENCH = "tau-bench"
    SWE_AGENT = "swe-agent"
    CLAUDE_CODE = "claude-code"
    CODEX = "codex"
    JSONL = "jsonl"


@dataclass
class Conversation:
    """One conversation read from a file: its messages, the tool schemas it declares, and where it came from."""

    name: str
    format: str
    messages: list[Message]
    tools: list[dict[str, Any]] = field(default_factory=list)
    summary: str | None = None
    scratchpad: str | None = None
    envelope: dict[str, Any] | None = None
    """A request body's other keys (model, tools, max_tokens, ...) in file order; None for a bare message list."""
    messages_key: str | None = None
    """The key of ``envelope`` that held the messages (``messages``, ``input``, ``contents``)."""
    flavor: str | None = None
    """How LangChain messages were serialized: ``dict`` (messages_to_dict), ``dumpd`` or ``model_dump``."""
    wire_roles: list[str] | None = None
    """The roles of the file's own messages (Anthropic, Gemini), for the rules on turn order."""
    transcript: Transcript | None = None
    """For a session log: its events, so a compaction is written back as the same log."""
    container: str | None = None
    """How JSON Lines held it: ``messages-per-line`` or ``conversation-per-line``; None for a JSON document."""
    warnings: list[str] = field(default_factory=list)
    """What reading it in this format could not carry, or carried into another shape, one sentence each: a field
    the format has no place for is named here rather than lost without a word."""

    @property
    def skipped(self) -> dict[str, int]:
        """Events of a session log that are not conversation, by type."""
        return dict(sorted(self.transcript.skipped.items())) if self.transcript is not None else {}

    def state(self) -> AgentState:
        """The conversation as an `AgentState` (a saved state keeps its summary and scratchpad)."""
        return AgentState(context=list(self.messages), context_summary=self.summary, scratchpad=self.scratchpad)


_CONVERSION_ERRORS = (FormatError, ValidationError, RecursionError, ValueError, TypeError, KeyError, AttributeError)
"""What a converter may raise on malformed input; each becomes a listed problem, never a traceback."""

_CONVERSATION_KEYS = ("messages", "contents", "input", "history", "trajectory", "traj", "context")
_RESPONSES_ITEM_TYPES = {
    "message",
    "function_call",
    "function_call_output",
    "reasoning",
    "custom_tool_call",
    "custom_tool_call_output",
    "item_reference",
}
_RESPONSES_PART_TYPES = {"input_text", "output_text", "input_image", "input_file", "input_audio", "refusal"}
_ANTHROPIC_BLOCK_TYPES = {"tool_use", "tool_result", "thinking", "redacted_thinking", "document", "server_tool_use"}
_LANGCHAIN_TYPES = {"human", "ai", "system", "tool", "chat", "function", "AIMessageChunk", "HumanMessageChunk"}


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    return "an object"


# -- detection --------------------------------------------------------------------------------------------------


def _one_of(value: Any, options: set[str]) -> bool:
    """``value in options`` for any JSON value (a list or object is unhashable, and never one of them)."""
    return isinstance(value, str) and value in options


def _blocks(message: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    content = message.get("content")
    return [b for b in content if isinstance(b, Mapping)] if isinstance(content, list) else []


def _is_ours(item: Any) -> bool:
    return isinstance(item, Mapping) and isinstance(item.get("content"), list) and "message_id" in item


def _is_model_dump(item: Mapping[str, Any]) -> bool:
    """A pydantic dump of a LangChain message (``m.model_dump()``): its type beside its fields, no ``data``."""
    return (
        _one_of(item.get("type"), _LANGCHAIN_TYPES)
        and "content" in item
        and ("additional_kwargs" in item or "response_metadata" in item)
    )


def _message_list_format(items: Sequence[Any]) -> str | None:
    """The format of a list of messages, from the first distinctive message; None when nothing identifies it."""
    dicts = [item for item in items if isinstance(item, Mapping)]
    if not dicts:
        return None
    if claude_log.looks_like(items):
        return InputFormat.CLAUDE_CODE.value
    if rollout.looks_like(items):
        return InputFormat.CODEX.value
    first = dicts[0]
    if "traj" in first:
        return InputFormat.TAU_BENCH.value
    if _is_ours(first):
        return InputFormat.WINDOWKEEPER.value
    if ("lc" in first and "kwargs" in first) or (_one_of(first.get("type"), _LANGCHAIN_TYPES) and "data" in first):
        return InputFormat.LANGCHAIN.value
    if _is_model_dump(first):
        return InputFormat.LANGCHAIN.value
    if "parts" in first or first.get("role") == "model":
        return InputFormat.GEMINI.value
    for item in dicts:
        if _one_of(item.get("type"), _RESPONSES_ITEM_TYPES):
            return InputFormat.RESPONSES.value
        blocks = _blocks(item)
        if any(_one_of(b.get("type"), _RESPONSES_PART_TYPES) for b in blocks):
            return InputFormat.RESPONSES.value
        if (
            _one_of(item.get("role"), {"tool", "function", "developer"})
            or "tool_calls" in item
            or "tool_call_id" in item
        ):
            return InputFormat.OPENAI.value
        if any(_one_of(b.get("type"), _ANTHROPIC_BLOCK_TYPES) or "source" in b for b in blocks):
            return InputFormat.ANTHROPIC.value
        if any(_one_of(b.get("type"), {"image_url", "input_audio", "file"}) for b in blocks):
            return InputFormat.OPENAI.value
    if any(item.get("role") == "system" for item in dicts):
        return InputFormat.OPENAI.value
    if all("role" in item for item in dicts):
        return InputFormat.OPENAI.value  # plain text turns read the same in OpenAI and Anthropic shape
    return None


_RESPONSE_SHAPES: tuple[tuple[str, str], ...] = (
    ("choices", "an OpenAI Chat completion (a reply, not a request); its 'choices[].message' go in 'messages'"),
    ("candidates", "a Gemini reply, not a request; its 'candidates[].content' go in 'contents'"),
    ("output", "a Responses API response; its 'output' items go in a request's 'input'"),
    ("stop_reason", "an Anthropic reply message; put it in a request's 'messages' list"),
    ("payload", "an event of a rollout log (JSON Lines, one event per line); pass the whole file"),
    ("leafUuid", "an event of a coding agent's session log (JSON Lines); pass the whole file"),
)


def looks_like(data: Any) -> str | None:
    """What a value that is not a readable conversation resembles, for the error message; None when unknown."""
    first = data
    if isinstance(data, list):
        first = next((item for item in data if isinstance(item, Mapping)), None)
        if first is None:
            return None
    if not isinstance(first, Mapping):
        return None
    for key, shape in _RESPONSE_SHAPES:
        if key in first:
            return shape
    keys = ", ".join(repr(k) for k in list(first)[:6])
    where = "a list of objects" if isinstance(data, list) else "an object"
    return f"{where} with keys {keys}" if keys else None


def _longmemeval(source: str | None) -> str:
    """Why a LongMemEval question is not read, and the jq command taking one chat out of it, ready to paste (the
    path quoted for the shell; standard input piped; ``FILE`` only when the caller named no source).

    Not read as a conversation: a question holds dozens of separate chats and its own fields, so neither a count
    of them together nor a compaction written back in that shape is something a user of one agent's history
    wants."""
    if source == STDIN:
        command = "pipe it through jq '.haystack_sessions[0]' > session.json"
    else:
        command = f"jq '.haystack_sessions[0]' {shlex.quote(source) if source else 'FILE'} > session.json"
    return (
        "a LongMemEval question is no conversation (its chats are under 'haystack_sessions') and no --format reads "
        f"it; extract one chat to inspect it: {command}"
    )


def detect_format(data: Any, source: str | None = None) -> str:
    """The `InputFormat` value of parsed JSON, or a `ConversationFileError` saying why none fits (a hint that
    names a file names ``source``)."""
    if isinstance(data, list):
        if not data:
            raise ConversationFileError("an empty list holds no messages")
        if not any(isinstance(item, Mapping) for item in data):
            raise ConversationFileError(f"top level is a list of {_kind(data[0])[2:]}s; expected message objects")
        found = _message_list_format(data)
        if found is None:
            raise ConversationFileError(
                "a list of objects that are not messages (no 'role', 'parts', 'type' or 'traj'); pass --format"
            )
        return found
    if not isinstance(data, Mapping):
        raise ConversationFileError(f"top level is {_kind(data)}; expected a conversation object or message list")
    if "context" in data or (
        "messages" in data and isinstance(data["messages"], list) and data["messages"] and _is_ours(data["messages"][0])
    ):
        return InputFormat.WINDOWKEEPER.value
    if "history" in data or ("trajectory" in data and ("info" in data or "environment" in data)):
        return InputFormat.SWE_AGENT.value
    if "traj" in data:
        return InputFormat.TAU_BENCH.value
    if "contents" in data:
        return InputFormat.GEMINI.value
    if "input" in data:
        return InputFormat.RESPONSES.value
    if "messages" in data:
        tools = data.get("tools")
        if "system" in data or "anthropic_version" in data:
            return InputFormat.ANTHROPIC.value
        if isinstance(tools, list) and any(isinstance(t, Mapping) and "input_schema" in t for t in tools):
            return InputFormat.ANTHROPIC.value
        messages = data["messages"]
        inner = _message_list_format(messages) if isinstance(messages, list) else None
        if inner in (InputFormat.ANTHROPIC.value, InputFormat.LANGCHAIN.value, InputFormat.RESPONSES.value):
            return inner
        return InputFormat.OPENAI.value
    if isinstance(data.get("haystack_sessions"), list):
        raise ConversationFileError(_longmemeval(source), key="haystack_sessions")
    # every reader of an object takes its messages from one of these keys, so forcing a format cannot help
    keys = ", ".join(repr(k) for k in list(data)[:8]) or "none"
    raise ConversationFileError(
        f"an object with keys {keys} is not a conversation and no --format reads it; expected 'messages', "
        "'contents', 'input', 'history', 'traj' or 'context'"
    )


# -- conversion with every problem collected ------------------------------------------------------------------


def _problem_text(exc: BaseException, index: int | None, what: str = "message") -> str:
    if isinstance(exc, ValidationError):
        errors = exc.errors()
        detail = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'value'}: {e['msg']}" for e in errors[:3])
        text = f"{detail}{' (and more)' if len(errors) > 3 else ''}"
    elif isinstance(exc, RecursionError):
        text = "nested too deeply"
    elif isinstance(exc, KeyError):
        text = f"missing key {exc}"
    else:
        text = str(exc) or type(exc).__name__
    if isinstance(exc, FormatError) and exc.index is not None:
        for prefix in (f"message {exc.index}: ", f"message {exc.index}, "):
            text = text.removeprefix(prefix)
        index = exc.index if index is None else index
    return f"{what} {index}: {text}" if index is not None else text


def _convert(
    source: str,
    items: Sequence[Any],
    whole: Callable[[], list[Message]],
    one: Callable[[Any, int], object],
    *,
    what: str = "message",
) -> list[Message]:
    """``whole()``; if it fails, convert each item alone to list every bad one with its index."""
    try:
        return whole()
    except MissingDependencyError:
        raise
    except _CONVERSION_ERRORS as first:
        problems: list[str] = []
        for index, item in enumerate(items):
            try:
                one(item, index)
            except MissingDependencyError:
                raise
            except _CONVERSION_ERRORS as exc:
                problems.append(_problem_text(exc, index, what))
        if not problems:
            problems.append(_problem_text(first, None))
        raise ConversationFileError(_summary(source, problems), problems=problems) from first


def _summary(source: str, problems: list[str]) -> str:
    """The one-line message of an error; several problems are only counted here and listed by the caller."""
    if len(problems) == 1:
        return f"{source}: {problems[0]}"
    return f"{source}: {len(problems)} problems"


def _require_list(source: str, value: Any, key: str) -> list[Any]:
    if value is None:  # absent (or null): "is null" read as if the file had the key
        raise ConversationFileError(f"{source}: no '{key}' list", key=key)
    if not isinstance(value, list):
        raise ConversationFileError(f"{source}: '{key}' is {_kind(value)}; expected a list", key=key)
    return value


def _tools(source: str, data: Any) -> list[dict[str, Any]]:
    if not isinstance(data, Mapping) or data.get("tools") is None:
        return []
    tools = _require_list(source, data["tools"], "tools")
    bad = [i for i, tool in enumerate(tools) if not isinstance(tool, Mapping)]
    if bad:
        problems = [f"tools[{i}] is {_kind(tools[i])}; expected a tool schema object" for i in bad]
        raise ConversationFileError(_summary(source, problems), problems=problems, key="tools")
    return [dict(tool) for tool in tools]


def _windowkeeper(source: str, name: str, data: Any) -> Conversation:
    items = data.get("context", data.get("messages")) if isinstance(data, Mapping) else data
    items = _require_list(source, items, "messages")
    messages: list[Message] = []
    problems: list[str] = []
    for index, item in enumerate(items):
        try:
            messages.append(Message.model_validate(item))
        except _CONVERSION_ERRORS as exc:
            problems.append(_problem_text(exc, index))
    if problems:
        raise ConversationFileError(_summary(source, problems), problems=problems)
    conversation = Conversation(name, InputFormat.WINDOWKEEPER.value, messages, tools=_tools(source, data))
    if isinstance(data, Mapping):
        for key in ("context_summary", "scratchpad"):
            value = data.get(key)
            if value is not None and not isinstance(value, str):
                raise ConversationFileError(f"{source}: '{key}' is {_kind(value)}; expected a string", key=key)
        conversation.summary = data.get("context_summary")
        conversation.scratchpad = data.get("scratchpad")
    return conversation


def _enveloped(conversation: Conversation, data: Any, key: str) -> Conversation:
    """Remember a request body's other keys, so a compaction writes the same body with new messages."""
    if isinstance(data, Mapping):
        conversation.envelope = dict(data)
        conversation.messages_key = key
    return conversation


_ANTHROPIC_SETTINGS = ("stop_sequences", "top_k", "thinking", "anthropic_version", "anthropic_beta", "mcp_servers")
"""Anthropic request keys OpenAI Chat has no field for; named when an Anthropic request is read as OpenAI."""


def _openai(source: str, name: str, data: Any) -> Conversation:
    items = _require_list(source, data.get("messages") if isinstance(data, Mapping) else data, "messages")
    messages = _convert(source, items, lambda: _kept("openai_chat", [], items), openai_chat_message_to_message)
    conversation = Conversation(name, InputFormat.OPENAI.value, messages, tools=_tools(source, data))
    if isinstance(data, Mapping) and "system" in data:
        conversation = _foreign_system(source, conversation, data)
        data = {k: v for k, v in data.items() if k != "system"}  # now a message: written back as one
    return _enveloped(conversation, data, "messages")


def _foreign_system(source: str, conversation: Conversation, data: Mapping[str, Any]) -> Conversation:
    """An Anthropic request read as OpenAI Chat (``--format openai``): OpenAI keeps the system prompt among the
    messages, so the top-level ``system`` becomes the leading system message (counted, and written back where an
    OpenAI body has it), and each field the conversion has no place for is named in a warning."""
    system = data["system"]
    dropped: list[str] = []
    if isinstance(system, list):
        for i, block in enumerate(system):
            if not (isinstance(block, Mapping) and block.get("type") == "text" and isinstance(block.get("text"), str)):
                raise ConversationFileError(
                    f"{source}: system[{i}] is {_kind(block)}, not a text block; an Anthropic system prompt is a "
                    'string or a list of {"type": "text", "text": ...} blocks',
                    key="system",
                )
            dropped.extend(f"system[{i}].{key}" for key in block if key not in ("type", "text"))
    elif system is not None and not isinstance(system, str):
        raise ConversationFileError(
            f"{source}: 'system' is {_kind(system)}; an Anthropic system prompt is a string or a list of text blocks",
            key="system",
        )
    head = from_anthropic(system, []) if system else []
    conversation.messages[:0] = head
    if head:
        conversation.warnings.append(
            f"{source}: 'system' is an Anthropic field, not an OpenAI Chat one; read as the leading system message "
            "(the file looks like an Anthropic request: --format anthropic reads it as one)"
        )
    if dropped:
        conversation.warnings.append(
            f"{source}: {', '.join(dropped)}: an OpenAI Chat system message has no such field; not carried"
        )
    settings = [key for key in _ANTHROPIC_SETTINGS if key in data]
    if settings:
        conversation.warnings.append(
            f"{source}: {', '.join(settings)}: Anthropic request settings OpenAI Chat has no field for; not read "
            "(a compacted body keeps them as they were)"
        )
    return conversation


def _kept(fmt: str, head: list[Message], items: Sequence[Any]) -> list[Message]:
    """``head`` (the system prompt read from a request's own field) then ``items`` read with each message's source
    item kept on it, so that `compact` writes a message the strategy left unchanged back byte for byte (a Chat tool
    message's ``name``, a Responses item's ``id``, Anthropic ``cache_control``) instead of in our own shape. The
    ids are the ones the ``from_*`` converter gives (the chain continues from ``head``)."""
    previous = str(head[-1].message_id) if head else None
    return _undated([*head, *get_format(fmt).read(items, previous=previous)])


def _undated(messages: list[Message]) -> list[Message]:
    """``messages`` without the time a converter stamps on each message it makes: these formats hold no time, so
    it would be the moment the file was read, which a recall note then quotes as when a passage was said (and
    two runs on one file would write different files)."""
    for message in messages:
        message.timestamp = None
    return messages


def _roles(items: Sequence[Any], default: str) -> list[str]:
    return [str(m.get("role", default)) if isinstance(m, Mapping) else default for m in items]


def _anthropic(source: str, name: str, data: Any) -> Conversation:
    system = data.get("system") if isinstance(data, Mapping) else None
    items = _require_list(source, data.get("messages") if isinstance(data, Mapping) else data, "messages")
    messages = _convert(
        source, items, lambda: _kept("anthropic", from_anthropic(system, []), items), anthropic_message_to_messages
    )
    conversation = Conversation(name, InputFormat.ANTHROPIC.value, messages, tools=_tools(source, data))
    conversation.wire_roles = _roles(items, "user")
    return _enveloped(conversation, data, "messages")


def _gemini(source: str, name: str, data: Any) -> Conversation:
    system: Any = None
    if isinstance(data, Mapping):
        system = data.get("system_instruction", data.get("systemInstruction"))
        config = data.get("config")
        if system is None and isinstance(config, Mapping):
            system = config.get("system_instruction", config.get("systemInstruction"))
    items = _require_list(source, data.get("contents") if isinstance(data, Mapping) else data, "contents")
    messages = _convert(
        source, items, lambda: _kept("gemini", from_gemini(system, []), items), gemini_content_to_messages
    )
    conversation = Conversation(name, InputFormat.GEMINI.value, messages, tools=_tools(source, data))
    conversation.wire_roles = _roles(items, "user")
    return _enveloped(conversation, data, "contents")


def _responses_one(item: Any, index: int) -> object:
    try:
        return from_responses_input([item], keep_source=False)
    except FormatError as exc:
        raise FormatError(_problem_text(exc, None).removeprefix("message 0: "), index=index) from exc


def _responses(source: str, name: str, data: Any) -> Conversation:
    instructions: Any = None
    items: Any = data
    if isinstance(data, Mapping):
        instructions = data.get("instructions")
        items = data.get("input")
        if instructions is not None and not isinstance(instructions, str):
            raise ConversationFileError(f"{source}: 'instructions' is {_kind(instructions)}; expected a string")
    if isinstance(items, str):
        messages = _undated(from_responses_input(items, instructions))
    else:
        items = _require_list(source, items, "input")
        head = from_responses_input([], instructions)
        messages = _convert(source, items, lambda: _kept("openai_responses", head, items), _responses_one)
    conversation = Conversation(name, InputFormat.RESPONSES.value, messages, tools=_tools(source, data))
    return _enveloped(conversation, data, "input")


def _load_serialized(load: Callable[..., Any], item: dict[str, Any]) -> Any:
    """``langchain_core.load.load`` restricted to message classes: the file is untrusted input."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r".*\bis in beta\b")  # load() is marked beta; we pin its use
        try:
            return load(item, allowed_objects="messages")
        except TypeError as exc:
            if "allowed_objects" not in str(exc):
                raise
            return load(item)  # a langchain-core without the restriction; it still only builds known classes


def _langchain_objects(items: Sequence[Any]) -> list[Any]:
    try:
        from langchain_core.load import load
        from langchain_core.messages import messages_from_dict
    except ImportError as exc:
        raise MissingDependencyError("langchain-core", "langchain") from exc
    out: list[Any] = []
    for index, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise FormatError(f"is {_kind(item)}; expected a LangChain message object", index=index)
        if "lc" in item:
            out.append(_load_serialized(load, dict(item)))
        elif _is_model_dump(item):
            out.extend(messages_from_dict([{"type": item["type"], "data": dict(item)}]))
        else:
            out.extend(messages_from_dict([dict(item)]))
    return out


def _langchain(source: str, name: str, data: Any) -> Conversation:
    items = _require_list(source, data.get("messages") if isinstance(data, Mapping) else data, "messages")

    def one(item: Any, index: int) -> object:
        try:
            return from_langchain(_langchain_objects([item]), keep_source=False)
        except FormatError as exc:
            raise FormatError(_problem_text(exc, None).removeprefix("message 0: "), index=index) from exc

    messages = _convert(source, items, lambda: _kept("langchain", [], _langchain_objects(items)), one)
    conversation = Conversation(name, InputFormat.LANGCHAIN.value, messages, tools=_tools(source, data))
    first = next((item for item in items if isinstance(item, Mapping)), {})
    conversation.flavor = "dumpd" if "lc" in first else "model_dump" if _is_model_dump(first) else "dict"
    return _enveloped(conversation, data, "messages")


def _tau_bench(source: str, name: str, data: Any) -> list[Conversation]:
    records = data if isinstance(data, list) else [data]
    out: list[Conversation] = []
    problems: list[str] = []
    for i, record in enumerate(records):
        if not isinstance(record, Mapping) or not isinstance(record.get("traj"), list):
            problems.append(f"trajectory {i}: expected an object with a 'traj' message list")
            continue
        label = f"{name}#{record.get('task_id', i)}.{record.get('trial', 0)}"
        try:
            out.append(_openai(f"{source} trajectory {i}", label, record["traj"]))
        except ConversationFileError as exc:
            problems.extend(f"trajectory {i}: {p}" for p in exc.problems)
    if problems:
        raise ConversationFileError(_summary(source, problems), problems=problems)
    for conversation in out:
        conversation.format = InputFormat.TAU_BENCH.value
    return out


def _swe_tool_list(value: Any) -> Any:
    """SWE-agent may store ``tool_calls``/``tool_call_ids`` as Python-literal strings; parse those safely."""
    if isinstance(value, str):
        try:
            return ast.literal_eval(value)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return value
    return value


def _swe_message(raw: Mapping[str, Any]) -> dict[str, Any]:
    """A SWE-agent history entry as an OpenAI chat message (bookkeeping keys such as 'agent' dropped)."""
    msg: dict[str, Any] = {k: raw[k] for k in ("role", "content", "tool_call_id", "name") if k in raw}
    calls = _swe_tool_list(raw.get("tool_calls"))
    if calls:
        msg["tool_calls"] = calls
    ids = _swe_tool_list(raw.get("tool_call_ids"))
    if msg.get("role") == "tool" and not msg.get("tool_call_id") and isinstance(ids, list) and ids:
        msg["tool_call_id"] = ids[0]
    if msg.get("role") not in ("system", "user", "assistant", "tool"):
        msg["role"] = "user"
    content = msg.get("content")
    if isinstance(content, list):
        msg["content"] = "".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
    elif content is None and msg["role"] != "assistant":
        msg["content"] = ""
    return msg


def _swe_agent(source: str, name: str, data: Any) -> Conversation:
    if not isinstance(data, Mapping):
        raise ConversationFileError(f"{source}: a SWE-agent trajectory is an object with 'history' or 'trajectory'")
    history = data.get("history")
    if isinstance(history, list) and history:
        bad = [i for i, m in enumerate(history) if not isinstance(m, Mapping)]
        if bad:
            problems = [f"history {i}: is {_kind(history[i])}; expected a message object" for i in bad]
            raise ConversationFileError(_summary(source, problems), problems=problems)
        messages = [_swe_message(m) for m in history]
    else:
        steps = _require_list(source, data.get("trajectory"), "trajectory")
        messages = []
        for step in steps:
            if not isinstance(step, Mapping):
                continue
            reply = step.get("response") or "\n".join(str(step.get(k) or "") for k in ("thought", "action"))
            messages.append({"role": "assistant", "content": str(reply)})
            messages.append({"role": "user", "content": str(step.get("observation") or "")})
    conversation = _openai(source, name, messages)
    conversation.format = InputFormat.SWE_AGENT.value
    return conversation


def _session_log(source: str, name: str, data: Any, lines: Sequence[int] | None, fmt: str) -> Conversation:
    """A coding agent's session log or a rollout: each event with its line number, problems listed by line."""
    events = _require_list(source, data, "events")
    numbers = list(lines) if lines is not None and len(lines) == len(events) else list(range(1, len(events) + 1))
    module = claude_log if fmt == InputFormat.CLAUDE_CODE.value else rollout
    messages, transcript, problems = module.read(events, numbers)
    if problems:
        raise ConversationFileError(_summary(source, problems), problems=problems)
    if not messages:
        # an event without a 'type' is counted under str(None)
        kinds = ", ".join(
            f"{'no type' if k in ('None', None) else k} x{n}" for k, n in transcript.skipped.most_common(5)
        )
        raise ConversationFileError(f"{source}: a {fmt} log without conversation events (found {kinds or 'none'})")
    return Conversation(name, fmt, messages, transcript=transcript)


_READERS: dict[str, Callable[[str, str, Any], Conversation]] = {
    InputFormat.WINDOWKEEPER.value: _windowkeeper,
    InputFormat.OPENAI.value: _openai,
    InputFormat.RESPONSES.value: _responses,
    InputFormat.ANTHROPIC.value: _anthropic,
    InputFormat.GEMINI.value: _gemini,
    InputFormat.LANGCHAIN.value: _langchain,
    InputFormat.SWE_AGENT.value: _swe_agent,
}


_NO_SOURCE = "<data>"
"""The source of parsed JSON handed over without naming where it came from."""


def parse_conversations(
    data: Any, *, fmt: str = "auto", source: str = _NO_SOURCE, lines: Sequence[int] | None = None
) -> list[Conversation]:
    """Conversations from parsed JSON in format ``fmt`` (``auto`` detects it); ``lines`` are the file's line
    numbers of a JSON Lines document's values, for problems reported by line."""
    fmt = InputFormat(fmt).value if fmt in {f.value for f in InputFormat} else _unknown(fmt)
    name = Path(source).stem or source
    if fmt == InputFormat.AUTO.value:
        try:
            fmt = detect_format(data, None if source == _NO_SOURCE else source)
        except ConversationFileError as exc:
            shape = looks_like(data) if exc.key != "haystack_sessions" else None  # it was recognized
            if shape is not None and shape.rpartition(" with keys ")[2] in str(exc):
                shape = None  # the error already lists the keys: the generic shape would only repeat them
            raise ConversationFileError(f"{source}: {exc}{f'; it looks like {shape}' if shape else ''}") from exc
        try:
            return _read_as(data, fmt, source, name, lines)
        except ConversationFileError as exc:
            # name the guess, so a wrong one is seen as such and overridden
            raise _named(exc, source, f"{source} (read as {fmt}, detected; --format picks another): ") from exc
    return _read_as(data, fmt, source, name, lines)


def _named(exc: ConversationFileError, source: str, how: str) -> ConversationFileError:
    """``exc`` with its leading ``source: `` replaced by ``how`` (which says how the file was read)."""
    message = str(exc)
    message = how + (message.removeprefix(f"{source}: ") if message.startswith(f"{source}: ") else message)
    problems = exc.problems if len(exc.problems) > 1 else [message]
    return ConversationFileError(message, index=exc.index, key=exc.key, problems=problems)


def forced_hint(source: str, fmt: str, detected: str | None) -> str | None:
    """How a file read in a format the user forced is named when that failed and detection finds another (a
    wrong reader fails on what it misses, 'contents' absent or no 'role' on any message, which says nothing of
    the file being fine in its own format); None when detection agrees or finds nothing."""
    if detected is None or detected == fmt or fmt in (InputFormat.AUTO.value, InputFormat.JSONL.value):
        return None
    return f"{source} (read as {fmt}, forced; it looks like {detected}: pass --format {detected} or drop --format): "


def _detected(doc: ParsedDocument) -> str | None:
    """The format detection finds in a parsed document (a one-line document: in its one value), or None."""
    data: Any = doc.data if doc.lines is None else doc.lines
    if doc.lines is not None and len(doc.lines) == 1 and _is_conversation(doc.lines[0]):
        data = doc.lines[0]
    try:
        return detect_format(data)
    except ConversationFileError:
        return None


def _read_as(data: Any, fmt: str, source: str, name: str, lines: Sequence[int] | None) -> list[Conversation]:
    """``data`` read in ``fmt``, a concrete format."""
    if fmt == InputFormat.JSONL.value:
        lines = data if isinstance(data, list) else [data]
        return _from_lines(ParsedDocument(source, lines, lines=lines), InputFormat.AUTO.value)
    if fmt == InputFormat.TAU_BENCH.value:
        return _tau_bench(source, name, data)
    if fmt in (InputFormat.CLAUDE_CODE.value, InputFormat.CODEX.value):
        return [_session_log(source, name, data, lines, fmt)]
    return [_READERS[fmt](source, name, data)]


def _unknown(fmt: str) -> str:
    raise ConversationFileError(f"unknown format {fmt!r}; use one of {', '.join(f.value for f in InputFormat)}")


def _is_conversation(value: Any) -> bool:
    return isinstance(value, list) or (isinstance(value, Mapping) and any(k in value for k in _CONVERSATION_KEYS))


def _from_lines(doc: ParsedDocument, fmt: str) -> list[Conversation]:
    lines = doc.lines or []
    if not lines:
        raise ConversationFileError(f"{doc.source}: no JSON lines")
    if all(_is_conversation(v) for v in lines):
        out: list[Conversation] = []
        problems: list[str] = []
        stem = Path(doc.source).stem or doc.source
        for number, value in enumerate(lines, start=1):
            try:
                for conversation in parse_conversations(value, fmt=fmt, source=f"{doc.source}:{number}"):
                    conversation.name = f"{stem}:{number}" if conversation.name.startswith(stem) else conversation.name
                    conversation.container = "conversation-per-line"
                    out.append(conversation)
            except ConversationFileError as exc:
                problems.extend(f"line {number}: {p.removeprefix(f'{doc.source}:{number}: ')}" for p in exc.problems)
        if problems:
            raise ConversationFileError(_summary(doc.source, problems), problems=problems)
        return out
    if any(_is_conversation(v) for v in lines):
        raise ConversationFileError(
            f"{doc.source}: JSON Lines mix messages and whole conversations; use one message or one conversation "
            "per line"
        )
    found = parse_conversations(lines, fmt=fmt, source=doc.source, lines=doc.numbers)
    for conversation in found:
        if conversation.transcript is None:
            conversation.container = "messages-per-line"
    return found


def read_conversations(
    path: str | os.PathLike[str],
    *,
    fmt: str = "auto",
    max_bytes: int = DEFAULT_MAX_BYTES,
    timeout: float = DEFAULT_TIMEOUT,
) -> list[Conversation]:
    """Every conversation in the file at ``path`` (``"-"`` reads standard input); a pipe or device that sends
    nothing for ``timeout`` seconds is an error."""
    if fmt not in {f.value for f in InputFormat}:
        _unknown(fmt)
    return parse_text(read_text(path, max_bytes=max_bytes, timeout=timeout), fmt)


_LINE_FORMATS = frozenset({InputFormat.JSONL.value, InputFormat.CLAUDE_CODE.value, InputFormat.CODEX.value})
"""Formats that are always JSON Lines, whatever the file's name."""


def parse_text(raw: RawDocument, fmt: str = "auto") -> list[Conversation]:
    """Every conversation in the text of one input."""
    doc = parse_document(raw, jsonl=True if fmt in _LINE_FORMATS else None)
    try:
        if doc.lines is not None:
            return _from_lines(doc, InputFormat.AUTO.value if fmt == InputFormat.JSONL.value else fmt)
        return parse_conversations(doc.data, fmt=fmt, source=doc.source)
    except ConversationFileError as exc:
        how = forced_hint(doc.source, fmt, _detected(doc)) if fmt in {f.value for f in InputFormat} else None
        if how is None:
            raise
        raise _named(exc, doc.source, how) from exc


def read_conversation(
    path: str | os.PathLike[str],
    *,
    fmt: str = "auto",
    index: int | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    timeout: float = DEFAULT_TIMEOUT,
) -> Conversation:
    """The one conversation in ``path``, or the ``index``-th when the file holds several."""
    conversations = read_conversations(path, fmt=fmt, max_bytes=max_bytes, timeout=timeout)
    if index is None:
        if len(conversations) != 1:
            raise ConversationFileError(
                f"{os.fspath(path)} holds {len(conversations)} conversations; choose one with --index "
                f"0..{len(conversations) - 1}"
            )
        return conversations[0]
    if not 0 <= index < len(conversations):
        raise ConversationFileError(index_out_of_range(index, os.fspath(path), len(conversations)))
    return conversations[index]


CONVERSATION_SUFFIXES = (".json", ".jsonl", ".ndjson", ".traj")
"""The files of a folder that are read as conversations."""


def index_out_of_range(index: int, source: str, count: int) -> str:
    """The error of an ``--index`` past the file's conversations, with the range that would work."""
    valid = "use 0" if count == 1 else f"use 0 to {count - 1}"
    return f"--index {index} is out of range: {source} holds {count} conversation(s); {valid}"


def read_folder(
    path: str | os.PathLike[str],
    *,
    fmt: str = "auto",
    limit: int | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    timeout: float = DEFAULT_TIMEOUT,
) -> list[Conversation]:
    """The conversations of every conversation file in the folder ``path`` (sorted by name), at most ``limit``;
    a file that cannot be read is an error listing every such file, each with its own problems."""
    files = sorted(f for f in Path(path).iterdir() if f.suffix.lower() in CONVERSATION_SUFFIXES and f.is_file())
    if not files:
        raise ConversationFileError(
            f"{os.fspath(path)}: a folder with no conversation files ({', '.join(CONVERSATION_SUFFIXES)})"
        )
    out: list[Conversation] = []
    problems: list[str] = []
    failed: list[tuple[Path, ConversationFileError]] = []
    for f in files:
        try:
            found = read_conversations(f, fmt=fmt, max_bytes=max_bytes, timeout=timeout)
        except ConversationFileError as exc:
            failed.append((f, exc))
            problems.extend(p if p.startswith(str(f)) else f"{f}: {p}" for p in exc.problems)
            continue
        for conversation in found:
            conversation.name = f"{f.name}" if len(found) == 1 else f"{f.name}#{conversation.name}"
        out.extend(found)
        if limit is not None and len(out) >= limit:
            break
    if len(failed) > FOLDER_FAILURES_LISTED:
        raise ConversationFileError(_folder_summary(os.fspath(path), failed, len(files)) + FOLDER_FIX)
    if problems:
        raise ConversationFileError(_summary(os.fspath(path), problems) + FOLDER_FIX, problems=problems)
    return out[:limit] if limit is not None else out


FOLDER_FIX = "; every conversation file of a folder is read: fix the file or move it out, or pass one file"
"""What to do about a folder's unreadable file (the others are not read past it)."""


FOLDER_FAILURES_LISTED = 3
"""Unreadable files of a folder listed one per line; past this many they are one summary line, since a folder of
files in a shape no format reads (500 LongMemEval questions) would print hundreds of lines saying the same."""


def _folder_summary(folder: str, failed: Sequence[tuple[Path, ConversationFileError]], total: int) -> str:
    """One line for many unreadable files: how many, the first names and the first file's reason."""
    names = ", ".join(f.name for f, _ in failed[:FOLDER_FAILURES_LISTED])
    more = len(failed) - FOLDER_FAILURES_LISTED
    first, exc = failed[0]
    reason = str(exc).removeprefix(str(first)).removeprefix(": ")
    head = f"{folder}: {len(failed)} of {total} files could not be read ({names} and {more} more)"
    return f"{head}; {first.name}: {reason}"


def read_collection(
    path: str | os.PathLike[str],
    *,
    fmt: str = "auto",
    limit: int | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    timeout: float = DEFAULT_TIMEOUT,
) -> list[Conversation]:
    """Conversations from a file, or from every conversation file in a folder (`read_folder`), at most
    ``limit`` of them; ``fmt`` and ``timeout`` as for `read_conversations`."""
    if os.fspath(path) != "-" and Path(path).is_dir():
        return read_folder(path, fmt=fmt, limit=limit, max_bytes=max_bytes, timeout=timeout)
    found = read_conversations(path, fmt=fmt, max_bytes=max_bytes, timeout=timeout)
    return found[:limit] if limit is not None else found


def dumps(value: Any) -> str:
    """JSON text for a document the CLI writes (UTF-8, no NaN: strict parsers must accept it)."""
    return json.dumps(value, ensure_ascii=False, indent=1, allow_nan=False)
