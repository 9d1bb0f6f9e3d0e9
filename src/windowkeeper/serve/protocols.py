"""The three wire protocols the gateway manages: where the list, the system text and the tools live, how usage is
reported, how a tool call looks and how the conversation continues after one.

Everything protocol-specific sits here so the request path (`app`), the streaming relay (`streaming`) and the
server-side recall (`recall`) are written once.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

Family = Literal["openai", "anthropic"]


REASONING_KEYS = ("reasoning_content", "reasoning", "reasoning_details")
"""Where Chat Completions providers put a reply's reasoning (DeepSeek and vLLM ``reasoning_content``; OpenRouter
``reasoning`` and ``reasoning_details``): a reply carried into the next request keeps it under its own key."""


LIMIT_NOTE = "(The gateway's recall limit for this request was reached before the model answered. Ask again to go on.)"
"""The text a reply gets when the model kept calling the gateway's recall tool past its rounds and nothing the
client can see is left once those calls are taken out."""


def error_body(family: Family, message: str, *, kind: str = "invalid_request_error") -> dict[str, Any]:
    """An error in the family's own shape, so the client's SDK raises its usual exception with our message."""
    if family == "anthropic":
        return {"type": "error", "error": {"type": kind, "message": message}}
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
    fmt: ClassVar[Literal["openai_chat", "openai_responses", "anthropic"]]
    list_key: ClassVar[str]
    system_key: ClassVar[str | None]

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


PROTOCOLS: dict[str, Protocol] = {p.path: p for p in (ChatCompletions(), Responses(), Messages())}
