"""The wire protocols the gateway manages (OpenAI Chat Completions and Responses, Anthropic Messages, Gemini
``generateContent``): where the list, the system text and the tools live, how usage is
reported, how a tool call looks and how the conversation continues after one.

Everything protocol-specific sits here so the request path (`app`), the streaming relay (`streaming`) and the
server-side recall (`recall`) are written once.
"""

from __future__ import annotations

import json
import re
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from .projection import system_value

Family = Literal["openai", "anthropic", "google"]


REASONING_KEYS = ("reasoning_content", "reasoning", "reasoning_details")
"""Where Chat Completions providers put a reply's reasoning (DeepSeek and vLLM ``reasoning_content``; OpenRouter
``reasoning`` and ``reasoning_details``): a reply carried into the next request keeps it under its own key."""


LIMIT_NOTE = "(The gateway's recall limit for this request was reached before the model answered. Ask again to go on.)"
"""The text a reply gets when the model kept calling the gateway's recall tool past its rounds and nothing the
client can see is left once those calls are taken out."""


GOOGLE_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    413: "INVALID_ARGUMENT",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    502: "UNAVAILABLE",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}
"""The ``google.rpc`` status names Google's APIs answer each HTTP status with (``error.status``)."""


def error_body(family: Family, message: str, *, kind: str = "invalid_request_error", code: int = 400) -> dict[str, Any]:
    """An error in the family's own shape, so the client's SDK raises its usual exception with our message
    (``code``: the HTTP status it goes with, which Google's shape repeats)."""
    if family == "anthropic":
        return {"type": "error", "error": {"type": kind, "message": message}}
    if family == "google":
        return {"error": {"code": code, "message": message, "status": GOOGLE_STATUS.get(code, "UNKNOWN")}}
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


@dataclass(frozen=True)
class ToolCall:
    """One function call the model made: its id (to answer it), name and arguments (a JSON string)."""

    id: str
    name: str
    arguments: str


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


class Protocol(ABC):
    """One managed route's wire shape (see the module docstring); each route implements every abstract method."""

    name: ClassVar[str]
    path: ClassVar[str]
    family: ClassVar[Family]
    fmt: ClassVar[Literal["openai_chat", "openai_responses", "anthropic", "gemini"]]
    list_key: ClassVar[str]
    system_key: ClassVar[str | None]
    json_stream: ClassVar[bool] = False
    """The reply streams as one JSON document (Gemini's ``streamGenerateContent`` without ``alt=sse``): relayed
    as it arrives, never read whole."""

    def manages(self, body: Mapping[str, Any]) -> bool:
        """Whether the gateway manages this body (every body, unless the route says otherwise): not when the
        provider holds part of the conversation itself."""
        return True

    def system_text(self, value: Any) -> str | None:
        """The text of the client's system value: a string, or the text blocks of a list."""
        if isinstance(value, str):
            return value or None
        if isinstance(value, list):
            parts = [b["text"] for b in value if isinstance(b, Mapping) and isinstance(b.get("text"), str)]
            return "\n\n".join(parts) or None
        return None

    def sent_system(self, original: Any, managed: Any, text: str | None) -> Any:
        """The system value to send, from the client's ``original`` (whose text is ``text``) and the window's
        ``managed`` one (`windowkeeper.serve.projection.system_value`)."""
        return system_value(original, managed, text)

    def add_tool(self, tools: Any, tool: dict[str, Any]) -> list[Any]:
        """The client's tools with the gateway's ``tool`` (a `tool_schema`) after them, theirs unchanged."""
        return [*(tools if isinstance(tools, list) else []), tool]

    def tool_names(self, tools: Any) -> set[str]:
        names: set[str] = set()
        for tool in tools if isinstance(tools, list) else ():
            if isinstance(tool, Mapping):
                fn = tool.get("function")
                name = fn.get("name") if isinstance(fn, Mapping) else tool.get("name")
                if isinstance(name, str):
                    names.add(name)
        return names

    def can_offer_tools(self, body: Mapping[str, Any]) -> bool:
        """Whether the gateway can add its own tool to this body and keep the reply's calls to it from the client
        (every route, unless it says otherwise)."""
        return True

    def echoed(self, client: Mapping[str, Any], sent: Mapping[str, Any]) -> dict[str, Any]:
        """The fields of the reply that echo the request and must read as the client's request (the client sent
        ``client``, the upstream got ``sent``), by name; none unless the route's replies echo the request."""
        return {}

    @abstractmethod
    def tool_schema(self, schema: Mapping[str, Any]) -> dict[str, Any]:
        """A ``{"name", "description", "parameters"}`` schema as this protocol's tool definition."""
        ...

    @abstractmethod
    def prompt_tokens(self, reply: Mapping[str, Any]) -> int | None:
        """The prompt size the provider reports in a JSON reply (cached tokens included)."""
        ...

    @abstractmethod
    def stream_prompt_tokens(self, event: Mapping[str, Any]) -> int | None:
        """The prompt size in a streamed event, for the event that carries it."""
        ...

    @abstractmethod
    def calls(self, reply: Mapping[str, Any]) -> list[ToolCall]: ...

    @abstractmethod
    def follow_up(
        self, body: Mapping[str, Any], reply: Mapping[str, Any], answers: Mapping[str, str]
    ) -> dict[str, Any]:
        """``body`` continued with the model's turn and the answers to its calls (by call id)."""
        ...

    @abstractmethod
    def without_calls(self, reply: Mapping[str, Any], names: set[str]) -> dict[str, Any]:
        """``reply`` with the calls to ``names`` removed (the client never sees a tool it did not define)."""
        ...

    @abstractmethod
    def out_of_rounds(self, reply: Mapping[str, Any], names: set[str]) -> dict[str, Any]:
        """``reply`` without its calls to ``names`` (the gateway's, which it stops answering) as a finished turn:
        the stop reason no longer announces calls, and `LIMIT_NOTE` stands in when nothing the client can see
        is left, so the client's loop ends the turn instead of meeting a call-less tool stop or an empty reply."""
        ...


