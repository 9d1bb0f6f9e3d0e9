"""`Message` and `TokenUsages`: one conversation turn and what a provider billed for it.

A message's `fingerprint()` is a hash of everything a model would see of it (role, content, tool calls,
reasoning). It is memoized on the instance and reset whenever a field is assigned, so token counters can cache
per ``(message_id, fingerprint)`` and re-counting a long history costs only the new or changed messages.
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from .blocks import (
    ContentBlock,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    tool_output_text,
)

Role = Literal["user", "assistant", "system", "tool"]
ROLES: tuple[str, ...] = ("user", "assistant", "system", "tool")


class TokenUsages(BaseModel):
    """Token accounting a provider reported for one model call."""

    model_config = ConfigDict(extra="allow")

    completion_tokens: int = 0
    prompt_tokens: int = 0
    total_tokens: int = 0
    reasoning_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    image_tokens: int | None = 0
    audio_tokens: int | None = 0

    def __add__(self, other: TokenUsages) -> TokenUsages:
        return TokenUsages(
            completion_tokens=self.completion_tokens + other.completion_tokens,
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            total_tokens=self.total_tokens + other.total_tokens,
            reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
            cache_creation_input_tokens=self.cache_creation_input_tokens + other.cache_creation_input_tokens,
            cache_read_input_tokens=self.cache_read_input_tokens + other.cache_read_input_tokens,
            image_tokens=(self.image_tokens or 0) + (other.image_tokens or 0),
            audio_tokens=(self.audio_tokens or 0) + (other.audio_tokens or 0),
        )


def _new_id() -> str:
    return uuid.uuid4().hex


_FINGERPRINTED = frozenset({"role", "content", "tools_calls", "reasoning"})


class Message(BaseModel):
    """One turn of a conversation: a role and a list of typed content blocks.

    ``tools_calls`` mirrors the `ToolCallBlock`s in provider-native dict form; the blocks are authoritative.
    Partial streaming chunks carry ``delta=True`` and are never stored by `add_messages`.
    """

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    message_id: str | int = Field(default_factory=_new_id)
    role: Role
    content: list[ContentBlock] = Field(default_factory=list)
    delta: bool = False
    tools_calls: list[dict[str, Any]] | None = None
    reasoning: str | None = None
    timestamp: float | None = Field(default_factory=time.time)
    metadata: dict[str, Any] = Field(default_factory=dict)
    usages: TokenUsages | None = None
    raw: dict[str, Any] | None = None

    _fingerprint: str | None = PrivateAttr(default=None)

    def __setattr__(self, name: str, value: Any) -> None:
        super().__setattr__(name, value)
        if name in _FINGERPRINTED:
            self._fingerprint = None

    # -- constructors -------------------------------------------------------------------------------------

    @classmethod
    def text_message(
        cls,
        text: str,
        role: Role = "user",
        message_id: str | int | None = None,
        **fields: Any,
    ) -> Message:
        """A message holding a single text block."""
        if message_id is not None:
            fields["message_id"] = message_id
        return cls(role=role, content=[TextBlock(text=text)], **fields)

    @classmethod
    def tool_message(
        cls,
        content: Sequence[ContentBlock],
        message_id: str | int | None = None,
        **fields: Any,
    ) -> Message:
        """A ``tool``-role message, normally holding `ToolResultBlock`s."""
        if message_id is not None:
            fields["message_id"] = message_id
        return cls(role="tool", content=list(content), **fields)

    # -- reading ------------------------------------------------------------------------------------------

    def text(self) -> str:
        """Concatenated text of the text blocks and tool results, in block order."""
        parts: list[str] = []
        for block in self.content:
            if isinstance(block, TextBlock):
                parts.append(block.text)
            elif isinstance(block, ToolResultBlock):
                parts.append(tool_output_text(block.output))
        return "".join(parts)

    def tool_call_blocks(self) -> list[ToolCallBlock]:
        """The tool calls this message requests.

        Taken from the content blocks; when a message carries only provider-native ``tools_calls`` dicts
        (OpenAI ``{"id", "function": {"name", "arguments"}}`` or flat ``{"id", "name", "args"}``) those are read.
        """
        blocks = [b for b in self.content if isinstance(b, ToolCallBlock)]
        if blocks or not self.tools_calls:
            return blocks
        out: list[ToolCallBlock] = []
        for raw in self.tools_calls:
            fn = raw.get("function") if isinstance(raw.get("function"), dict) else None
            name = (fn or {}).get("name", raw.get("name"))
            args: Any = (fn or {}).get("arguments", raw.get("args", raw.get("arguments", {})))
            if isinstance(args, str):
                try:
                    args = json.loads(args) if args.strip() else {}
                except json.JSONDecodeError:
                    args = {"_raw": args}
            if raw.get("id") is None or name is None:
                continue
            out.append(ToolCallBlock(id=str(raw["id"]), name=str(name), args=args if isinstance(args, dict) else {}))
        return out

    def tool_call_ids(self) -> list[str]:
        return [b.id for b in self.tool_call_blocks()]

    def tool_result_blocks(self) -> list[ToolResultBlock]:
        return [b for b in self.content if isinstance(b, ToolResultBlock)]

    def reasoning_text(self) -> str:
        """Reasoning from ``reasoning`` and any `ReasoningBlock`s."""
        parts = [self.reasoning] if self.reasoning else []
        parts.extend(b.text for b in self.content if isinstance(b, ReasoningBlock))
        return "\n".join(parts)

    def fingerprint(self) -> str:
        """A stable hash of what a model sees of this message; memoized until a field is reassigned."""
        fp = self._fingerprint
        if fp is None:
            payload = {
                "r": self.role,
                # ``type`` is a default, so it is added back: a text and a reasoning block must not collide
                "c": [{**b.model_dump(mode="json", exclude_defaults=True), "type": b.type} for b in self.content],
                "t": self.tools_calls,
                "z": self.reasoning,
            }
            raw = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
            fp = hashlib.blake2b(raw.encode("utf-8"), digest_size=16).hexdigest()
            self._fingerprint = fp
        return fp

    def with_content(self, content: Sequence[ContentBlock], **changes: Any) -> Message:
        """A copy with other content (same id), as used when a view replaces a message's body."""
        update: dict[str, Any] = {"content": list(content), **changes}
        copy = self.model_copy(update=update)
        copy._fingerprint = None
        return copy


__all__ = ["ROLES", "Message", "Role", "TokenUsages"]
