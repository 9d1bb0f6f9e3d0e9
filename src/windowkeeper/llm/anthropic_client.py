"""Anthropic backend on the official ``anthropic`` SDK (``messages.create``).

Anthropic requires an output budget on every call, so requests without ``max_output_tokens`` use
``default_max_tokens``. Reported usage is normalized to the OpenAI convention: ``prompt_tokens`` is the whole
prompt (uncached input + cache writes + cache reads), because Anthropic's ``input_tokens`` excludes cached tokens
and token calibration compares against the full prompt size.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from ..errors import ConfigurationError, ProviderError
from ..messages import TokenUsages
from ._sdk import SDKClient, as_count, import_sdk, stainless_error
from .client import LLMRequest, LLMResponse, assistant_message, has_answer, merge_reply_messages

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic

logger = logging.getLogger(__name__)


def anthropic_usage(usage: dict[str, Any] | None) -> TokenUsages:
    usage = usage or {}
    uncached = as_count(usage.get("input_tokens"))
    written = as_count(usage.get("cache_creation_input_tokens"))
    read = as_count(usage.get("cache_read_input_tokens"))
    output = as_count(usage.get("output_tokens"))
    prompt = uncached + written + read
    return TokenUsages(
        prompt_tokens=prompt,
        completion_tokens=output,
        total_tokens=prompt + output,
        cache_creation_input_tokens=written,
        cache_read_input_tokens=read,
    )


def anthropic_tools(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "name": spec["name"],
            "description": spec.get("description", ""),
            "input_schema": spec.get("parameters") or {"type": "object", "properties": {}},
        }
        for spec in tools
    ]


class AnthropicClient(SDKClient["AsyncAnthropic"]):
    """`LLMClient` for Anthropic's Messages API.

    The key comes from ``api_key`` or ``ANTHROPIC_API_KEY``; ``base_url`` falls back to ``ANTHROPIC_BASE_URL``
    (read by the SDK). One ``AsyncAnthropic`` is kept per event loop and reused.
    """

    provider = "anthropic"
    api_key_env = ("ANTHROPIC_API_KEY",)
    missing_key_message = "no Anthropic API key: pass api_key=... or set ANTHROPIC_API_KEY"

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 2,
        default_max_tokens: int = 4096,
    ) -> None:
        self._sdk = import_sdk("anthropic", "anthropic", "anthropic")
        super().__init__(model, base_url=base_url, api_key=api_key, timeout=timeout, max_retries=max_retries)
        if not isinstance(default_max_tokens, int) or default_max_tokens <= 0:
            raise ConfigurationError(f"default_max_tokens must be a positive integer, got {default_max_tokens!r}")
        self.default_max_tokens = default_max_tokens

    def _make_sdk_client(self) -> AsyncAnthropic:
        client: AsyncAnthropic = self._sdk.AsyncAnthropic(
            api_key=self._resolve_api_key(),
            base_url=self.base_url,
            timeout=self.timeout,
            max_retries=self.max_retries,
        )
        return client

    def build_kwargs(self, request: LLMRequest) -> dict[str, Any]:
        """The keyword arguments of ``messages.create`` for a request."""
        from .formats.anthropic import to_anthropic

        embedded_system, wire = to_anthropic(request.messages, reasoning="signed", passthrough=False)
        system = "\n\n".join(s for s in (request.system, embedded_system) if s)
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": wire,
            "max_tokens": request.max_output_tokens or self.default_max_tokens,
        }
        if system:
            kwargs["system"] = system
        if request.temperature is not None:
            kwargs["temperature"] = request.temperature
        if request.tools:
            kwargs["tools"] = anthropic_tools(request.tools)
        return kwargs

    async def acomplete(self, request: LLMRequest) -> LLMResponse:
        client = await self._clients.get()
        kwargs = self.build_kwargs(request)
        try:
            reply = await client.messages.create(**kwargs)
        except (self._sdk.AnthropicError, ValueError) as exc:
            raise stainless_error(
                self._sdk,
                exc,
                call=f"Anthropic call for model {self.model!r}",
                provider=self.provider,
                timeout=self.timeout,
            ) from exc
        raw: dict[str, Any] = reply.model_dump(mode="json")
        return self._parse(raw)

    def _parse(self, raw: dict[str, Any]) -> LLMResponse:
        from .formats.anthropic import anthropic_blocks_to_message

        content = [block for block in raw.get("content") or [] if isinstance(block, dict)]
        messages = [anthropic_blocks_to_message(content)] if content else []
        blocks = merge_reply_messages(messages)
        if not has_answer(blocks):
            raise ProviderError(
                f"Anthropic reply for model {self.model!r} contains no text and no tool call "
                f"(stop_reason={raw.get('stop_reason')!r})",
                provider=self.provider,
            )
        meta = {"provider": self.provider, "model": raw.get("model") or self.model, "response_id": raw.get("id")}
        message = assistant_message(blocks, usages=anthropic_usage(raw.get("usage")), metadata=meta)
        return LLMResponse(message=message, raw=raw)
