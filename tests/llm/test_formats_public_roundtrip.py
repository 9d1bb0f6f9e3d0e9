"""The public converter pairs keep what the caller sent (issue 19): ``to_X(from_X(items)) == items``.

The registry's format objects and `Window.fit` passed unchanged items through, but ``from_X`` kept no source, so
``to_X(from_X(items))`` (the pair a user reaches for first) dropped every key the `Message` model lacks, silently,
even with ``passthrough=True``. The documented shapes are the ones `test_formats_passthrough` holds the format
objects to.
"""

from __future__ import annotations

import copy
import warnings
from typing import Any

import pytest

from windowkeeper.blocks import TextBlock
from windowkeeper.llm.formats import (
    from_anthropic,
    from_gemini,
    from_langchain,
    from_openai_chat,
    from_responses_input,
    to_anthropic,
    to_gemini,
    to_langchain,
    to_openai_chat,
    to_responses_input,
)
from windowkeeper.messages import Message

from .test_formats_passthrough import CHAT_ITEMS, FORMATS, documented


def _round_trip(fmt: str, items: list[Any], system: Any = None) -> tuple[Any, list[Any]]:
    """``(system, items)`` through the public pair of ``fmt`` with its default arguments."""
    if fmt == "openai_chat":
        return None, list(to_openai_chat(from_openai_chat(items)))
    if fmt == "openai_responses":
        if system is None:
            return to_responses_input(from_responses_input(items))
        return to_responses_input(from_responses_input(items, system), system="instructions")
    if fmt == "anthropic":
        return to_anthropic(from_anthropic(system, items))
    if fmt == "gemini":
        return to_gemini(from_gemini(system, items))
    return None, list(to_langchain(from_langchain(items)))


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_public_pair_gives_the_documented_shapes_back(fmt: str) -> None:
    items = documented(fmt)
    before = copy.deepcopy(items) if fmt != "langchain" else None
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing is lost, so nothing is said
        system, written = _round_trip(fmt, items)
    assert written == items
    assert system is None
    if before is not None:
        assert items == before  # the caller's items are never edited


@pytest.mark.parametrize(
    ("fmt", "system", "expected"),
    [
        ("openai_responses", "Be kind.", "Be kind."),
        ("anthropic", "Be kind.", "Be kind."),
        ("gemini", {"parts": [{"text": "Be kind."}]}, {"parts": [{"text": "Be kind."}]}),
    ],
)
def test_the_system_read_beside_the_items_comes_back_beside_them(fmt: str, system: Any, expected: Any) -> None:
    items = documented(fmt)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out_system, written = _round_trip(fmt, items, system)
    assert written == items
    assert out_system == expected


def test_an_unknown_key_survives_the_chat_pair() -> None:
    items = [{"role": "user", "content": "hi", "x_k": 1}]
    assert to_openai_chat(from_openai_chat(items)) == items


def _changed(messages: list[Message], index: int) -> list[Message]:
    """``messages`` with message ``index``'s text replaced (its source record kept, as an edit leaves it)."""
    out = list(messages)
    out[index] = messages[index].model_copy(update={"content": [TextBlock(text="edited")]})
    return out


def test_a_changed_message_is_written_anew_and_the_others_pass_through() -> None:
    messages = from_openai_chat(CHAT_ITEMS)
    written = to_openai_chat(_changed(messages, 3))
    assert written[3] == {"role": "user", "content": "edited"}
    assert [w for k, w in enumerate(written) if k != 3] == [c for k, c in enumerate(CHAT_ITEMS) if k != 3]


def test_a_changed_anthropic_turn_is_written_anew() -> None:
    items = [
        {"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}]},
        {"role": "assistant", "content": "hello", "x_k": 1},
    ]
    _system, written = to_anthropic(_changed(from_anthropic(None, items), 0))
    assert written[0]["content"] != items[0]["content"]
    assert "edited" in str(written[0]["content"])
    assert written[1] == items[1]


def test_passthrough_false_still_writes_windowkeepers_own_shape() -> None:
    items = [{"role": "user", "content": "hi", "x_k": 1}]
    assert to_openai_chat(from_openai_chat(items), passthrough=False) == [{"role": "user", "content": "hi"}]


def test_keep_source_false_reads_as_before() -> None:
    items = [{"role": "user", "content": "hi", "x_k": 1}]
    assert to_openai_chat(from_openai_chat(items, keep_source=False)) == [{"role": "user", "content": "hi"}]


def test_converting_between_formats_with_the_public_functions_warns_naming_what_is_lost() -> None:
    # a text of its own: a source is reported once per target, and other tests convert `CHAT_ITEMS` too
    item = {**CHAT_ITEMS[1], "content": [{"type": "text", "text": "Whose is this?"}, *CHAT_ITEMS[1]["content"][1:]]}
    with pytest.warns(UserWarning, match=r"image_url\.detail"):
        to_anthropic(from_openai_chat([item]))