class ChatCompletions(Protocol):
    name = "chat_completions"
    path = "/v1/chat/completions"
    family = "openai"
    fmt = "openai_chat"
    list_key = "messages"
    system_key = None

    def can_offer_tools(self, body: Mapping[str, Any]) -> bool:
        """Not beside legacy ``functions`` (OpenAI refuses, 400, a body with both ``functions`` and ``tools``) nor
        with ``n`` above 1 (each choice would be a turn of its own, any of them a call to recall to answer)."""
        n = body.get("n")
        return not body.get("functions") and not (isinstance(n, int) and n > 1)

    def tool_schema(self, schema: Mapping[str, Any]) -> dict[str, Any]:
        return {"type": "function", "function": dict(schema)}

    def prompt_tokens(self, reply: Mapping[str, Any]) -> int | None:
        usage = reply.get("usage")
        return _int(usage.get("prompt_tokens")) or None if isinstance(usage, Mapping) else None

    def stream_prompt_tokens(self, event: Mapping[str, Any]) -> int | None:
        return self.prompt_tokens(event)

    def _message(self, reply: Mapping[str, Any]) -> Mapping[str, Any]:
        choices = reply.get("choices")
        if isinstance(choices, list) and choices and isinstance(choices[0], Mapping):
            message = choices[0].get("message")
            if isinstance(message, Mapping):
                return message
        return {}

    def calls(self, reply: Mapping[str, Any]) -> list[ToolCall]:
        out = []
        for call in self._message(reply).get("tool_calls") or ():
            fn = call.get("function") or {}
            out.append(ToolCall(str(call.get("id")), str(fn.get("name")), str(fn.get("arguments") or "")))
        return out

    def follow_up(
        self, body: Mapping[str, Any], reply: Mapping[str, Any], answers: Mapping[str, str]
    ) -> dict[str, Any]:
        turn = _request_turn(self._message(reply))
        results = [{"role": "tool", "tool_call_id": cid, "content": text} for cid, text in answers.items()]
        return {**body, "messages": [*body["messages"], turn, *results]}

    def without_calls(self, reply: Mapping[str, Any], names: set[str]) -> dict[str, Any]:
        return self._each_choice(reply, names, ended=False)

    def out_of_rounds(self, reply: Mapping[str, Any], names: set[str]) -> dict[str, Any]:
        return self._each_choice(reply, names, ended=True)

    def _each_choice(self, reply: Mapping[str, Any], names: set[str], *, ended: bool) -> dict[str, Any]:
        choices = reply.get("choices")
        if not isinstance(choices, list):
            return dict(reply)
        out = [_choice_without(c, names, ended) if isinstance(c, Mapping) else c for c in choices]
        return {**reply, "choices": out}


