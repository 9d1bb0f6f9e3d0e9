"""The readers' fast paths give exactly what the paths they stand in for give.

`Window.fit` reads each new item of the caller's list once, and three steps of that read were rebuilt for speed
(issue 19): a payload's canonical JSON (the text a derived message id hashes) is written by pydantic's serializer
after putting the keys in order, tool call and result blocks are built without pydantic's validation pass, and a
pointer written anew is told from a tool output cut to fit without reading the caller's item again. An id, a
block or a refill that differed would change what is sent, so each is compared here with the standard path over
every code point, odd values and generated payloads.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from windowkeeper.blocks import ToolCallBlock, ToolResultBlock
from windowkeeper.llm.formats._common import _CANONICAL, call_block, canonical_json, result_block
from windowkeeper.llm.formats.registry import ProviderFormat, get_format

_TEXT = st.text(st.characters(codec="utf-8") | st.sampled_from(["\x00", "\x1f", "\x7f", "\u2028", "\ud83d", "\udc00"]))
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.integers(min_value=2**63, max_value=2**90) | st.floats() | _TEXT,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(_TEXT, children, max_size=4),
    max_leaves=20,
)


def _standard(obj: dict[str, Any]) -> str:
    try:
        return _CANONICAL.encode(obj)
    except (TypeError, ValueError):
        return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=repr)


def test_every_code_point_is_written_as_the_standard_encoder_writes_it() -> None:
    text = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF)
    item = {"role": "tool", "content": text, text[:300]: [text[-100:], 1, True, None]}
    assert canonical_json(item) == _CANONICAL.encode(item)


@pytest.mark.parametrize(
    "item",
    [
        {"z": 1, "a": {"y": [2**70, -(2**64), False, None], "b": "x"}},
        {"n": 1e16, "m": 0.1},  # floats: the standard encoder (``1e+16``)
        {"s": "\ud83d half an emoji"},  # a lone surrogate: pydantic refuses it, the standard encoder writes it
        {"t": (1, 2)},  # a tuple: written as a list either way
        {"deep": json.loads("[" * 100 + "]" * 100)},
        {},
    ],
)
def test_odd_payloads_are_written_as_before(item: dict[str, Any]) -> None:
    assert canonical_json(item) == _standard(item)


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(_TEXT, _JSON, max_size=6))
def test_generated_payloads_are_written_as_before(item: dict[str, Any]) -> None:
    assert canonical_json(item) == _standard(item)


def _same_block(fast: Any, validated: Any) -> None:
    assert type(fast) is type(validated)
    assert fast == validated
    assert fast.model_fields_set == validated.model_fields_set
    assert fast.model_dump() == validated.model_dump()
    assert fast.model_dump_json() == validated.model_dump_json()


@settings(max_examples=300, deadline=None)
@given(
    _TEXT,
    _TEXT,
    st.dictionaries(_TEXT, _JSON.filter(lambda v: not isinstance(v, float)), max_size=4),
    st.none() | _TEXT,
)
def test_a_call_block_is_the_one_validation_builds(call_id: str, name: str, args: dict[str, Any], tool: Any) -> None:
    _same_block(call_block(call_id, name, args, tool), ToolCallBlock(id=call_id, name=name, args=args, tool_type=tool))
    assert call_block(call_id, name, args, tool).args is not args  # a dict of its own, as validation makes


@settings(max_examples=300, deadline=None)
@given(_TEXT, _TEXT, st.none() | _TEXT)
def test_a_result_block_is_the_one_validation_builds(call_id: str, output: str, name: str | None) -> None:
    _same_block(result_block(call_id, output, name), ToolResultBlock(call_id=call_id, output=output, name=name))


def test_values_of_other_types_are_validated_as_before() -> None:
    class Named(str):
        pass

    _same_block(
        call_block(Named("c1"), "f", {"a": 1}, None),
        ToolCallBlock(id=Named("c1"), name="f", args={"a": 1}, tool_type=None),
    )
    with pytest.raises(ValueError):
        call_block("c1", "f", {1: "not a string key"}, None)  # type: ignore[dict-item]
    deep: Any = {}
    for _ in range(300):
        deep = {"d": deep}
    with pytest.raises(ValueError):
        call_block("c1", "f", deep, None)


@pytest.mark.parametrize(
    ("fmt", "item", "key"),
    [
        ("openai_chat", {"role": "tool", "tool_call_id": "c1", "content": "out \ud83d put"}, "content"),
        ("openai_responses", {"type": "function_call_output", "call_id": "c1", "output": "out\udc00"}, "output"),
    ],
)
def test_a_string_output_is_the_text_its_reader_reads(fmt: str, item: dict[str, Any], key: str) -> None:
    format_object = get_format(fmt)
    read = format_object.read_items([item], offset=0, previous=None, sources=None)
    (block,) = read[0].tool_result_blocks()
    assert format_object.output_text(item, key) == block.output
    assert format_object.output_text({**item, key: [{"type": "text", "text": "a"}]}, key) is None  # parts: read


_ITEMS: list[Any] = [
    {"role": "user", "content": "hi"},
    {"role": "assistant", "content": None, "tool_calls": [{"id": "c", "type": "function", "function": {}}]},
    {"role": "tool", "tool_call_id": "c", "content": "out"},
    {"role": "model", "content": "a Gemini role"},
    {"role": "user", "parts": [{"text": "Gemini parts"}]},
    {"type": "message", "role": "user", "content": "a Responses item"},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c", "content": "Anthropic"}]},
    {"role": "user", "content": [{"type": "input_text", "text": "Responses parts"}]},
    {"role": "user", "content": [{"type": "text", "text": "Chat parts"}]},
    {"content": "no role"},
    "not a dict",
]


@pytest.mark.parametrize("item", _ITEMS)
def test_the_chat_shape_check_answers_as_asking_every_format(item: Any) -> None:
    chat = get_format("openai_chat")
    assert chat.foreign(item) == ProviderFormat.foreign(chat, item)


def test_a_format_registered_by_the_caller_is_asked_again(monkeypatch: pytest.MonkeyPatch) -> None:
    from windowkeeper.llm.formats import registry

    class Strict(type(get_format("gemini"))):  # type: ignore[misc]
        name = "strict_test_format"

        def distinctive(self, item: Any) -> str | None:
            return "role" if isinstance(item, dict) and item.get("role") == "user" else None

    monkeypatch.setattr(registry, "_FORMATS", dict(registry._FORMATS))
    monkeypatch.setattr(registry, "_sorted", None)
    monkeypatch.setattr(registry, "_builtins_only", registry._builtins_only)
    assert registry.builtins_only()
    registry.register_format(Strict())
    assert not registry.builtins_only()
    assert get_format("openai_chat").foreign({"role": "user", "content": "hi"}) == ("role", "strict_test_format")
