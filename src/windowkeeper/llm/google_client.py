"""Google Gemini backend on the official ``google-genai`` SDK (``aio.models.generate_content``).

The SDK takes its timeout in milliseconds and retries only when ``retry_options`` are given, so both are set
explicitly from the seconds / retry count every windowkeeper client accepts. Gemini counts thinking tokens
apart from candidate tokens; ``completion_tokens`` adds them back so it means the same as OpenAI's.
"""

from __future__ import annotations

import logging
import uuid
from typing import TYPE_CHECKING, Any

from ..errors import ProviderError
from ..messages import TokenUsages
from ._sdk import SDKClient, as_count, import_sdk
from .client import LLMRequest, LLMResponse, assistant_message, has_answer, merge_reply_messages

if TYPE_CHECKING:
    from google.genai import Client as GenAIClient

    from .formats.wire import GeminiContent, GeminiSystemInstruction

logger = logging.getLogger(__name__)


def gemini_usage(meta: dict[str, Any] | None) -> TokenUsages:
    meta = meta or {}
    prompt = as_count(meta.get("promptTokenCount")) + as_count(meta.get("toolUsePromptTokenCount"))
    thoughts = as_count(meta.get("thoughtsTokenCount"))
    completion = as_count(meta.get("candidatesTokenCount")) + thoughts
    return TokenUsages(
        prompt_tokens=prompt,
        completion_tokens=completion,
        total_tokens=as_count(meta.get("totalTokenCount")) or prompt + completion,
        reasoning_tokens=thoughts,
        cache_read_input_tokens=as_count(meta.get("cachedContentTokenCount")),
    )


def gemini_function_declarations(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Tool specs as Gemini function declarations, passing the JSON schema through unchanged."""
    return [
        {
            "name": spec["name"],
            "description": spec.get("description", ""),
            "parameters_json_schema": spec.get("parameters") or {"type": "object", "properties": {}},
        }
        for spec in tools
    ]


def _system_text(system_instruction: GeminiSystemInstruction | None) -> str | None:
    if not system_instruction:
        return None
    texts = [p["text"] for p in system_instruction["parts"] if p.get("text")]
    return "\n\n".join(texts) or None


class GoogleClient(SDKClient["GenAIClient"]):
    """`LLMClient` for the Gemini Developer API.

    The key comes from ``api_key``, ``GEMINI_API_KEY`` or ``GOOGLE_API_KEY``; ``base_url`` falls back to the
    SDK's own ``GOOGLE_GEMINI_BASE_URL``. One ``genai.Client`` is kept per event loop and reused. The API version
    is pinned (``v1beta`` by default, where system instructions, function calling and thinking are all available)
    rather than left to the SDK default, which has changed between SDK releases.
    """

    provider = "google"
    api_key_env = ("GEMINI_API_KEY", "GOOGLE_API_KEY")
    missing_key_message = "no Gemini API key: pass api_key=... or set GEMINI_API_KEY (or GOOGLE_API_KEY)"

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 2,
        api_version: str = "v1beta",
    ) -> None:
        self._genai = import_sdk("google.genai", "google-genai", "google")
        self._types = import_sdk("google.genai.types", "google-genai", "google")
        self._errors = import_sdk("google.genai.errors", "google-genai", "google")
        super().__init__(model, base_url=base_url, api_key=api_key, timeout=timeout, max_retries=max_retries)
        self.api_version = api_version

    @staticmethod
    async def _close_sdk_client(client: Any) -> None:
        await client.aio.aclose()

    def _make_sdk_client(self) -> GenAIClient:
        api_key = self._resolve_api_key()
        options: dict[str, Any] = {
            "timeout": max(1, int(self.timeout * 1000)),
            "retry_options": self._types.HttpRetryOptions(attempts=self.max_retries + 1),
            "api_version": self.api_version,
        }
        if self.base_url is not None:
            options["base_url"] = self.base_url
        client: GenAIClient = self._genai.Client(api_key=api_key, http_options=self._types.HttpOptions(**options))
        return client

    def build_call(self, request: LLMRequest) -> tuple[list[GeminiContent], dict[str, Any]]:
        """``(contents, config)`` for ``generate_content``; config as a plain dict of GenerateContentConfig fields."""
        from .formats.gemini import to_gemini

        system_instruction, contents = to_gemini(request.messages, reasoning="signed", passthrough=False)
        system = "\n\n".join(s for s in (request.system, _system_text(system_instruction)) if s)
        config: dict[str, Any] = {}
        if system:
            config["system_instruction"] = system
        if request.max_output_tokens is not None:
            config["max_output_tokens"] = request.max_output_tokens
        if request.temperature is not None:
            config["temperature"] = request.temperature
        if request.tools:
            config["tools"] = [{"function_declarations": gemini_function_declarations(request.tools)}]
            config["automatic_function_calling"] = {"disable": True}
        return contents, config

    async def acomplete(self, request: LLMRequest) -> LLMResponse:
        client = await self._clients.get()
        contents, config = self.build_call(request)
        try:
            reply = await client.aio.models.generate_content(
                model=self.model,
                contents=[self._types.Content.model_validate(item) for item in contents],
                config=self._types.GenerateContentConfig(**config),
            )
        except self._errors.APIError as exc:
            raise ProviderError(
                f"Gemini call for model {self.model!r} failed with HTTP {exc.code}: {exc}",
                provider=self.provider,
                status_code=exc.code if isinstance(exc.code, int) else None,
            ) from exc
        except Exception as exc:  # the SDK lets transport errors (timeouts, resets) through unwrapped
            what = "timed out" if "timeout" in type(exc).__name__.lower() else f"failed: {exc!r}"
            raise ProviderError(
                f"Gemini call for model {self.model!r} {what}",
                provider=self.provider,
            ) from exc
        raw: dict[str, Any] = reply.model_dump(mode="json", by_alias=True, exclude_none=True)
        return self._parse(raw)

    def _parse(self, raw: dict[str, Any]) -> LLMResponse:
        from .formats.gemini import gemini_content_to_messages

        candidates = raw.get("candidates") or []
        content = (candidates[0].get("content") or {}) if candidates else {}
        parts = [p for p in content.get("parts") or [] if isinstance(p, dict)]
        prefix = f"call_{uuid.uuid4().hex[:12]}"
        messages = gemini_content_to_messages({"role": "model", "parts": parts}, id_prefix=prefix) if parts else []
        blocks = merge_reply_messages(messages)
        if not has_answer(blocks):
            reason = candidates[0].get("finishReason") if candidates else "no candidates"
            raise ProviderError(
                f"Gemini reply for model {self.model!r} contains no text and no tool call (finish reason {reason})",
                provider=self.provider,
            )
        meta = {
            "provider": self.provider,
            "model": raw.get("modelVersion") or self.model,
            "response_id": raw.get("responseId"),
        }
        message = assistant_message(blocks, usages=gemini_usage(raw.get("usageMetadata")), metadata=meta)
        return LLMResponse(message=message, raw=raw)