def _choice_without(choice: Mapping[str, Any], names: set[str], ended: bool) -> dict[str, Any]:
    """One Chat choice without its calls to ``names``; ``ended``: as a finished turn (`Protocol.out_of_rounds`)."""
    message = dict(choice.get("message") or {})
    calls = message.get("tool_calls") or []
    kept = [c for c in calls if (c.get("function") or {}).get("name") not in names]
    if len(kept) == len(calls):
        return dict(choice)  # a choice with no call to take out goes as it came
    message["tool_calls"] = kept or None
    out = {**choice, "message": message}
    if ended and not kept:
        if out.get("finish_reason") == "tool_calls":
            out["finish_reason"] = "stop"
        if not message.get("content"):
            message["content"] = LIMIT_NOTE
    return out


_TURN_KEYS = ("role", "content", "tool_calls", "function_call", "refusal", *REASONING_KEYS)


def _request_turn(message: Mapping[str, Any]) -> dict[str, Any]:
    """The model's reply message as the assistant message of the next request: what a request message can hold
    (``annotations`` and other reply-only keys go, a reply's ``audio`` becomes the ``{"id"}`` that refers to it),
    its reasoning kept under the key it came with. DeepSeek's thinking mode refuses (400) a request whose assistant
    message with tool calls lacks the ``reasoning_content`` it was answered with."""
    turn = {k: v for k, v in message.items() if k in _TURN_KEYS and (v is not None or k == "content")}
    audio = message.get("audio")
    if isinstance(audio, Mapping) and audio.get("id"):
        turn["audio"] = {"id": audio["id"]}
    return turn


class Responses(Protocol):
    name = "responses"
    path = "/v1/responses"
    family = "openai"
    fmt = "openai_responses"
    list_key = "input"
    system_key = "instructions"

    ECHOED: ClassVar[dict[str, Any]] = {"tools": [], "instructions": None}
    """The request fields a response echoes, with what it echoes for a request without them."""

    def manages(self, body: Mapping[str, Any]) -> bool:
        """Not when the provider keeps the conversation itself (``previous_response_id``, ``conversation``), the
        input is one string or there is none (a stored ``prompt``, or ``instructions`` alone, are the provider's
        to expand: nothing here to manage)."""
        given = body.get("input")
        return not (
            given is None or isinstance(given, str) or body.get("previous_response_id") or body.get("conversation")
        )

    def echoed(self, client: Mapping[str, Any], sent: Mapping[str, Any]) -> dict[str, Any]:
        """A response echoes its request's ``tools`` and ``instructions``: the upstream's would show the
        gateway's recall tool and the summary it put in the instructions, which the client never sent."""
        out = {}
        for key, absent in self.ECHOED.items():
            theirs = client.get(key, absent)
            if sent.get(key, absent) != theirs:
                out[key] = theirs
        return out

    def tool_schema(self, schema: Mapping[str, Any]) -> dict[str, Any]:
        return {"type": "function", **schema}

    def prompt_tokens(self, reply: Mapping[str, Any]) -> int | None:
        usage = reply.get("usage")
        return _int(usage.get("input_tokens")) or None if isinstance(usage, Mapping) else None

    def stream_prompt_tokens(self, event: Mapping[str, Any]) -> int | None:
        response = event.get("response")
        if event.get("type") == "response.completed" and isinstance(response, Mapping):
            return self.prompt_tokens(response)
        return None

    def calls(self, reply: Mapping[str, Any]) -> list[ToolCall]:
        return [
            ToolCall(str(i.get("call_id")), str(i.get("name")), str(i.get("arguments") or ""))
            for i in reply.get("output") or ()
            if isinstance(i, Mapping) and i.get("type") == "function_call"
        ]

    def follow_up(
        self, body: Mapping[str, Any], reply: Mapping[str, Any], answers: Mapping[str, str]
    ) -> dict[str, Any]:
        given = body.get("input")
        items = [{"type": "message", "role": "user", "content": given}] if isinstance(given, str) else list(given or [])
        stored = body.get("store") is not False
        turn = [dict(i) for i in reply.get("output") or () if isinstance(i, Mapping) and (stored or _carried(i))]
        results = [{"type": "function_call_output", "call_id": cid, "output": text} for cid, text in answers.items()]
        return {**body, "input": [*items, *turn, *results]}

    def without_calls(self, reply: Mapping[str, Any], names: set[str]) -> dict[str, Any]:
        output = list(reply.get("output") or ())
        gone = {
            n
            for n, i in enumerate(output)
            if isinstance(i, Mapping) and i.get("type") == "function_call" and i.get("name") in names
        }
        return {**reply, "output": [i for n, i in enumerate(output) if n not in gone and not _orphan(output, n, gone)]}

    def out_of_rounds(self, reply: Mapping[str, Any], names: set[str]) -> dict[str, Any]:
        out = self.without_calls(reply, names)
        if all(isinstance(i, Mapping) and i.get("type") == "reasoning" for i in out["output"]):
            out["output"] = [*out["output"], LIMIT_MESSAGE]
        return out


