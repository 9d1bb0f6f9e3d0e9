"""same_message: an equal copy from the caller's own JSON is recognised without hashing, and only when the JSON
of what a fingerprint covers would be the same."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from windowkeeper import ImageBlock, MediaRef, Message, TextBlock, ToolCallBlock, ToolResultBlock
from windowkeeper.messages import same_message


def _call(args: dict[str, object], mid: str = "a1") -> Message:
    return Message(
        message_id=mid,
        role="assistant",
        content=[TextBlock(text="checking"), ToolCallBlock(id="c1", name="lookup", args=args)],
    )


def _reloaded(message: Message) -> Message:
    return Message.model_validate_json(message.model_dump_json())


def _memo(message: Message) -> str | None:
    private = message.__pydantic_private__
    return None if private is None else private.get("_fingerprint")


def test_an_equal_copy_is_recognised_and_takes_over_the_known_fingerprint() -> None:
    live = _call({"order": "W123", "count": 2})
    known = live.fingerprint()
    copy = _reloaded(live)
    assert _memo(copy) is None
    assert same_message(live, copy)
    assert _memo(copy) == known == copy.fingerprint()


def test_values_equal_in_python_but_not_in_json_are_not_the_same_message() -> None:
    pairs: list[tuple[dict[str, object], dict[str, object]]] = [
        ({"n": 1}, {"n": True}),
        ({"n": 1}, {"n": 1.0}),
        ({"x": 0.0}, {"x": -0.0}),
    ]
    for left, right in pairs:
        a, b = _call(left), _call(right)
        assert a.fingerprint() != b.fingerprint()
        assert not same_message(a, _reloaded(b))
        assert not same_message(_reloaded(a), _reloaded(b))


def test_other_content_role_or_id_is_not_the_same_message() -> None:
    base = Message.text_message("the port is 8080", role="user", message_id="u1")
    assert not same_message(base, Message.text_message("the port is 8081", role="user", message_id="u1"))
    assert not same_message(base, Message.text_message("the port is 8080", role="assistant", message_id="u1"))
    assert not same_message(base, Message.text_message("the port is 8080", role="user", message_id="u2"))


def test_a_block_holding_a_model_is_compared_by_its_fields() -> None:
    image = Message(message_id="i1", role="user", content=[ImageBlock(media=MediaRef(url="https://x/y.png"))])
    other = Message(message_id="i1", role="user", content=[ImageBlock(media=MediaRef(url="https://x/z.png"))])
    assert same_message(image, _reloaded(image))
    assert not same_message(image, _reloaded(other))


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.floats(-2, 2, allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=8,
)


@given(json_values, json_values)
def test_same_message_agrees_with_the_fingerprints(left: object, right: object) -> None:
    a = Message(
        message_id="t1",
        role="tool",
        content=[ToolResultBlock(call_id="c1", output=left)],  # type: ignore[arg-type]
    )
    b = Message(
        message_id="t1",
        role="tool",
        content=[ToolResultBlock(call_id="c1", output=right)],  # type: ignore[arg-type]
    )
    expected = a.fingerprint() == _reloaded(b).fingerprint()
    assert same_message(a, _reloaded(b)) is expected
    assert same_message(_reloaded(a), _reloaded(b)) is expected
