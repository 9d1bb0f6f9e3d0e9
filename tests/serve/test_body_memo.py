"""`BodyMemo`: a body that continues a client's last one parses to exactly what a full parse gives, and only its
new part is parsed; anything else is parsed in full."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from windowkeeper.serve.body_memo import BodyMemo

KEY = ("scope", "chat")


class Counting:
    """`orjson.loads` that remembers the sizes it was asked to parse."""

    def __init__(self) -> None:
        self.sizes: list[int] = []

    def __call__(self, raw: bytes) -> Any:
        self.sizes.append(len(raw))
        return orjson.loads(raw)


def turn(n: int) -> dict[str, Any]:
    return {"role": "user" if n % 2 == 0 else "assistant", "content": f"turn {n} " + "word " * 40}


def test_a_continued_body_parses_only_what_is_new() -> None:
    full = Counting()
    memo = BodyMemo(1 << 20, full)
    items = [turn(n) for n in range(50)]
    for n in range(50, 60):
        raw = json.dumps({"model": "m", "messages": items, "stream": True}).encode()
        assert memo.parse(KEY, raw, "messages") == json.loads(raw)
        items = [*items, turn(n)]
    assert len(full.sizes) == 1 and (memo.hits, memo.misses) == (9, 1)


def test_other_bodies_are_parsed_in_full() -> None:
    full = Counting()
    memo = BodyMemo(1 << 20, full)
    items = [turn(n) for n in range(6)]
    first = json.dumps({"model": "m", "messages": items}).encode()
    memo.parse(KEY, first, "messages")
    edited = json.dumps({"model": "m", "messages": [{**items[0], "content": "changed"}, *items[1:], turn(6)]})
    deep = json.dumps({"model": "m", "messages": [*items[:1], {**items[1], "cache_control": {}}, *items[2:]]})
    repeated = first[:-1] + b', "model": "n", "messages": []}'  # a key repeated after the list: last one wins
    for raw in (edited.encode(), deep.encode(), repeated):
        assert memo.parse(KEY, raw, "messages") == json.loads(raw)
    assert memo.hits == 0 and len(full.sizes) == 4
    other = memo.parse(
        ("another scope", "chat"), json.dumps({"model": "m", "messages": [*items, turn(6)]}).encode(), "messages"
    )
    assert other["messages"][-1] == turn(6) and memo.hits == 0  # another client's bodies are its own


@pytest.mark.parametrize(
    "dumps",
    [
        lambda body: json.dumps(body),
        lambda body: json.dumps(body, ensure_ascii=False, separators=(",", ":")),
        lambda body: orjson.dumps(body).decode(),
        lambda body: json.dumps(body, indent=2),  # a style no cut is found in: every body parsed in full
    ],
)
def test_a_client_moving_its_cache_marks_still_parses_only_what_is_new(dumps: Callable[[Any], str]) -> None:
    """The Anthropic docs advise marking the newest message on every call, so the last item of the previous body
    changes: the memo continues from before that item (and before the one before, for a second mark)."""
    full = Counting()
    memo = BodyMemo(1 << 20, full)
    history = [turn(n) | {"content": [{"type": "text", "text": f'turn {n} é \u2028 "q"'}]} for n in range(30)]
    for n in range(30, 40):
        items = [dict(item) for item in history]
        for item in items[-2:]:
            item["content"] = [{**item["content"][0], "cache_control": {"type": "ephemeral"}}]
        raw = dumps({"model": "m", "max_tokens": 64, "messages": items, "stream": True}).encode()
        assert memo.parse(KEY, raw, "messages") == json.loads(raw)
        history.append(turn(n) | {"content": [{"type": "text", "text": f"turn {n}"}]})
    expected_full = 10 if dumps({"a": [1]}).count("\n") else 1
    assert len(full.sizes) == expected_full


def test_a_shorter_or_unchanged_body_and_lists_under_other_keys() -> None:
    memo = BodyMemo(1 << 20, orjson.loads)
    items = [turn(n) for n in range(4)]
    base = {"input": items, "tools": [{"type": "function", "name": "f", "parameters": {"enum": ["]", "a]"]}}]}
    for body in (base, {**base, "input": items[:2]}, base, {**base, "input": [*items, turn(4)]}, {**base, "input": []}):
        raw = json.dumps(body).encode()
        assert memo.parse(KEY, raw, "input") == body
    assert memo.hits == 3  # the shorter list (a cut of the first), the full one after it, and the one after that
    assert memo.parse(KEY, b'{"input": "a string"}', "input") == {"input": "a string"}


def test_the_bound_holds() -> None:
    memo = BodyMemo(20_000, orjson.loads)
    for scope in range(20):
        memo.parse((str(scope), "chat"), json.dumps({"messages": [turn(n) for n in range(8)]}).encode(), "messages")
    assert memo._bytes <= 20_000
    assert BodyMemo(0, orjson.loads).parse(KEY, b'{"messages": []}', "messages") == {"messages": []}


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(alphabet=' ]["\\,{}:ab\n'),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(alphabet='"]a,', max_size=3), inner, max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=300, deadline=None)
@given(
    head=st.dictionaries(st.sampled_from(["model", "a", "]"]), JSON, max_size=2),
    tail=st.dictionaries(st.sampled_from(["stream", "b", "messages", "model", "[x]"]), JSON, max_size=3),
    old=st.lists(JSON, max_size=4),
    new=st.lists(JSON, max_size=3),
    indent=st.sampled_from([None, 1]),
    compact=st.booleans(),
)
def test_any_body_parses_as_a_full_parse_does(
    head: dict[str, Any], tail: dict[str, Any], old: list[Any], new: list[Any], indent: int | None, compact: bool
) -> None:
    """Whatever the keys around the list hold (brackets and quotes inside strings, nested arrays, the list key
    repeated) and however the list changed, the memo's parse is the full parse."""
    separators = (",", ":") if compact else None
    memo = BodyMemo(1 << 20, orjson.loads)

    def body(items: list[Any]) -> bytes:
        text = (
            "{"
            + ",".join(
                [json.dumps(k) + ":" + json.dumps(v, indent=indent, separators=separators) for k, v in head.items()]
                + [json.dumps("messages") + ":" + json.dumps(items, indent=indent, separators=separators)]
                + [json.dumps(k) + ":" + json.dumps(v, indent=indent, separators=separators) for k, v in tail.items()]
            )
            + "}"
        )
        return text.encode()

    grown = [*old, *new]
    # grown, then grown again, then with its last items replaced (a moved mark) and more added
    for items in (old, grown, [*grown, *new], [*grown[:-2], *new, *new]):
        raw = body(items)
        assert memo.parse(KEY, raw, "messages") == orjson.loads(raw)
