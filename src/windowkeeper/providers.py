"""The one provider vocabulary: which names mean which provider, for every function that takes a provider.

`validate`, `detect_provider` and `create_client` (and everything built on them) accept the same names, map them to
the same canonical provider, and reject anything else with the same `ConfigurationError`. A name that works in one
place therefore works in all of them: ``validate(view, "gemini")`` and ``create_client(model, provider="gemini")``
both mean Google.
"""

from __future__ import annotations

from typing import Literal

from .errors import ConfigurationError

CanonicalProvider = Literal["openai", "anthropic", "google"]
ProviderName = Literal["openai", "azure", "anthropic", "claude", "google", "gemini", "genai", "vertex"]

PROVIDERS: tuple[CanonicalProvider, ...] = ("openai", "anthropic", "google")
"""The canonical names, one per provider wire format family."""

PROVIDER_ALIASES: dict[str, CanonicalProvider] = {
    "openai": "openai",
    "azure": "openai",
    "anthropic": "anthropic",
    "claude": "anthropic",
    "google": "google",
    "gemini": "google",
    "genai": "google",
    "vertex": "google",
}
"""Every accepted name (lower case) and the provider it means."""


def normalize_provider(provider: object) -> CanonicalProvider:
    """The canonical provider for ``provider`` (any accepted name, any case, surrounding spaces ignored).

    Raises `ConfigurationError` naming the bad value and the accepted names.
    """
    key = provider.strip().lower() if isinstance(provider, str) else None
    if key is None or key not in PROVIDER_ALIASES:
        aliases = ", ".join(sorted(set(PROVIDER_ALIASES) - set(PROVIDERS)))
        raise ConfigurationError(
            f"unknown provider {provider!r}; use one of {', '.join(PROVIDERS)} (aliases: {aliases})",
        )
    return PROVIDER_ALIASES[key]


__all__ = ["PROVIDERS", "PROVIDER_ALIASES", "CanonicalProvider", "ProviderName", "normalize_provider"]
