"""Server-sent events: split a byte stream into events, read usage from them, and keep the gateway's own tool
calls out of what the client receives.

A stream is relayed as it arrives. When the gateway offered the model its recall tool, each event is looked at as
it passes: the events of a call to that tool are held back (the client never sees a tool it did not define), calls
to the client's own tools are relayed at once with their index shifted over the held ones, and, once a recall call
has been seen, the closing events wait until the stream ends. Then either the model called only recall (the gateway
answers and continues the conversation upstream) or it also called the client's tools (the closing events are
relayed, without the recall calls).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from .protocols import REASONING_KEYS, Protocol, ToolCall


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


@dataclass
class CallFilter:
    """Per-event decisions for one streamed reply (see the module docstring)."""

    protocol: Protocol
    recall_name: str
    ours: list[int] = field(default_factory=list)
    theirs: int = 0
    held: list[bytes] = field(default_factory=list)
    text: str = ""
    reasoning: dict[str, str] = field(default_factory=dict)
    """Reasoning streamed beside the text, by the key it came under (``reasoning_content``, ``reasoning``)."""
    calls: dict[int, dict[str, str]] = field(default_factory=dict)
    blocks: dict[int, dict[str, Any]] = field(default_factory=dict)
    final: dict[str, Any] | None = None

    def _shift(self, index: int) -> int:
        return index - sum(1 for i in self.ours if i < index)

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
        return self._messages(event, payload)

    # -- Chat Completions chunks -------------------------------------------------------------------------------

    def _chat(self, event: Event, payload: dict[str, Any]) -> list[bytes]:
        choices = payload.get("choices") or []
        choice = choices[0] if choices and isinstance(choices[0], dict) else {}
        delta = choice.get("delta") or {}
        if isinstance(delta.get("content"), str):
            self.text += delta["content"]
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
                if index not in self.ours:
                    kept.append({**entry, "index": self._shift(index)})
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
        if kind in ("response.completed", "response.incomplete", "response.failed"):
            response = payload.get("response")
            self.final = response if isinstance(response, dict) else None
            if self.ours:
                if isinstance(response, dict):
                    payload = {**payload, "response": self.protocol.without_calls(response, {self.recall_name})}
                self.held.append(_reserialize(event.raw, payload))
                return []
            return [event.raw]
        index = payload.get("output_index")
        if not isinstance(index, int):
            return [event.raw]
        item = payload.get("item")
        if kind == "response.output_item.added" and isinstance(item, dict) and item.get("type") == "function_call":
            if item.get("name") == self.recall_name:
                self.ours.append(index)
            else:
                self.theirs += 1
        if index in self.ours:
            return []
        if self.ours:
            return [_reserialize(event.raw, {**payload, "output_index": self._shift(index)})]
        return [event.raw]

    # -- Anthropic message events ------------------------------------------------------------------------------

    def _messages(self, event: Event, payload: dict[str, Any]) -> list[bytes]:
        kind = payload.get("type")
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
            if block.get("type") == "tool_use":
                if block.get("name") == self.recall_name:
                    self.ours.append(index)
                else:
                    self.theirs += 1
        elif kind == "content_block_delta":
            self._grow(index, payload.get("delta") or {})
        if index in self.ours:
            return []
        if self.ours:
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