LIMIT_MESSAGE: dict[str, Any] = {
    "type": "message",
    "id": "msg_windowkeeper_recall_limit",
    "status": "completed",
    "role": "assistant",
    "content": [{"type": "output_text", "text": LIMIT_NOTE, "annotations": []}],
}
"""`LIMIT_NOTE` as a Responses output item."""


def echo(reply: dict[str, Any], fields: Mapping[str, Any]) -> dict[str, Any]:
    """``reply`` with the echoed ``fields`` (`Protocol.echoed`) as the client sent them: only those it has."""
    changed = {k: v for k, v in fields.items() if k in reply and reply[k] != v}
    return {**reply, **changed} if changed else reply


def _orphan(output: list[Any], at: int, gone: set[int]) -> bool:
    """Whether ``output[at]`` is a reasoning item all of whose following items (up to the next reasoning item)
    are ``gone``: sent back alone, the API refuses it (400, "provided without its required following item")."""
    item = output[at]
    if not (isinstance(item, Mapping) and item.get("type") == "reasoning"):
        return False
    followed = False
    for n in range(at + 1, len(output)):
        nxt = output[n]
        if isinstance(nxt, Mapping) and nxt.get("type") == "reasoning":
            break
        if n not in gone:
            return False
        followed = True
    return followed


def _carried(item: Mapping[str, Any]) -> bool:
    """Whether an output item can go back in a request with ``store: false``: a reasoning item only with its
    ``encrypted_content`` (by id alone the API looks for a stored item and answers 404; it says to leave the item
    out, which the model's call after it allows)."""
    return item.get("type") != "reasoning" or bool(item.get("encrypted_content"))


class Messages(Protocol):
    name = "messages"
    path = "/v1/messages"
    family = "anthropic"
    fmt = "anthropic"
    list_key = "messages"
    system_key = "system"

    def tool_schema(self, schema: Mapping[str, Any]) -> dict[str, Any]:
        return {"name": schema["name"], "description": schema["description"], "input_schema": schema["parameters"]}

    def prompt_tokens(self, reply: Mapping[str, Any]) -> int | None:
        usage = reply.get("usage")
        if not isinstance(usage, Mapping):
            return None
        keys = ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
        return sum(_int(usage.get(k)) for k in keys) or None

    def stream_prompt_tokens(self, event: Mapping[str, Any]) -> int | None:
        message = event.get("message")
        if event.get("type") == "message_start" and isinstance(message, Mapping):
            return self.prompt_tokens(message)
        return None

    def calls(self, reply: Mapping[str, Any]) -> list[ToolCall]:
        return [
            ToolCall(str(b.get("id")), str(b.get("name")), json.dumps(b.get("input") or {}))
            for b in reply.get("content") or ()
            if isinstance(b, Mapping) and b.get("type") == "tool_use"
        ]

    def follow_up(
        self, body: Mapping[str, Any], reply: Mapping[str, Any], answers: Mapping[str, str]
    ) -> dict[str, Any]:
        turn = {"role": "assistant", "content": list(reply.get("content") or [])}
        results = [{"type": "tool_result", "tool_use_id": cid, "content": text} for cid, text in answers.items()]
        return {**body, "messages": [*body["messages"], turn, {"role": "user", "content": results}]}

    def without_calls(self, reply: Mapping[str, Any], names: set[str]) -> dict[str, Any]:
        content = [
            b
            for b in reply.get("content") or ()
            if not (isinstance(b, Mapping) and b.get("type") == "tool_use" and b.get("name") in names)
        ]
        return {**reply, "content": content}

    def out_of_rounds(self, reply: Mapping[str, Any], names: set[str]) -> dict[str, Any]:
        out = self.without_calls(reply, names)
        blocks = out["content"]
        if out.get("stop_reason") == "tool_use" and not any(_kind(b) == "tool_use" for b in blocks):
            out["stop_reason"] = "end_turn"
        if all(_kind(b) in THINKING_BLOCKS for b in blocks):
            out["content"] = [*blocks, {"type": "text", "text": LIMIT_NOTE}]
        return out


