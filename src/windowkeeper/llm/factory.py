"""Build the right `LLMClient` from a model name, so callers never import a provider module themselves."""

from __future__ import annotations

from ..errors import ConfigurationError
from .client import LLMClient, check_api_style
from .detect import detect_provider


def create_client(
    model: str,
    provider: str | None = None,
    *,
    api_style: str = "responses",
    base_url: str | None = None,
    api_key: str | None = None,
    timeout: float = 60.0,
    max_retries: int = 2,
) -> LLMClient:
    """A client for ``model`` on the provider detected from its name (or given explicitly).

    ``api_style`` only changes OpenAI (``"responses"`` or ``"chat"``) but is validated for every provider so a
    typo fails at construction. The provider SDK is imported here: a missing one raises
    `MissingDependencyError` naming the extra to install. No network call and no key check happen until the
    first request.
    """
    style = check_api_style(api_style)
    name, bare = detect_provider(model, provider)
    if name == "openai":
        from .openai_client import OpenAIClient

        return OpenAIClient(
            bare, api_style=style, base_url=base_url, api_key=api_key, timeout=timeout, max_retries=max_retries
        )
    if name == "anthropic":
        from .anthropic_client import AnthropicClient

        return AnthropicClient(bare, base_url=base_url, api_key=api_key, timeout=timeout, max_retries=max_retries)
    if name == "google":
        from .google_client import GoogleClient

        return GoogleClient(bare, base_url=base_url, api_key=api_key, timeout=timeout, max_retries=max_retries)
    raise ConfigurationError(f"no client for provider {name!r}")
