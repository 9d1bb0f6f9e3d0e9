"""The window re-reads only the new tail of a growing list, with exactly the result of reading it whole."""

from __future__ import annotations

from typing import Any

import pytest

from windowkeeper.integrations._formats import (
    WINDOW_FORMATS,
    ReadCache,
    read_messages,
    read_messages_cached,
    same_prefix,
)
from windowkeeper.llm.formats import to_anthropic, to_gemini, to_langchain, to_openai_chat, to_responses_input
from windowkeeper.messages import Message
from windowkeeper.testing.sessiongen import generate_session

SESSION = generate_session(14, seed=4).messages[1:]


def _items(fmt: str) -> list[Any]:
    if fmt == "openai_chat":
        return to_openai_chat(SESSION)
    if fmt == "openai_responses":
        return to_responses_input(SESSION)[1]
    if fmt == "anthropic":
        return to_anthropic(SESSION)[1]
    if fmt == "gemini":
        return to_gemini(SESSION)[1]
    return to_langchain(SESSION)


def _key(messages: list[Message]) -> list[tuple[str | int, str]]:
    return [(m.message_id, m.fingerprint()) for m in messages]


@pytest.mark.parametrize("fmt", WINDOW_FORMATS)
def test_every_growth_step_reads_like_the_whole_list(fmt: Any) -> None:
    items = _items(fmt)
    cache: ReadCache | None = None
    for k in range(1, len(items) + 1):  # every possible boundary, mid-turn ones included
        cached, cache = read_messages_cached(fmt, items[:k], cache)
        assert _key(cached) == _key(read_messages(fmt, items[:k])), k


@pytest.mark.parametrize("fmt", ["openai_chat", "anthropic"])
@pytest.mark.parametrize("where", ["first", "near the end"])
def test_a_replaced_item_at_a_checked_point_is_read_again_and_so_is_everything_after_it(fmt: Any, where: str) -> None:
    items = _items(fmt)
    index = 0 if where == "first" else len(items) - 3
    _, cache = read_messages_cached(fmt, items, None)
    edited = list(items)
    edited[index] = {**items[index], "content": "an edited message"}
    cached, _ = read_messages_cached(fmt, edited, cache)
    assert _key(cached) == _key(read_messages(fmt, edited))
    assert _key(cached)[:index] == _key(read_messages(fmt, items))[:index]
    assert _key(cached)[index + 1 :] != _key(read_messages(fmt, items))[index + 1 :]


def test_the_prefix_is_recognized_by_log_spaced_points_not_by_a_pass_over_it() -> None:
    """What the boundary check compares: the last items before the boundary and log-spaced ones back to the first
    (a replacement between them is the documented blind spot: start the thread over to rewrite history)."""
    known = list(range(100))
    compared: list[int] = []

    class Probe(list[int]):
        def __getitem__(self, index: Any) -> Any:
            compared.append(index)
            return super().__getitem__(index)

    assert same_prefix(Probe(known), known, 100)
    assert compared == [99, 98, 97, 96, 95, 93, 89, 81, 65, 33, 0]
    assert not same_prefix([*known[:95], -1, *known[96:]], known, 100)
    assert not same_prefix(known[:50], known, 100)


def test_a_shorter_list_is_read_from_the_last_point_it_shares() -> None:
    items = _items("openai_chat")
    _, cache = read_messages_cached("openai_chat", items[:10], None)
    _, cache = read_messages_cached("openai_chat", items[:20], cache)
    cached, _ = read_messages_cached("openai_chat", items[:15], cache)
    assert _key(cached) == _key(read_messages("openai_chat", items[:15]))