THINKING_BLOCKS = ("thinking", "redacted_thinking")
"""Anthropic blocks the client does not show: a turn of these alone is no answer."""


def _kind(block: Any) -> Any:
    return block.get("type") if isinstance(block, Mapping) else None


class GenerateContent(Protocol):
    """Gemini ``POST /{version}/models/{model}:generateContent`` (`gemini_protocol` finds it by path).

    A reply holds candidates, each a model content of parts; a function call is a ``functionCall`` part, with an
    ``id`` only where the model gave one, and is answered by a ``functionResponse`` part of the same name (and
    id) in the next user content. The model's parts go back as they came: Gemini refuses a turn whose function
    call lost the ``thoughtSignature`` it was answered with."""

    name = "generate_content"
    path = "/v1beta/models/{model}:generateContent"
    family = "google"
    fmt = "gemini"
    list_key = "contents"
    system_key = "systemInstruction"

    SCHEMA_KEYS: ClassVar[tuple[tuple[str, str], ...]] = (
        ("responseSchema", "response_schema"),
        ("responseJsonSchema", "response_json_schema"),
    )
    """A response schema, which some Gemini models refuse beside function calling (as they refuse JSON mode)."""

    def manages(self, body: Mapping[str, Any]) -> bool:
        """Not with ``cachedContent``: the cache holds the conversation's head (and the system instruction and
        tools, which the request may then not set), so the list is only its tail."""
        return not body.get("cachedContent") and not body.get("cached_content")

    def system_text(self, value: Any) -> str | None:
        """The text parts of ``systemInstruction`` (a content), joined."""
        if isinstance(value, Mapping):
            value = value.get("parts")
        if isinstance(value, Mapping):
            value = [value]
        return super().system_text(value)

    def sent_system(self, original: Any, managed: Any, text: str | None) -> Any:
        """The client's ``systemInstruction`` when its text is what the window kept; with a summary added, the
        client's content (its parts and keys) with one text part holding what was added."""
        if isinstance(managed, Mapping):
            managed = self.system_text(managed)
        if (managed or None) == (text or None):
            return original
        if not managed:
            return None
        if text and isinstance(original, Mapping) and isinstance(original.get("parts"), list) and text in managed:
            added = managed.replace(text, "", 1).strip()
            return {**original, "parts": [*original["parts"], {"text": added}]}
        keys = {k: v for k, v in original.items() if k != "parts"} if isinstance(original, Mapping) else {}
        return {**keys, "parts": [{"text": managed}]}

    def tool_names(self, tools: Any) -> set[str]:
        return {d["name"] for d in _declarations(tools) if isinstance(d.get("name"), str)}

    def can_offer_tools(self, body: Mapping[str, Any]) -> bool:
        """Not when the client turned function calling off (``mode: NONE``), asked for several candidates (each
        would be a turn of its own), or uses what a function declaration may not join unless it declares
        functions itself: a built-in tool (Google Search, code execution...), JSON mode or a response schema."""
        config = _get(body, "toolConfig", "tool_config")
        calling = (
            _get(config, "functionCallingConfig", "function_calling_config") if isinstance(config, Mapping) else None
        )
        if isinstance(calling, Mapping) and str(calling.get("mode", "")).upper() == "NONE":
            return False
        generation = _get(body, "generationConfig", "generation_config")
        generation = generation if isinstance(generation, Mapping) else {}
        count = _get(generation, "candidateCount", "candidate_count")
        if isinstance(count, int) and count > 1:
            return False
        tools = body.get("tools")
        if _declarations(tools):
            return True
        built_in = any(isinstance(t, Mapping) and set(t) - set(DECLARATION_KEYS) for t in tools or ())
        mime = _get(generation, "responseMimeType", "response_mime_type")
        conflicts = mime not in (None, "", "text/plain") or any(
            _get(generation, *keys) is not None for keys in self.SCHEMA_KEYS
        )
        return not built_in and not conflicts

    def tool_schema(self, schema: Mapping[str, Any]) -> dict[str, Any]:
        """The declaration takes the JSON Schema as ``parametersJsonSchema``: ``parameters`` is an OpenAPI subset
        that refuses JSON Schema keys such as ``additionalProperties``."""
        declaration = {"name": schema["name"], "description": schema["description"]}
        return {"functionDeclarations": [{**declaration, "parametersJsonSchema": schema["parameters"]}]}

    def add_tool(self, tools: Any, tool: dict[str, Any]) -> list[Any]:
        """The gateway's declaration joins the client's first tool of declarations (some models refuse several
        tools), as a copy; the client's tools themselves are unchanged."""
        given = list(tools) if isinstance(tools, list) else []
        ours = tool["functionDeclarations"]
        for n, entry in enumerate(given):
            if isinstance(entry, Mapping):
                for key in DECLARATION_KEYS:
                    if isinstance(entry.get(key), list):
                        given[n] = {**entry, key: [*entry[key], *ours]}
                        return given
        return [*given, tool]

    def prompt_tokens(self, reply: Mapping[str, Any]) -> int | None:
        usage = reply.get("usageMetadata")
        return _int(usage.get("promptTokenCount")) or None if isinstance(usage, Mapping) else None

    def stream_prompt_tokens(self, event: Mapping[str, Any]) -> int | None:
        return self.prompt_tokens(event)

    def calls(self, reply: Mapping[str, Any]) -> list[ToolCall]:
        return [
            ToolCall(call_id, str(fc.get("name")), json.dumps(fc.get("args") or {}))
            for call_id, fc in _function_calls(_parts_of(_first_candidate(reply)))
        ]

    def follow_up(
        self, body: Mapping[str, Any], reply: Mapping[str, Any], answers: Mapping[str, str]
    ) -> dict[str, Any]:
        content = _first_candidate(reply).get("content")
        turn = {**content, "role": "model"} if isinstance(content, Mapping) else {"role": "model", "parts": []}
        results = []
        for call_id, fc in _function_calls(_parts_of(_first_candidate(reply))):
            if call_id in answers:
                response: dict[str, Any] = {"name": fc.get("name"), "response": {"result": answers[call_id]}}
                if isinstance(fc.get("id"), str) and fc["id"]:
                    response["id"] = fc["id"]
                results.append({"functionResponse": response})
        return {**body, "contents": [*body["contents"], turn, {"role": "user", "parts": results}]}

    def without_calls(self, reply: Mapping[str, Any], names: set[str]) -> dict[str, Any]:
        return self._each_candidate(reply, names, ended=False)

    def out_of_rounds(self, reply: Mapping[str, Any], names: set[str]) -> dict[str, Any]:
        return self._each_candidate(reply, names, ended=True)

    def _each_candidate(self, reply: Mapping[str, Any], names: set[str], *, ended: bool) -> dict[str, Any]:
        candidates = reply.get("candidates")
        if not isinstance(candidates, list):
            return dict(reply)
        out = []
        for candidate in candidates:
            parts = _parts_of(candidate)
            kept = gemini_parts_without(parts, names)
            if len(kept) == len(parts) and kept == parts:
                out.append(candidate)
                continue
            if ended and not any(shows(p) for p in kept):
                kept = [*kept, {"text": LIMIT_NOTE}]
            out.append({**candidate, "content": {**candidate["content"], "parts": kept}})
        return {**reply, "candidates": out}


