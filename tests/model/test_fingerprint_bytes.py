"""A message's fingerprint is written by pydantic's serializer when it spells the payload as the standard encoder.

Fingerprints are stored (a kept source records the one it was read at, a store keeps the view's), so the fast
writer must give the very bytes the standard encoder gave: every code point, escapes, sorted keys at every level,
and the values it would spell otherwise (floats, ints past 64 bits, lone surrogates, subclasses, tuples, values
written by ``default=str``) left to the standard encoder.
"""

from __future__ import annotations

import enum
import hashlib
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from windowkeeper.blocks import TextBlock, ToolCallBlock, ToolResultBlock
from windowkeeper.messages import _FINGERPRINT_JSON, Message, _fingerprint_bytes


def _as_before(message: Message) -> str:
    """The fingerprint as the standard encoder alone wrote it."""
    payload = {
        "r": message.role,
        "c": [{**b.model_dump(mode="json", exclude_defaults=True), "type": b.type} for b in message.content],
        "t": message.tools_calls,
        "z": message.reasoning,
    }
    raw = _FINGERPRINT_JSON.encode(payload).encode("utf-8", "surrogatepass")
    return hashlib.blake2b(raw, digest_size=16).hexdigest()


def _before(payload: Any) -> bytes:
    return _FINGERPRINT_JSON.encode(payload).encode("utf-8", "surrogatepass")


def test_every_code_point_is_written_as_the_standard_encoder_writes_it() -> None:
    points = [chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    for start in range(0, len(points), 4096):
        text = "".join(points[start : start + 4096])
        payload = {"r": "tool", "c": [{"output": text, "type": "tool_result", "call_id": "c"}], "t": None, "z": None}
        assert _fingerprint_bytes(payload) == _before(payload)


_LONG = {"output": "é\n" * 1024, "type": "tool_result", "call_id": "c"}
"""A block long enough to take the fast writer."""


class _Kind(enum.StrEnum):
    A = "a"


def test_values_the_two_spell_differently_keep_the_standard_encoder() -> None:
    for value in (1e16, 0.1, float("inf"), 2**63, -(2**63) - 1, "\ud800", (1, 2), _Kind.A, True, -(2**63), {"b": None}):
        payload = {"z": None, "t": [{"args": {"v": value, "a": [value]}}], "r": "assistant", "c": [_LONG]}
        assert _fingerprint_bytes(payload) == _before(payload), value
    deep: Any = "x"
    for _ in range(80):
        deep = {"k": [deep]}
    assert _fingerprint_bytes({"c": [_LONG], "t": deep}) == _before({"c": [_LONG], "t": deep})


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(
    text=st.text(),
    name=st.text(min_size=1, max_size=20),
    args=st.dictionaries(st.text(max_size=8), _json, max_size=5),
    output=st.text(),
    raw_calls=st.none() | st.lists(st.dictionaries(st.text(max_size=6), _json, max_size=3), max_size=2),
    reasoning=st.none() | st.text(),
)
def test_generated_messages_keep_their_fingerprints(
    text: str, name: str, args: dict[str, Any], output: str, raw_calls: Any, reasoning: str | None
) -> None:
    said = Message(role="user", content=[TextBlock(text=text)])
    call = Message(
        role="assistant",
        content=[ToolCallBlock(id="c1", name=name, args=args)],
        tools_calls=raw_calls,
        reasoning=reasoning,
    )
    result = Message(role="tool", content=[ToolResultBlock(call_id="c1", output=output)])
    # the same output made long enough for the fast writer, and a long text beside the generated call
    long = output * (1024 // max(1, len(output)) + 1) if output else "x" * 1024
    long_result = Message(role="tool", content=[ToolResultBlock(call_id="c1", output=long)])
    long_call = call.with_content([TextBlock(text=long), *call.content])
    for message in (said, call, result, long_result, long_call):
        assert message.fingerprint() == _as_before(message)
    built = Message.model_construct(role="user", content=[TextBlock.model_construct(text=text + "\ud800")])
    assert built.fingerprint() == _as_before(built)  # a lone surrogate slipped in without validation
