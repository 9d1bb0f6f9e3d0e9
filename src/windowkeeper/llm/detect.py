"""Which provider serves a model name.

Users pass one string (``"gpt-4o-mini"``, ``"claude-3-5-haiku-latest"``, ``"gemini/gemini-2.0-flash"``); the
provider is read from an explicit prefix first, then from well-known name families. Unknown names go to OpenAI
because most self-hosted and proxy servers speak its wire format. Provider names and aliases are the project-wide
vocabulary of `windowkeeper.providers`.
"""

from __future__ import annotations

import logging

from ..errors import ConfigurationError
from ..providers import PROVIDER_ALIASES, normalize_provider

logger = logging.getLogger(__name__)

_FAMILIES: tuple[tuple[str, str], ...] = (
    ("gemini-", "google"),
    ("gemma-", "google"),
    ("claude-", "anthropic"),
    ("gpt-", "openai"),
    ("chatgpt-", "openai"),
    ("o1", "openai"),
    ("o3", "openai"),
    ("o4", "openai"),
)


def detect_provider(model: str, provider: str | None = None) -> tuple[str, str]:
    """Return ``(provider, bare_model)`` for a model name.

    An explicit ``provider`` argument wins, then a ``provider/`` prefix in the name, then the name family.
    The prefix is stripped from the returned model; an unrecognized prefix (``"meta-llama/..."``) is kept as part
    of the model name because routers such as OpenRouter use slashes in model ids.
    """
    if not isinstance(model, str) or not model.strip():
        raise ConfigurationError(f"model must be a non-empty string such as 'gpt-4o-mini', got {model!r}")
    name = model.strip()
    prefix, sep, rest = name.partition("/")
    if sep and prefix.lower() in PROVIDER_ALIASES and rest:
        prefixed = PROVIDER_ALIASES[prefix.lower()]
        if provider is not None and normalize_provider(provider) != prefixed:
            raise ConfigurationError(
                f"model {model!r} names provider {prefixed!r} but provider={provider!r} was given; drop one",
            )
        return prefixed, rest
    if provider is not None:
        return normalize_provider(provider), name
    lowered = name.lower()
    for start, family in _FAMILIES:
        if lowered.startswith(start):
            return family, name
    logger.debug("model %r matches no known family; assuming an OpenAI-compatible server", name)
    return "openai", name