class StreamGenerateContent(GenerateContent):
    """Gemini ``:streamGenerateContent?alt=sse``: each server-sent event is a whole ``GenerateContentResponse``
    holding the next parts, the last with the ``finishReason`` (see `streaming.CallFilter`)."""

    name = "stream_generate_content"
    path = "/v1beta/models/{model}:streamGenerateContent"


class StreamGenerateContentJson(StreamGenerateContent):
    """Gemini ``:streamGenerateContent`` without ``alt=sse``: one JSON array streamed element by element. Managed
    (its list is cut like any other) and relayed as it arrives; the recall tool is not offered, as the gateway
    could not keep its calls out of the array without holding the reply back."""

    json_stream = True

    def can_offer_tools(self, body: Mapping[str, Any]) -> bool:
        return False


DECLARATION_KEYS = ("functionDeclarations", "function_declarations")


def _get(value: Any, camel: str, snake: str) -> Any:
    """A field of a Gemini body in either spelling the API reads (REST camelCase, or the proto's snake_case)."""
    if not isinstance(value, Mapping):
        return None
    return value[camel] if camel in value else value.get(snake)


def _declarations(tools: Any) -> list[Mapping[str, Any]]:
    out: list[Mapping[str, Any]] = []
    for tool in tools if isinstance(tools, list) else ():
        declared = _get(tool, *DECLARATION_KEYS)
        if isinstance(declared, list):
            out.extend(d for d in declared if isinstance(d, Mapping))
    return out


