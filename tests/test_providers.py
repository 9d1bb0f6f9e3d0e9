"""One provider vocabulary: `validate`, `detect_provider` and `create_client` accept the same names and reject the
same unknown ones with the same `ConfigurationError`."""

from __future__ import annotations

import pytest

from windowkeeper import ConfigurationError, Message
from windowkeeper.llm import create_client, detect_provider
from windowkeeper.providers import PROVIDER_ALIASES, PROVIDERS, normalize_provider
from windowkeeper.units import validate

ASSISTANT_FIRST = [Message.text_message("hello", role="assistant")]


@pytest.mark.parametrize("name", sorted(PROVIDER_ALIASES))
def test_every_accepted_name_means_the_same_provider_everywhere(name: str) -> None:
    canonical = PROVIDER_ALIASES[name]
    assert normalize_provider(name) == normalize_provider(f"  {name.upper()} ") == canonical
    assert detect_provider("some-model", name) == (canonical, "some-model")
    assert detect_provider(f"{name}/some-model") == (canonical, "some-model")
    assert create_client("some-model", name).provider == canonical
    # the first-turn rule applies to Anthropic and Google, whatever they are called
    problems = [p.code for p in validate(ASSISTANT_FIRST, name)]
    assert problems == ([] if canonical == "openai" else ["first_message_not_user"])


@pytest.mark.parametrize("bad", ["bedrock", "gemin", "", "openai-compatible", 3])
def test_an_unknown_provider_is_the_same_configuration_error_everywhere(bad: object) -> None:
    with pytest.raises(ConfigurationError) as from_validate:
        validate([], bad)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError) as from_detect:
        detect_provider("gpt-4o", bad)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError) as from_factory:
        create_client("gpt-4o", bad)  # type: ignore[arg-type]
    messages = {str(from_validate.value), str(from_detect.value), str(from_factory.value)}
    assert messages == {
        str(
            ConfigurationError(
                f"unknown provider {bad!r}; use one of openai, anthropic, google "
                "(aliases: azure, claude, gemini, genai, vertex)"
            )
        )
    }


def test_canonical_names() -> None:
    assert PROVIDERS == ("openai", "anthropic", "google")
    assert set(PROVIDER_ALIASES.values()) == set(PROVIDERS)
