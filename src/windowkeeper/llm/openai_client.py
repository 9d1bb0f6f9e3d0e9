"""OpenAI backend on the official ``openai`` SDK: the Responses API (default) or Chat Completions.

Chat Completions sends the output budget as ``max_completion_tokens`` by default: it is the field current OpenAI
models (reasoning models included) accept, and ``max_tokens`` is deprecated there. Some OpenAI-compatible servers
only understand the old name, so ``chat_max_tokens_field="max_tokens"`` switches it.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Literal

from ..errors import ConfigurationError, ProviderError
from ..messages import Message, TokenUsages
from ._sdk import SDKClient, as_count, import_sdk, stainless_error
from .client import LLMRequest, LLMResponse, assistant_message, check_api_style, has_answer, merge_reply_messages

if TYPE_CHECKING:
    from openai import AsyncOpenAI

logger = logging.getLogger(__name__)


ChatMaxTokensField = Literal["max_completion_tokens", "max_tokens"]


def _usage_responses(usage: dict[str, Any] | None) -> TokenUsages:
    usage = usage or {}
    cached = as_count((usage.get("input_tokens_details") or {}).get("cached_tokens"))
    reasoning = as_count((usage.get("output_tokens_details") or {}).get("reasoning_tokens"))
    prompt, completion = as_count(usage.get("input_tokens")), as_count(usage.get("output_tokens"))
    return TokenUsages(
        prompt_tokens=prompt,
        completion_tokens=completion,
        total_tokens=as_count(usage.get("total_tokens")) or prompt + completion,
        reasoning_tokens=reasoning,
        cache_read_input_tokens=cached,
    )


def _usage_chat(usage: dict[str, Any] | None) -> TokenUsages:
    usage = usage or {}
    prompt_details = usage.get("prompt_tokens_details") or {}
    completion_details = usage.get("completion_tokens_details") or {}
    prompt, completion = as_count(usage.get("prompt_tokens")), as_count(usage.get("completion_tokens"))
    return TokenUsages(
        prompt_tokens=prompt,
        completion_tokens=completion,
        total_tokens=as_count(usage.get("total_tokens")) or prompt + completion,
        reasoning_tokens=as_count(completion_details.get("reasoning_tokens")),
        cache_read_input_tokens=as_count(prompt_details.get("cached_tokens")),
        audio_tokens=as_count(prompt_details.get("audio_tokens")) + as_count(completion_details.get("audio_tokens")),
    )


def responses_tools(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "name": spec["name"],
            "description": spec.get("description", ""),
            "parameters": spec.get("parameters") or {"type": "object", "properties": {}},
        }
        for spec in tools
    ]


def chat_tools(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {
                "name": spec["name"],
                "description": spec.get("description", ""),
                "parameters": spec.get("parameters") or {"type": "object", "properties": {}},
            },
        }
        for spec in tools
    ]


class OpenAIClient(SDKClient["AsyncOpenAI"]):
    """`LLMClient` for OpenAI and OpenAI-compatible servers.

    The API key comes from ``api_key`` or ``OPENAI_API_KEY``; the endpoint from ``base_url`` or
    ``OPENAI_BASE_URL`` (read by the SDK). One ``AsyncOpenAI`` is kept per event loop and reused for every call.
    """

    provider = "openai"
    api_key_env = ("OPENAI_API_KEY",)
    missing_key_message = "no OpenAI API key: pass api_key=... or set OPENAI_API_KEY"

    def __init__(
        self,
        model: str,
        *,
        api_style: str = "responses",
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 2,
        chat_max_tokens_field: ChatMaxTokensField = "max_completion_tokens",
    ) -> None:
        self._sdk = import_sdk("openai", "openai", "openai")
        super().__init__(model, base_url=base_url, api_key=api_key, timeout=timeout, max_retries=max_retries)
        if chat_max_tokens_field not in ("max_completion_tokens", "max_tokens"):
            raise ConfigurationError(
                f"chat_max_tokens_field must be 'max_completion_tokens' or 'max_tokens', got {chat_max_tokens_field!r}",
            )
        self.api_style = check_api_style(api_style)
        self.chat_max_tokens_field = chat_max_tokens_field

    def __repr__(self) -> str:
        return f"OpenAIClient(model={self.model!r}, api_style={self.api_style!r}, base_url={self.base_url!r})"

    def _make_sdk_client(self) -> AsyncOpenAI:
        client: AsyncOpenAI = self._sdk.AsyncOpenAI(
            api_key=self._resolve_api_key(),
            base_url=self.base_url,
            timeout=self.timeout,
            max_retries=self.max_retries,
        )
        return client

    async def acomplete(self, request: LLMRequest) -> LLMResponse:
        client = await self._clients.get()
        try:
            if self.api_style == "responses":
                raw = await self._call_responses(client, request)
            else:
                raw = await self._call_chat(client, request)
        except (self._sdk.OpenAIError, ValueError) as exc:
            raise stainless_error(
                self._sdk,
                exc,
                call=f"OpenAI {self.api_style} call for model {self.model!r}",
                provider=self.provider,
                timeout=self.timeout,
            ) from exc
        return self._parse_responses(raw) if self.api_style == "responses" else self._parse_chat(raw)

    # -- Responses API -------------------------------------------------------------------------------------

    async def _call_responses(self, client: AsyncOpenAI, request: LLMRequest) -> dict[str, Any]:
        from .formats.openai_responses import to_responses_input

        embedded, items = to_responses_input(
            request.messages, system="instructions", reasoning="signed", passthrough=False
        )
        kwargs: dict[str, Any] = {"model": self.model, "input": items}
        instructions = "\n\n".join(s for s in (request.system, embedded) if s)
        if instructions:
            kwargs["instructions"] = instructions
        if request.max_output_tokens is not None:
            kwargs["max_output_tokens"] = request.max_output_tokens
        if request.temperature is not None:
            kwargs["temperature"] = request.temperature
        if request.tools:
            kwargs["tools"] = responses_tools(request.tools)
        response = await client.responses.create(**kwargs)
        dumped: dict[str, Any] = response.model_dump(mode="json")
        return dumped

    def _parse_responses(self, raw: dict[str, Any]) -> LLMResponse:
        from .formats.openai_responses import from_responses_input

        output = [item for item in raw.get("output") or [] if isinstance(item, dict)]
        status = raw.get("status")
        if status == "failed" or raw.get("error"):
            raise ProviderError(
                f"OpenAI response for model {self.model!r} failed: {raw.get('error')}",
                provider=self.provider,
            )
        messages: list[Message] = from_responses_input(output, keep_source=False) if output else []
        return self._finish(messages, _usage_responses(raw.get("usage")), raw)

    # -- Chat Completions ----------------------------------------------------------------------------------

    async def _call_chat(self, client: AsyncOpenAI, request: LLMRequest) -> dict[str, Any]:
        from .formats.openai_chat import to_openai_chat

        wire = to_openai_chat(request.messages, include_reasoning=False, passthrough=False)
        if request.system is not None:
            wire = [{"role": "system", "content": request.system}, *wire]
        kwargs: dict[str, Any] = {"model": self.model, "messages": wire}
        if request.max_output_tokens is not None:
            kwargs[self.chat_max_tokens_field] = request.max_output_tokens
        if request.temperature is not None:
            kwargs["temperature"] = request.temperature
        if request.tools:
            kwargs["tools"] = chat_tools(request.tools)
        completion = await client.chat.completions.create(**kwargs)
        dumped: dict[str, Any] = completion.model_dump(mode="json")
        return dumped

    def _parse_chat(self, raw: dict[str, Any]) -> LLMResponse:
        from .formats.openai_chat import openai_chat_message_to_message

        choices = raw.get("choices") or []
        if not choices:
            raise ProviderError(f"OpenAI chat reply for model {self.model!r} has no choices", provider=self.provider)
        wire = dict(choices[0].get("message") or {})
        wire.setdefault("role", "assistant")
        wire = {k: v for k, v in wire.items() if v is not None}
        messages = [openai_chat_message_to_message(wire)]
        return self._finish(messages, _usage_chat(raw.get("usage")), raw)

    def _finish(self, messages: list[Message], usages: TokenUsages, raw: dict[str, Any]) -> LLMResponse:
        blocks = merge_reply_messages(messages)
        if not has_answer(blocks):
            raise ProviderError(
                f"OpenAI {self.api_style} reply for model {self.model!r} contains no text and no tool call",
                provider=self.provider,
            )
        meta = {"provider": self.provider, "model": raw.get("model") or self.model, "response_id": raw.get("id")}
        message = assistant_message(blocks, usages=usages, metadata=meta)
        return LLMResponse(message=message, raw=raw)