def _first_candidate(reply: Mapping[str, Any]) -> Mapping[str, Any]:
    candidates = reply.get("candidates")
    if isinstance(candidates, list) and candidates and isinstance(candidates[0], Mapping):
        return candidates[0]
    return {}


def _parts_of(candidate: Any) -> list[Any]:
    content = candidate.get("content") if isinstance(candidate, Mapping) else None
    parts = content.get("parts") if isinstance(content, Mapping) else None
    return parts if isinstance(parts, list) else []


def function_call(part: Any) -> Mapping[str, Any] | None:
    """The ``functionCall`` of a Gemini part, if it is one."""
    fc = _get(part, "functionCall", "function_call")
    return fc if isinstance(fc, Mapping) else None


def _function_calls(parts: list[Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """``(id, functionCall)`` for each call in ``parts``: the call's own id, else one made of its place (a call
    without an id is answered by name, in order, so the made-up id never leaves the gateway)."""
    out = []
    for n, part in enumerate(parts):
        fc = function_call(part)
        if fc is not None:
            own = fc.get("id")
            out.append((own if isinstance(own, str) and own else f"windowkeeper_call_{n}", fc))
    return out


def shows(part: Any) -> bool:
    """Whether the client shows a Gemini part: a function call, non-empty text that is no thought, media."""
    if not isinstance(part, Mapping) or part.get("thought") is True:
        return False
    if isinstance(part.get("text"), str):
        return bool(part["text"])
    return any(k not in ("thoughtSignature", "thought_signature") for k in part)


def gemini_parts_without(parts: list[Any], names: set[str]) -> list[Any]:
    """``parts`` without the function calls to ``names``. A removed call's ``thoughtSignature`` moves to the first
    remaining call without one (Gemini requires the signature on a turn's first call), else stays behind as an
    empty text part carrying it, where the call was."""
    gone = [n for n, p in enumerate(parts) if (fc := function_call(p)) is not None and fc.get("name") in names]
    if not gone:
        return parts
    kept: list[Any] = []
    signatures: list[tuple[int, Any]] = []
    for n, part in enumerate(parts):
        if n in gone:
            signature = _get(part, "thoughtSignature", "thought_signature")
            if signature:
                signatures.append((len(kept), signature))
            continue
        kept.append(part)
    for at, signature in reversed(signatures):
        bare = next(
            (
                k
                for k, p in enumerate(kept)
                if function_call(p) is not None and not _get(p, "thoughtSignature", "thought_signature")
            ),
            None,
        )
        if bare is not None:
            kept[bare] = {**kept[bare], "thoughtSignature": signature}
        else:
            kept.insert(at, {"text": "", "thoughtSignature": signature})
    return kept


GEMINI_METHOD = re.compile(
    r"^/(v1|v1beta|v1alpha)/((?:models|tunedModels)/[^/:]+):(generateContent|streamGenerateContent)$"
)
"""A Gemini model's generate method, the path google-genai posts to (``/v1beta/models/gemini-2.5-flash:...``)."""

GEMINI_PROTOCOLS = (GenerateContent(), StreamGenerateContent(), StreamGenerateContentJson())


def gemini_protocol(path: str, query: str) -> Protocol | None:
    """The Gemini route of ``path`` (with its query string): streamed as server-sent events with ``alt=sse``,
    which google-genai always sends, else as one JSON array; None for any other path."""
    found = GEMINI_METHOD.match(path)
    if found is None:
        return None
    if found.group(3) == "generateContent":
        return GEMINI_PROTOCOLS[0]
    alt = [v for k, _, v in (pair.partition("=") for pair in query.split("&")) if k == "alt"]
    return GEMINI_PROTOCOLS[1] if alt and alt[-1] == "sse" else GEMINI_PROTOCOLS[2]


PROTOCOLS: dict[str, Protocol] = {p.path: p for p in (ChatCompletions(), Responses(), Messages())}
