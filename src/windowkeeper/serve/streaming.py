"""Server-sent events: split a byte stream into events, read usage from them, and keep the gateway's own tool
calls out of what the client receives.

A stream is relayed as it arrives. When the gateway offered the model its recall tool, each event is looked at as
it passes: the events of a call to that tool are held back (the client never sees a tool it did not define), calls
to the client's own tools are relayed at once with their index shifted over the held ones, and, once a recall call
has been seen, the closing events wait until the stream ends. Then either the model called only recall (the gateway
answers and continues the conversation upstream) or it also called the client's tools (the closing events are
relayed, without the recall calls).

A continued conversation reaches the client as the same reply going on (`Carried`): the next round's opening
events are not relayed again, its block or item indices follow the ones the client already holds, and its closing
events close the one reply. When the model still calls only recall after the last round, the closing events close
a finished turn (`CallFilter.closing`).

Gemini streams no indices and no opening or closing events: each event is a whole ``GenerateContentResponse`` with
the next parts, the last one with the ``finishReason``, and function calls come at the end of a turn. From the
first function call part on, its events are held until the round ends; then the gateway's calls are taken out and
the held events relayed: without their ``finishReason`` when the conversation goes on upstream (the next round's
events follow as more of the same turn), else with it on the last event that still has parts. google-genai's chat
takes a turn into its history only when every event has parts and one has a ``finishReason``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from .protocols import (
    LIMIT_MESSAGE,
    LIMIT_NOTE,
    REASONING_KEYS,
    THINKING_BLOCKS,
    Protocol,
    ToolCall,
    echo,
    function_call,
    gemini_parts_without,
    shows,
)


@dataclass
class Event:
    """One server-sent event: its bytes as received and its ``data`` payload (None for a comment or keep-alive)."""

    raw: bytes
    data: str | None

    def json(self) -> Any:
        if self.data is None or self.data == "[DONE]":
            return None
        try:
            return json.loads(self.data)
        except json.JSONDecodeError:
            return None


class EventSplitter:
    """Incremental parser: feed chunks, get the complete events (``\\n\\n`` or ``\\r\\n\\r\\n`` terminated)."""

    def __init__(self) -> None:
        self._buffer = b""

    def feed(self, chunk: bytes) -> Iterator[Event]:
        buffer = self._buffer + chunk
        if b"\r" in buffer:
            buffer = buffer.replace(b"\r\n", b"\n")
        while True:
            end = buffer.find(b"\n\n")
            if end < 0:
                break
            raw, buffer = buffer[: end + 2], buffer[end + 2 :]
            yield Event(raw, _data(raw))
        self._buffer = buffer

    @property
    def rest(self) -> bytes:
        return self._buffer


def _data(raw: bytes) -> str | None:
    lines = [line[5:].removeprefix(b" ") for line in raw.split(b"\n") if line.startswith(b"data:")]
    return b"\n".join(lines).decode("utf-8", "replace") if lines else None


class UsageReader:
    """Finds the prompt size in a relayed stream, parsing only the events that mention usage."""

    def __init__(self, protocol: Protocol) -> None:
        self.protocol = protocol
        self.splitter = EventSplitter()
        self.prompt_tokens: int | None = None

    def feed(self, chunk: bytes) -> None:
        for event in self.splitter.feed(chunk):
            self.see(event)

    def see(self, event: Event) -> None:
        if event.data is not None and "usage" in event.data:
            payload = event.json()
            if isinstance(payload, dict):
                found = self.protocol.stream_prompt_tokens(payload)
                if found:
                    self.prompt_tokens = found


def _reserialize(raw: bytes, payload: Any) -> bytes:
    """The event with a new data payload (its ``event:`` line kept)."""
    head = b"".join(line + b"\n" for line in raw.split(b"\n") if line.startswith(b"event:"))
    return head + b"data: " + json.dumps(payload, ensure_ascii=False).encode() + b"\n\n"


def echo_event(raw: bytes, fields: Mapping[str, Any]) -> bytes:
    """A Responses event whose ``response`` echoes its request (``response.created``, ``response.completed``, ...)
    with the echoed ``fields`` as the client sent them (`Protocol.echoed`); any other event as it came. Only an
    event with a ``"response"`` key is parsed (inside a JSON string the quotes would be escaped)."""
    if b'"response"' not in raw:
        return raw
    payload = Event(raw, _data(raw)).json()
    if not isinstance(payload, dict) or not isinstance(payload.get("response"), dict):
        return raw
    response = echo(payload["response"], fields)
    return raw if response is payload["response"] else _reserialize(raw, {**payload, "response": response})


@dataclass(frozen=True)
class Carried:
    """What the client was already streamed of this reply in earlier rounds (the gateway answered recall and went
    upstream again), so that a later round reaches it as more of the same reply: the SDKs accumulate one message
    (Anthropic indexes blocks from 0 per ``message_start``) or refuse a second response (OpenAI Responses)."""

    continued: bool = False
    """A later round: its opening events (``message_start``, ``response.created``) are not relayed again."""
    blocks: int = 0
    """Content blocks (Anthropic) or output items (Responses) the client holds: this round's indices follow them."""
    sequence: int = 0
    """Responses: the next ``sequence_number`` the client expects."""
    response: dict[str, Any] | None = None
    """Responses: the first round's response, whose id the client's SDK holds to for the whole stream."""
    output: tuple[Any, ...] = ()
    """Responses: the items of earlier rounds the client keeps (the final response lists them first)."""
    shown: bool = False
    """Something the client shows (text, a call of its own) was relayed."""


