"""The REST-spelling TypedDicts of Gemini's function parts declare every key google-genai's own types have, so a
converter result that carries one (a non-blocking call's ``willContinue``, its ``scheduling``) type-checks as what
it is, and the values the type allows are the SDK's."""

from __future__ import annotations

import typing

import pytest

from windowkeeper.llm.formats.wire import GeminiFunctionResponse

types = pytest.importorskip("google.genai.types")


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(word.title() for word in rest)


def test_a_function_response_declares_every_key_of_google_genais() -> None:
    ours = set(typing.get_type_hints(GeminiFunctionResponse))
    sdk = {_camel(name) for name in types.FunctionResponseDict.__annotations__}
    assert sdk <= ours, sorted(sdk - ours)


def test_a_function_responses_scheduling_values_are_the_sdks() -> None:
    hints = typing.get_type_hints(GeminiFunctionResponse)
    assert set(typing.get_args(hints["scheduling"])) == {member.value for member in types.FunctionResponseScheduling}
    assert hints["willContinue"] is bool
