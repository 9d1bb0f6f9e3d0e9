"""Each new item is walked fewer times by its reader, with the same result (issue 19, the read side).

Three steps of reading an item stand in for the ones they replace: the canonical JSON a derived id hashes is kept as
the serializer's bytes (not decoded to text and encoded again with the id's head), an item that canonical JSON
showed to be plain ASCII JSON is kept in its source record as it is (without `clean_json`'s walk, which returns
such an item unchanged), and the Chat reader's tool calls of ASCII strings are not walked again by
`read_message`. Ids and source records are stored and compared on every call, so each is compared here with the
step it replaces over odd values, every kind of string and generated payloads.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from windowkeeper.boundary import clean_json
from windowkeeper.llm.formats import _source
from windowkeeper.llm.formats._common import (
    _canonical_bytes,
    _derived_id_bytes,
    canonical_json,
    derived_id,
    plain,
)
from windowkeeper.llm.formats.openai_chat import _parse_tool_calls, from_openai_chat
from windowkeeper.llm.formats.registry import get_format

_TEXT = st.text(st.characters(codec="utf-8") | st.sampled_from(["\x00", "\x1f", "\x7f", "\u2028", "\ud83d", "\udc00"]))
_ASCII = st.text(st.characters(max_codepoint=127))
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.integers(min_value=2**63, max_value=2**90) | st.floats() | _TEXT,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(_TEXT | _ASCII, children, max_size=4),
    max_leaves=20,
)


class _Str(str):
    pass


_ODD: list[Any] = [
    {"role": "tool", "content": "ok", "tool_call_id": "c1"},
    {"role": "user", "content": "caf\u00e9"},  # not ASCII: cleaned as before
    {"role": "user", "content": "\ud83d half an emoji"},  # a lone surrogate: the standard encoder, surrogates passed
    {"n": 1e16, "m": 0.1},
    {"t": (1, 2)},
    {"big": 2**70},
    {1: "int key"},
    {"s": _Str("a str subclass")},
    {"deep": json.loads("[" * 100 + "]" * 100)},
    {"k\u00e9y": "value"},
    {},
    [{"role": "user", "content": "a list source"}],
    "a string",
]


def _check(obj: Any) -> None:
    payload, clean = _canonical_bytes(obj)
    text = canonical_json(obj)
    assert payload == text.encode("utf-8", "surrogatepass")
    if clean:
        assert clean_json(plain(obj)) is obj
    for previous in (None, "wkm_0123", "caf\u00e9 \ud83d"):
        for index, part in ((0, 0), (17, 2), (-1, 0)):
            assert _derived_id_bytes(payload, index, part, previous) == derived_id(text, index, part, previous)


@pytest.mark.parametrize("obj", _ODD)
def test_odd_payloads_give_the_same_id_and_cleaning(obj: Any) -> None:
    _check(obj)


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(_TEXT | _ASCII, _JSON, max_size=5))
def test_generated_payloads_give_the_same_id_and_cleaning(obj: dict[Any, Any]) -> None:
    _check(obj)


def test_a_plain_ascii_item_is_not_walked_again_for_its_record(monkeypatch: pytest.MonkeyPatch) -> None:
    walked: list[Any] = []
    real = _source.clean_json

    def counting(value: Any, **kwargs: Any) -> Any:
        walked.append(value)
        return real(value, **kwargs)

    monkeypatch.setattr(_source, "clean_json", counting)
    items = [
        {"role": "user", "content": "run the tests"},
        {"role": "tool", "content": "caf\u00e9", "tool_call_id": "c1"},
    ]
    messages = get_format("openai_chat").read(items)
    assert walked == [items[1]]  # only the item with a non-ASCII string is cleaned for its record
    records = [m.raw[_source.SOURCE_KEY]["items"] for m in messages]  # type: ignore[index]
    assert records[0] == [items[0]] and records[0][0] is items[0]
    assert records[1] == [clean_json(items[1])]


def _chat_calls(strings: list[Any]) -> list[dict[str, Any]]:
    a, b, c, d = strings
    return [
        {"id": a, "type": "function", "function": {"name": b, "arguments": c}},
        {"id": b, "type": "custom", "custom": {"name": a, "input": d}},
        {"id": d or "x", "type": c or None, "function": {"name": a or "f", "arguments": "{}"}},
    ]


@settings(max_examples=300, deadline=None)
@given(st.lists(_TEXT | _ASCII | st.just("{}") | st.builds(_Str, _ASCII), min_size=4, max_size=4))
def test_tool_calls_are_kept_as_cleaning_them_gives(strings: list[Any]) -> None:
    a, b, c, d = strings
    strings = [a or "i", b or "n", c if c.strip().startswith("{") else json.dumps({"q": c}), d]
    calls = _chat_calls(strings)
    try:
        _, native, clean = _parse_tool_calls(calls, index=0)
    except Exception:
        return  # refused as before: nothing kept
    if clean:
        assert clean_json(native) is native
    (message,) = from_openai_chat([{"role": "assistant", "content": None, "tool_calls": calls}])
    assert message.tools_calls == clean_json(native)
    assert "tools_calls" in message.model_fields_set


def _validated(message: Any) -> Any:
    """``message`` built again through pydantic's validation from the fields it has set (as the readers did)."""
    from windowkeeper.messages import Message

    fields = {name: message.__dict__[name] for name in message.model_fields_set}
    if "content" in fields:
        fields["content"] = list(fields["content"])
    return Message(**fields)


@pytest.mark.parametrize("fmt", ["openai_chat", "openai_responses", "anthropic", "gemini", "langchain"])
def test_messages_built_without_validation_are_the_validated_ones(fmt: str) -> None:
    import sys
    from pathlib import Path

    from windowkeeper.messages import BlockList

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    from _common import build_history

    history = build_history(300, seed=11)
    extra = [
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "caf\u00e9"},
                {
                    "type": "tool_result",
                    "tool_use_id": "t2",
                    "content": [
                        {"type": "text", "text": "shot"},
                        {
                            "type": "image",
                            "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
                        },
                    ],
                    "is_error": True,
                },
                {"type": "text", "text": "and more"},
            ],
        },
    ]
    form = get_format(fmt)
    items, _ = form.write(None, history, passthrough=False)
    if fmt == "anthropic":
        items = [*items, *extra]
    for message in form.read(items):
        again = _validated(message)
        assert message.model_fields_set == again.model_fields_set
        for name in type(message).model_fields:
            if name in ("timestamp", "raw"):  # the clock; the source record, set apart by `keep_source`
                continue
            assert message.__dict__[name] == again.__dict__[name], name
            assert type(message.__dict__[name]) is type(again.__dict__[name]), name
        assert type(message.content) is BlockList
        assert message.fingerprint() == again.fingerprint()