@dataclass
class CallFilter:
    """Per-event decisions for one streamed reply (see the module docstring)."""

    protocol: Protocol
    recall_name: str
    carried: Carried = field(default_factory=Carried)
    ours: list[int] = field(default_factory=list)
    theirs: int = 0
    held: list[bytes] = field(default_factory=list)
    text: str = ""
    reasoning: dict[str, str] = field(default_factory=dict)
    """Reasoning streamed beside the text, by the key it came under (``reasoning_content``, ``reasoning``)."""
    calls: dict[int, dict[str, str]] = field(default_factory=dict)
    blocks: dict[int, dict[str, Any]] = field(default_factory=dict)
    final: dict[str, Any] | None = None
    seen: set[int] = field(default_factory=set)
    """Indices of the blocks (Anthropic) or output items (Responses) this round started."""
    shown: bool = False
    """This round relayed something the client shows (text, a call of its own)."""
    sequence: int = 0
    """Responses: the ``sequence_number`` after the last event this round relayed."""
    first: dict[str, Any] | None = None
    """Responses: the response this round's ``response.created`` announced."""
    parts: list[Any] = field(default_factory=list)
    """Gemini: every part of the first candidate this round streamed, in order (the model's turn)."""
    pending: list[tuple[bytes, dict[str, Any]]] = field(default_factory=list)
    """Gemini: the events held since the round's first function call, as received and parsed."""

    def _shift(self, index: int) -> int:
        return self.carried.blocks + index - sum(1 for i in self.ours if i < index)

    def feed(self, event: Event) -> list[bytes]:
        payload = event.json()
        if not isinstance(payload, dict):
            if event.data == "[DONE]" and self.ours:
                self.held.append(event.raw)
                return []
            return [event.raw]
        name = self.protocol.name
        if name == "chat_completions":
            return self._chat(event, payload)
        if name == "responses":
            return self._responses(event, payload)
        if self.protocol.family == "google":
            return self._gemini(event, payload)
        return self._messages(event, payload)

    # -- Chat Completions chunks -------------------------------------------------------------------------------

    def _chat(self, event: Event, payload: dict[str, Any]) -> list[bytes]:
        choices = payload.get("choices") or []
        choice = choices[0] if choices and isinstance(choices[0], dict) else {}
        delta = choice.get("delta") or {}
        if isinstance(delta.get("content"), str):
            self.text += delta["content"]
            self.shown = self.shown or bool(delta["content"])
        for key in REASONING_KEYS:
            if isinstance(delta.get(key), str):
                self.reasoning[key] = self.reasoning.get(key, "") + delta[key]
        entries = delta.get("tool_calls")
        if isinstance(entries, list) and entries:
            kept = []
            for entry in entries:
                index = entry.get("index", 0)
                fn = entry.get("function") or {}
                call = self.calls.setdefault(index, {"id": "", "name": "", "arguments": ""})
                call["id"] = entry.get("id") or call["id"]
                call["name"] = fn.get("name") or call["name"]
                call["arguments"] += fn.get("arguments") or ""
                if fn.get("name"):
                    if fn["name"] == self.recall_name:
                        self.ours.append(index)
                    else:
                        self.theirs += 1
                        self.shown = True
                if index not in self.ours:
                    # a round that only called recall is continued, so no call of the client's precedes these
                    kept.append({**entry, "index": index - sum(1 for i in self.ours if i < index)})
            if len(kept) == len(entries) and not self.ours:
                return [event.raw]
            if not kept and not delta.get("content") and not choice.get("finish_reason"):
                return []
            new_delta = {**delta, "tool_calls": kept} if kept else {k: v for k, v in delta.items() if k != "tool_calls"}
            payload = {**payload, "choices": [{**choice, "delta": new_delta}, *choices[1:]]}
            event = Event(_reserialize(event.raw, payload), None)
        if self.ours and (choice.get("finish_reason") or not choices):
            self.held.append(event.raw)
            return []
        return [event.raw]

    # -- Responses events --------------------------------------------------------------------------------------

    def _responses(self, event: Event, payload: dict[str, Any]) -> list[bytes]:
        kind = payload.get("type")
        if kind in ("response.created", "response.queued", "response.in_progress"):
            if self.first is None and isinstance(payload.get("response"), dict):
                self.first = payload["response"]
            if self.carried.continued:
                return []  # the client's SDK has its response: a second one is an error to it
        changed = self.carried.continued or bool(self.ours)
        if isinstance(payload.get("sequence_number"), int):
            payload = {**payload, "sequence_number": self.carried.sequence + payload["sequence_number"]}
            self.sequence = payload["sequence_number"] + 1
        if kind in ("response.completed", "response.incomplete", "response.failed"):
            response = payload.get("response")
            self.final = response if isinstance(response, dict) else None
            if isinstance(response, dict):
                payload = {**payload, "response": self._whole(response, self.protocol.without_calls)}
            if self.ours:
                self.held.append(_reserialize(event.raw, payload))
                return []
            return [_reserialize(event.raw, payload) if changed else event.raw]
        index = payload.get("output_index")
        if not isinstance(index, int):
            return [_reserialize(event.raw, payload) if self.carried.continued else event.raw]
        item = payload.get("item")
        if kind == "response.output_item.added" and isinstance(item, dict):
            self.seen.add(index)
            if item.get("type") == "function_call" and item.get("name") == self.recall_name:
                self.ours.append(index)
            else:
                self.theirs += item.get("type") == "function_call"
                self.shown = self.shown or item.get("type") != "reasoning"
        if index in self.ours:
            return []
        if self.ours or self.carried.continued:
            return [_reserialize(event.raw, {**payload, "output_index": self._shift(index)})]
        return [event.raw]

    def _whole(self, response: dict[str, Any], trim: Callable[[dict[str, Any], set[str]], dict[str, Any]]) -> Any:
        """This round's final response as the client's whole reply: the earlier rounds' items first, under the
        first round's id, the gateway's calls trimmed out by ``trim``."""
        whole = {**response, "output": [*self.carried.output, *(response.get("output") or ())]}
        if self.carried.response is not None and "id" in self.carried.response:
            whole["id"] = self.carried.response["id"]
        return trim(whole, {self.recall_name})

    # -- Anthropic message events ------------------------------------------------------------------------------

    def _messages(self, event: Event, payload: dict[str, Any]) -> list[bytes]:
        kind = payload.get("type")
        if kind == "message_start" and self.carried.continued:
            return []  # the client's SDK starts one message and indexes its blocks on from the earlier rounds'
        if kind in ("message_delta", "message_stop"):
            if self.ours:
                self.held.append(event.raw)
                return []
            return [event.raw]
        index = payload.get("index")
        if not isinstance(index, int):
            return [event.raw]
        if kind == "content_block_start":
            block = dict(payload.get("content_block") or {})
            self.blocks[index] = block
            self.seen.add(index)
            if block.get("type") == "tool_use" and block.get("name") == self.recall_name:
                self.ours.append(index)
            else:
                self.theirs += block.get("type") == "tool_use"
                self.shown = self.shown or block.get("type") not in THINKING_BLOCKS
        elif kind == "content_block_delta":
            self._grow(index, payload.get("delta") or {})
        if index in self.ours:
            return []
        if self._shift(index) != index:
            return [_reserialize(event.raw, {**payload, "index": self._shift(index)})]
        return [event.raw]

    def _grow(self, index: int, delta: dict[str, Any]) -> None:
        block = self.blocks.setdefault(index, {"type": "text", "text": ""})
        kind = delta.get("type")
        if kind == "text_delta":
            block["text"] = block.get("text", "") + str(delta.get("text", ""))
        elif kind == "input_json_delta":
            block["_json"] = block.get("_json", "") + str(delta.get("partial_json", ""))
        elif kind == "thinking_delta":
            block["thinking"] = block.get("thinking", "") + str(delta.get("thinking", ""))
        elif kind == "signature_delta":
            block["signature"] = str(delta.get("signature", ""))
        elif kind == "citations_delta" and isinstance(delta.get("citation"), dict):
            block["citations"] = [*(block.get("citations") or []), delta["citation"]]

    # -- Gemini responses ----------------------------------------------------------------------------------------

    def _gemini(self, event: Event, payload: dict[str, Any]) -> list[bytes]:
        held = bool(self.pending)
        for part in _candidate_parts(payload):
            self.parts.append(part)
            fc = function_call(part)
            if fc is not None and fc.get("name") == self.recall_name:
                self.ours.append(len(self.parts) - 1)
            else:
                self.theirs += fc is not None
                self.shown = self.shown or shows(part)
            held = held or fc is not None
        if held:  # from the round's first call on, until it ends
            self.pending.append((event.raw, payload))
            return []
        return [event.raw]

    def continuing(self) -> list[bytes]:
        """Gemini: what the client is owed of a round the gateway continues upstream (the model called only
        recall): the held events' other parts, without the ``finishReason`` the next round's last event brings."""
        if self.protocol.family != "google":
            return []
        out = []
        for raw, payload in self.pending:
            parts = gemini_parts_without(_candidate_parts(payload), {self.recall_name})
            if parts:
                candidate = {k: v for k, v in _candidate(payload).items() if k != "finishReason"}
                out.append(
                    _reserialize(raw, _with_candidate(payload, {**candidate, "content": _content(candidate, parts)}))
                )
        return out

    def _gemini_closing(self, exhausted: bool) -> list[bytes]:
        """The held Gemini events without the gateway's calls. An event left without parts is dropped and gives
        its ``finishReason`` and usage to the last one before it that has some (an event without parts spoils the
        chat turn); `LIMIT_NOTE` joins the last event when the model ran out of rounds and nothing showed."""
        if not self.ours:
            return [raw for raw, _ in self.pending]  # the model called the client's tools only: as they came
        kept: list[tuple[bytes, dict[str, Any], list[Any], bool]] = []
        extra: dict[str, Any] = {}
        extra_candidate: dict[str, Any] = {}
        for raw, payload in self.pending:
            given = _candidate_parts(payload)
            parts = gemini_parts_without(given, {self.recall_name})
            if parts:
                kept.append((raw, payload, parts, parts is not given))
                extra, extra_candidate = {}, {}
            else:
                extra.update({k: v for k, v in payload.items() if k != "candidates"})
                extra_candidate.update({k: v for k, v in _candidate(payload).items() if k != "content"})
        if not kept:
            raw, payload = self.pending[-1]
            kept.append((raw, payload, [], True))
        raw, payload, parts, changed = kept[-1]
        if exhausted and (not (self.carried.shown or self.shown) or not parts):
            parts, changed = [*parts, {"text": LIMIT_NOTE}], True
        if extra or extra_candidate:
            payload = {**payload, **extra, "candidates": [{**_candidate(payload), **extra_candidate}]}
            changed = True
        kept[-1] = (raw, payload, parts, changed)
        out = []
        for raw, payload, parts, changed in kept:
            if changed:
                candidate = _candidate(payload)
                raw = _reserialize(raw, _with_candidate(payload, {**candidate, "content": _content(candidate, parts)}))
            out.append(raw)
        return out

    # -- the outcome -------------------------------------------------------------------------------------------

    @property
    def recall_only(self) -> bool:
        """The model called recall and nothing of the client's: the gateway answers and continues."""
        return bool(self.ours) and not self.theirs

    def reply(self) -> dict[str, Any]:
        """The model's turn as a non-streamed reply of this protocol (for `Protocol.calls` / `follow_up`)."""
        name = self.protocol.name
        if name == "responses":
            return self.final or {"output": []}
        if self.protocol.family == "google":
            return {"candidates": [{"content": {"role": "model", "parts": _joined_text(self.parts)}}]}
        if name == "chat_completions":
            calls = [
                {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
                for _, c in sorted(self.calls.items())
            ]
            message = {"role": "assistant", "content": self.text or None, **self.reasoning, "tool_calls": calls or None}
            return {"choices": [{"index": 0, "message": message}]}
        content = []
        for _, block in sorted(self.blocks.items()):
            block = dict(block)
            raw = block.pop("_json", None)
            if raw is not None or block.get("type") == "tool_use":
                # a call's input streams as JSON text: the client's tools', recall's and a server tool's alike
                try:
                    block["input"] = json.loads(raw) if raw else block.get("input") or {}
                except json.JSONDecodeError:
                    block["input"] = {}
            content.append(block)
        return {"role": "assistant", "content": content}

    def our_calls(self) -> list[ToolCall]:
        return [c for c in self.protocol.calls(self.reply()) if c.name == self.recall_name]

    @property
    def _next(self) -> int:
        """The index the client's next block or output item takes (the held recall calls take none)."""
        return self.carried.blocks + len(self.seen - set(self.ours))

    def carry(self) -> Carried:
        """What the next round takes over, once the gateway has answered this round's recall calls."""
        output = self.carried.output
        if self.final is not None:
            output = (*output, *self.protocol.without_calls(self.final, {self.recall_name})["output"])
        return Carried(
            continued=True,
            blocks=self._next,
            sequence=self.sequence or self.carried.sequence,
            response=self.carried.response or self.first or self.final,
            output=output,
            shown=self.carried.shown or self.shown,
        )

    def closing(self, *, exhausted: bool) -> list[bytes]:
        """The held closing events; ``exhausted``: the model called only recall and no round is left, so they
        close a finished turn (`Protocol.out_of_rounds`)."""
        if self.protocol.family == "google":
            return self._gemini_closing(exhausted)
        if not exhausted:
            return self.held
        name = self.protocol.name
        if name == "responses":
            return self._responses_out_of_rounds()
        shown = self.carried.shown or self.shown
        out: list[bytes] = []
        if name == "messages" and not shown:
            out += self._note_block(self._next)
        for raw in self.held:
            event = Event(raw, _data(raw))
            payload = event.json()
            if name == "messages" and isinstance(payload, dict) and payload.get("type") == "message_delta":
                delta = payload.get("delta") or {}
                if delta.get("stop_reason") == "tool_use":
                    raw = _reserialize(raw, {**payload, "delta": {**delta, "stop_reason": "end_turn"}})
            elif name == "chat_completions" and isinstance(payload, dict) and payload.get("choices"):
                raw = _reserialize(raw, {**payload, "choices": [_ended(c, shown) for c in payload["choices"]]})
            out.append(raw)
        return out

    def _note_block(self, index: int) -> list[bytes]:
        """`LIMIT_NOTE` as the events of one Anthropic text block at ``index``."""
        events = [
            {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}},
            {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": LIMIT_NOTE}},
            {"type": "content_block_stop", "index": index},
        ]
        return [_reserialize(f"event: {e['type']}".encode(), e) for e in events]

    def _responses_out_of_rounds(self) -> list[bytes]:
        """The held final event with the whole reply as a finished turn; `LIMIT_MESSAGE`, when it stands in for
        an answer, streamed as an output item first (the SDK accepts a final item it was streamed)."""
        out: list[bytes] = []
        for raw in self.held:
            payload = Event(raw, _data(raw)).json()
            if not (isinstance(payload, dict) and isinstance(self.final, dict)):
                out.append(raw)
                continue
            response = self._whole(self.final, self.protocol.out_of_rounds)
            sequence = payload.get("sequence_number")
            if LIMIT_MESSAGE in response["output"] and isinstance(sequence, int):
                index = self._next
                for kind in ("response.output_item.added", "response.output_item.done"):
                    note = {"type": kind, "sequence_number": sequence, "output_index": index, "item": LIMIT_MESSAGE}
                    out.append(_reserialize(f"event: {kind}".encode(), note))
                    sequence += 1
            out.append(_reserialize(raw, {**payload, "sequence_number": sequence, "response": response}))
        return out


def _ended(choice: Any, shown: bool) -> Any:
    """A Chat finish chunk's choice as the end of a finished turn: ``stop``, with `LIMIT_NOTE` if nothing showed."""
    if not isinstance(choice, dict) or choice.get("finish_reason") != "tool_calls":
        return choice
    delta = dict(choice.get("delta") or {})
    if not shown:
        delta["content"] = LIMIT_NOTE
    return {**choice, "delta": delta, "finish_reason": "stop"}


def _candidate(payload: Mapping[str, Any]) -> dict[str, Any]:
    candidates = payload.get("candidates")
    if isinstance(candidates, list) and candidates and isinstance(candidates[0], dict):
        return candidates[0]
    return {}


def _candidate_parts(payload: Mapping[str, Any]) -> list[Any]:
    content = _candidate(payload).get("content")
    parts = content.get("parts") if isinstance(content, dict) else None
    return parts if isinstance(parts, list) else []


def _content(candidate: Mapping[str, Any], parts: list[Any]) -> dict[str, Any]:
    content = candidate.get("content")
    return {**(content if isinstance(content, dict) else {"role": "model"}), "parts": parts}


def _with_candidate(payload: Mapping[str, Any], candidate: dict[str, Any]) -> dict[str, Any]:
    candidates = payload.get("candidates")
    rest = candidates[1:] if isinstance(candidates, list) else []
    return {**payload, "candidates": [candidate, *rest]}


def _joined_text(parts: list[Any]) -> list[Any]:
    """Streamed Gemini parts as one turn: consecutive plain text parts (or thought parts) joined into one, every
    other part (a signature, a call) as it came."""
    out: list[Any] = []
    for part in parts:
        prev = out[-1] if out else None
        if (
            isinstance(part, dict)
            and isinstance(prev, dict)
            and isinstance(part.get("text"), str)
            and isinstance(prev.get("text"), str)
            and part.keys() == prev.keys()
            and part.keys() <= {"text", "thought"}
            and part.get("thought") == prev.get("thought")
        ):
            out[-1] = {**prev, "text": prev["text"] + part["text"]}
        else:
            out.append(part)
    return out
