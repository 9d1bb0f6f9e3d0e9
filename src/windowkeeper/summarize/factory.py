"""Pick a summarizer from a name: ``"extractive"`` works offline, anything else is a model name."""

from __future__ import annotations

from typing import Any

from ..errors import ConfigurationError
from .base import Summarizer
from .extractive import ExtractiveSummarizer
from .llm import LLMSummarizer

OFFLINE_NAMES: frozenset[str] = frozenset({"extractive", "offline"})


def get_summarizer(model_or_name: str, *, system_prompt: str | None = None, **client_kwargs: Any) -> Summarizer:
    """`ExtractiveSummarizer` for ``"extractive"``; otherwise an `LLMSummarizer` on ``create_client(model, ...)``.

    ``client_kwargs`` go to `create_client` (``provider``, ``api_style``, ``base_url``, ``api_key``, ``timeout``,
    ``max_retries``); they are rejected for the offline summarizer, which has no client to configure.
    """
    if not isinstance(model_or_name, str) or not model_or_name.strip():
        raise ConfigurationError(
            f"summarizer model must be a model name such as 'gpt-4o-mini' or 'extractive', got {model_or_name!r}",
        )
    if model_or_name.strip().lower() in OFFLINE_NAMES:
        counter = client_kwargs.pop("counter", None)
        ignored = sorted(k for k, v in client_kwargs.items() if v is not None and k != "api_style")
        if ignored:
            raise ConfigurationError(
                f"the extractive summarizer needs no model client; remove {', '.join(ignored)}",
            )
        return ExtractiveSummarizer(counter=counter)
    from ..llm.factory import create_client

    return LLMSummarizer(create_client(model_or_name, **client_kwargs), system_prompt=system_prompt)
