"""The one small interface every model backend implements: `LLMRequest` in, `LLMResponse` out.

Summarizers and the graph's `Agent` only ever talk to `LLMClient`, so a provider SDK, a local fake server or a
scripted offline model are interchangeable. The protocol is async-only; `complete` is the single sync entry point
and refuses to run inside an event loop (blocking a loop from within would deadlock or silently serialize work).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .._bridge import run_sync
from ..blocks import ContentBlock, ReasoningBlock, TextBlock, ToolCallBlock
from ..errors import ConfigurationError
from ..messages import Message, TokenUsages


class LLMRequest(BaseModel):
    """Everything a backend needs for one model call, in provider-neutral form.

    ``system`` is kept apart from ``messages`` because every provider places it differently (instructions,
    a top-level ``system`` field, ``system_instruction``); system-role messages inside ``messages`` are left to
    the format converters. ``tools`` are plain JSON-schema specs ``{"name", "description", "parameters"}``.
    """

    model_config = ConfigDict(extra="forbid")

    messages: list[Message] = Field(default_factory=list)
    system: str | None = None
    tools: list[dict[str, Any]] | None = None
    max_output_tokens: int | None = None
    temperature: float | None = None

    @field_validator("tools")
    @classmethod
    def _tools_have_names(cls, tools: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
        for i, spec in enumerate(tools or []):
            if not isinstance(spec.get("name"), str) or not spec["name"]:
                raise ValueError(
                    f"tools[{i}] has no 'name'; each tool spec needs {{'name', 'description', 'parameters'}}",
                )
        return tools

    @field_validator("max_output_tokens")
    @classmethod
    def _positive_budget(cls, value: int | None) -> int | None:
        if value is not None and value <= 0:
            raise ValueError(f"max_output_tokens must be a positive integer or None, got {value}")
        return value


class LLMResponse(BaseModel):
    """One assistant reply: the parsed `Message` (with ``usages``) and the provider's raw JSON for debugging.

    ``message`` is normalised here, once for every client (`as_reply`): whoever reads a response (the `Agent`, a
    summarizer) gets an assistant message whose tool calls are both blocks and their ``tools_calls`` mirror.
    """

    model_config = ConfigDict(extra="forbid")

    message: Message
    raw: dict[str, Any] | None = None

    @field_validator("message")
    @classmethod
    def _as_reply(cls, message: Message) -> Message:
        return as_reply(message)

    @property
    def text(self) -> str:
        return self.message.text()

    @property
    def tool_calls(self) -> list[ToolCallBlock]:
        return self.message.tool_call_blocks()

    @property
    def usages(self) -> TokenUsages:
        return self.message.usages or TokenUsages()


@runtime_checkable
class LLMClient(Protocol):
    """A model backend. Implementations keep one SDK client and reuse it across calls."""

    provider: str
    model: str

    async def acomplete(self, request: LLMRequest) -> LLMResponse: ...


def complete(client: LLMClient, request: LLMRequest) -> LLMResponse:
    """Run ``client.acomplete(request)`` from synchronous code.

    Raises RuntimeError when called from inside a running event loop, because the only ways to block there
    would stall the loop; async callers must ``await client.acomplete(request)`` instead.
    """
    return run_sync(lambda: client.acomplete(request), caller="complete()", instead="await client.acomplete(request)")


def tool_calls_dicts(calls: Sequence[ToolCallBlock]) -> list[dict[str, Any]] | None:
    """The OpenAI-style ``tools_calls`` mirror of tool-call blocks (``None`` when there are none)."""
    if not calls:
        return None
    return [
        {
            "id": call.id,
            "type": "function",
            "function": {"name": call.name, "arguments": json.dumps(call.args, ensure_ascii=False)},
        }
        for call in calls
    ]


def assistant_message(
    content: Sequence[ContentBlock],
    *,
    usages: TokenUsages | None = None,
    raw: dict[str, Any] | None = None,
    metadata: dict[str, Any] | None = None,
) -> Message:
    """Build the assistant `Message` of a reply, with ``tools_calls`` and ``reasoning`` mirrored from the blocks."""
    blocks = list(content)
    calls = [b for b in blocks if isinstance(b, ToolCallBlock)]
    reasoning = "\n".join(b.text for b in blocks if isinstance(b, ReasoningBlock) and b.text) or None
    return Message(
        role="assistant",
        content=blocks,
        tools_calls=tool_calls_dicts(calls),
        reasoning=reasoning,
        usages=usages,
        raw=raw,
        metadata=metadata or {},
    )


def as_reply(message: Message) -> Message:
    """``message`` as the assistant reply of one call: role ``assistant``, and tool calls present both as
    `ToolCallBlock` content and as their ``tools_calls`` mirror (whichever one a client filled in).

    A reply built by `assistant_message` (every built-in client's) already is one and comes back as it is; a
    custom client's reply is completed in place, except for its role, which is changed on a copy.
    """
    if message.role != "assistant":
        message = message.model_copy(update={"role": "assistant"})
    calls = message.tool_call_blocks()
    if calls and not any(isinstance(b, ToolCallBlock) for b in message.content):
        message.content = [*message.content, *calls]
    if calls and not message.tools_calls:
        message.tools_calls = tool_calls_dicts(calls)
    return message


def merge_reply_messages(messages: Sequence[Message]) -> list[ContentBlock]:
    """Flatten the assistant messages a format converter produced for one reply into a single block list.

    Converters may split one provider reply into several messages (e.g. a reasoning item, a text item and
    function-call items); a reply is one turn, so its blocks are joined in order. Calls that exist only in the
    ``tools_calls`` mirror are turned into blocks so nothing the model asked for is lost.
    """
    blocks: list[ContentBlock] = []
    for message in messages:
        if message.role != "assistant":
            continue
        own = list(message.content)
        if message.reasoning and not any(isinstance(b, ReasoningBlock) for b in own):
            blocks.append(ReasoningBlock(text=message.reasoning))
        blocks.extend(own)
        if not any(isinstance(b, ToolCallBlock) for b in own):
            blocks.extend(message.tool_call_blocks())
    return blocks


def has_answer(blocks: Sequence[ContentBlock]) -> bool:
    """True when a reply carries text or a tool call; reasoning alone is not an answer."""
    for block in blocks:
        if isinstance(block, ToolCallBlock):
            return True
        if isinstance(block, TextBlock) and block.text.strip():
            return True
    return False


def check_api_style(api_style: str) -> str:
    if api_style not in ("responses", "chat"):
        raise ConfigurationError(
            f"api_style must be 'responses' or 'chat', got {api_style!r}; "
            "use 'chat' for servers that only offer Chat Completions",
        )
    return api_style
