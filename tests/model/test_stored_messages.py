"""`Message.from_stored`, `block_from_stored`, `make_block` and `Message.from_blocks`: the cheap ways the library
reads back what it wrote must build exactly the messages full validation builds (``==``, fingerprint, fields set,
dump), apply the same boundary rule, and hand anything not in the dumped form to validation."""

from __future__ import annotations

import json
import random
from typing import Any

import pydantic_core
import pytest
from pydantic import TypeAdapter, ValidationError

from windowkeeper import (
    AnnotationBlock,
    AnnotationRef,
    AudioBlock,
    DataBlock,
    DocumentBlock,
    ErrorBlock,
    ImageBlock,
    MediaRef,
    Message,
    ReasoningBlock,
    TextBlock,
    TokenUsages,
    ToolCallBlock,
    ToolResultBlock,
    VideoBlock,
)
from windowkeeper.blocks import _FIELD_CHECKS, ContentBlock, block_from_stored, make_block
from windowkeeper.errors import StorageError
from windowkeeper.memory.events import event_to_message, message_to_event, result_ids
from windowkeeper.memory.structured import event_tool_calls

BLOCKS: TypeAdapter[ContentBlock] = TypeAdapter(ContentBlock)

ODD = [
    "plain",
    "",
    "é à ü",
    "emoji \U0001f600 ok",
    "half \ud83d emoji",
    "low \ude00 alone",
    "x\ud800",
    "\ufffd",
    "tab\tnew\nline\r",
    "nul \x00 esc \x1b[0m",
    'quote " back \\ slash',
    "\\ud800 literal escape text",
    "ﬁ ligature",
    "combining e\u0301",
    "rtl \u202e text",
    "null-ish None",
    "1e400",
    "NaN",
]


def odd(rng: random.Random) -> str:
    return rng.choice(ODD) + rng.choice(["", " ", "tail", "\U0001f680"])


def json_value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.random()
    if depth > 3 or kind < 0.45:
        return rng.choice([odd(rng), 0, -7, 2**70, 1.5, -0.0, True, False, None])
    if kind < 0.75:
        return {odd(rng): json_value(rng, depth + 1) for _ in range(rng.randint(0, 4))}
    return [json_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]


def media(rng: random.Random) -> MediaRef:
    return MediaRef(
        kind=rng.choice(["url", "file_id", "data"]),
        url=rng.choice([None, "https://e.x/" + odd(rng)]),
        file_id=rng.choice([None, odd(rng)]),
        data_base64=rng.choice([None, "aGVsbG8="]),
        mime_type=rng.choice([None, "image/png"]),
        size_bytes=rng.choice([None, 0, 12345]),
        filename=rng.choice([None, odd(rng)]),
        width=rng.choice([None, 640]),
        height=rng.choice([None, 480]),
        duration_ms=rng.choice([None, 1500]),
        page=rng.choice([None, 3]),
    )


def block(rng: random.Random, index: int) -> ContentBlock:
    kind = rng.randrange(11)
    if kind == 0:
        return TextBlock(text=odd(rng), annotations=[AnnotationRef(url="u", title=odd(rng))] * rng.randint(0, 2))
    if kind == 1:
        return ToolCallBlock(
            id=f"call_{index}_" + rng.choice(["", "\ud800", "é"]),
            name=odd(rng),
            args={odd(rng): json_value(rng) for _ in range(rng.randint(0, 3))},
            tool_type=rng.choice([None, "function"]),
        )
    if kind == 2:
        return ToolResultBlock(
            call_id=f"call_{index}",
            output=json_value(rng),
            status=rng.choice(["completed", "error"]),
            name=rng.choice([None, odd(rng)]),
        )
    if kind == 3:
        return ImageBlock(
            media=media(rng), alt_text=rng.choice([None, odd(rng)]), bbox=rng.choice([None, [0.0, 1.5, 2.0, 3.25]])
        )
    if kind == 4:
        return ReasoningBlock(
            text=odd(rng),
            summary=rng.choice([None, odd(rng)]),
            id=rng.choice([None, "rs_1"]),
            signature=rng.choice([None, "sig=="]),
        )
    if kind == 5:
        return AudioBlock(media=media(rng), transcript=rng.choice([None, odd(rng)]), sample_rate=16000, channels=1)
    if kind == 6:
        return VideoBlock(media=media(rng), thumbnail=rng.choice([None, media(rng)]))
    if kind == 7:
        return DocumentBlock(
            media=rng.choice([None, media(rng)]),
            text=rng.choice([None, odd(rng)]),
            pages=rng.choice([None, [1, 2]]),
            excerpt=rng.choice([None, odd(rng)]),
        )
    if kind == 8:
        return DataBlock(
            mime_type="application/json", data_base64=rng.choice([None, "e30="]), media=rng.choice([None, media(rng)])
        )
    if kind == 9:
        return ErrorBlock(error=odd(rng), tool_call_id=rng.choice([None, "c\udc00"]), code=rng.choice([None, "E1"]))
    return AnnotationBlock(annotation=AnnotationRef(url=odd(rng), page=rng.choice([None, 2]), index=1))


def session(seed: int, n: int = 120) -> list[Message]:
    """Messages of every shape: tool calls (blocks and provider dicts), results, media, reasoning, odd unicode."""
    rng = random.Random(seed)
    out: list[Message] = []
    for i in range(n):
        fields: dict[str, Any] = {
            "message_id": rng.choice([f"m{i}", f"m{i}\ud800", i, f"é{i}"]),
            "role": rng.choice(["user", "assistant", "system", "tool"]),
            "content": [block(rng, i) for _ in range(rng.randint(0, 4))],
            "timestamp": rng.choice([None, 1720398162.087, 0.0]),
        }
        if rng.random() < 0.3:
            fields["reasoning"] = odd(rng)
        if rng.random() < 0.3:
            fields["tools_calls"] = [{"id": f"c{i}", "function": {"name": odd(rng), "arguments": "{}"}}]
        if rng.random() < 0.3:
            fields["metadata"] = {odd(rng): json_value(rng)}
        if rng.random() < 0.2:
            fields["raw"] = {"provider": odd(rng), "x": json_value(rng)}
        if rng.random() < 0.2:
            fields["usages"] = TokenUsages(prompt_tokens=3, completion_tokens=4, total_tokens=7)
        out.append(Message(**fields))
    return out


def stored_forms(message: Message) -> list[Any]:
    """What a reader gets back: the dump itself and the dump through each JSON parser the stores use."""
    dumped = message.model_dump(mode="json")
    text = json.dumps(dumped, ensure_ascii=False)
    return [dumped, json.loads(text), pydantic_core.from_json(text)]


def assert_same(fast: Message, full: Message) -> None:
    assert fast.fingerprint() == full.fingerprint()
    assert fast == full  # pydantic's == compares the fingerprint memo too: both are set now
    assert fast.model_fields_set == full.model_fields_set
    assert fast.model_dump() == full.model_dump()
    assert fast.model_dump_json() == full.model_dump_json()
    assert repr(fast) == repr(full)
    assert type(fast.content) is type(full.content)
    for a, b in zip(fast.content, full.content, strict=True):
        assert type(a) is type(b) and a == b and a.model_fields_set == b.model_fields_set
        assert _hash(a) == _hash(b)


def _hash(value: Any) -> int | str:
    try:
        return hash(value)
    except TypeError as exc:  # a frozen block holding a list or dict is not hashable, whichever way it was built
        return str(exc)


@pytest.mark.parametrize("seed", range(6))
def test_from_stored_equals_full_validation_on_generated_sessions(seed: int) -> None:
    for message in session(seed):
        for data in stored_forms(message):
            full = Message.model_validate(data)
            fast = Message.from_stored(data)
            assert_same(fast, full)
            assert fast.fingerprint() == message.fingerprint()
            assert fast == message  # (pydantic's == compares the fingerprint memo too: both are set now)


def test_clean_false_is_the_same_for_text_a_strict_parser_accepted() -> None:
    for message in session(11):
        text = message.model_dump_json()
        assert_same(Message.from_stored(pydantic_core.from_json(text), clean=False), Message.model_validate_json(text))


def test_lone_surrogates_read_back_are_replaced_as_validation_replaces_them() -> None:
    # a hand-edited row: JSON escapes of lone surrogates, which json.loads turns into lone surrogates
    text = json.dumps(Message.text_message("x", message_id="m").model_dump(mode="json"))
    edited = (
        text.replace('"text": "x"', '"text": "a\\ud800b"')
        .replace('"message_id": "m"', '"message_id": "m\\udc01"')
        .replace('"metadata": {}', '"metadata": {"k\\ud83d": ["\\ude00"]}')
        .replace('"reasoning": null', '"reasoning": "r\\ud800"')
    )
    data = json.loads(edited)
    fast, full = Message.from_stored(data), Message.model_validate(data)
    assert_same(fast, full)
    assert fast.content[0].text == "a\ufffdb"  # type: ignore[union-attr]
    assert fast.message_id == "m\\udc01"
    assert fast.reasoning == "r\ufffd"
    assert fast.metadata == {"k\ufffd": ["\ufffd"]}
    fast.fingerprint()  # hashable: nothing unencodable is left


@pytest.mark.parametrize(
    "edit",
    [
        lambda d: d.pop("delta"),  # a missing field: validation fills in the default
        lambda d: d.update(extra=1),  # an unknown key: validation refuses it
        lambda d: d.update(timestamp=1720398162),  # an int where a dump writes a float: validation converts it
        lambda d: d.update(role="robot"),
        lambda d: d.update(delta=1),
        lambda d: d.update(message_id=1.5),
        lambda d: d["content"].append({"type": "hologram", "data": "?"}),
        lambda d: d["content"].append({"type": "text"}),
        lambda d: d["content"].append({"type": "text", "text": "t"}),
        lambda d: d["content"].append({"type": "text", "text": "t", "annotations": [], "x": 1}),
        lambda d: d["content"].append({"type": "text", "text": 5, "annotations": []}),
        lambda d: d["content"].append({"type": "image", "media": {"url": "u"}, "alt_text": None, "bbox": None}),
        lambda d: d["content"].append(
            {"type": "image", "media": MediaRef(url="u").model_dump(mode="json"), "alt_text": None, "bbox": [1, 2]}
        ),
        lambda d: d["content"].append({"type": "tool_call", "id": "c", "name": "n", "args": "{}", "tool_type": None}),
        lambda d: d["content"].append(
            {"type": "tool_result", "call_id": "c", "output": "o", "status": "pending", "name": None}
        ),
        lambda d: d.update(metadata=None),
        lambda d: d.update(usages={"prompt_tokens": "many"}),
        lambda d: d.update(tools_calls=["not a dict"]),
    ],
)
def test_anything_not_in_the_dumped_form_is_validated_in_full(edit: Any) -> None:
    data = Message(role="assistant", content=[TextBlock(text="hi")], message_id="m").model_dump(mode="json")
    edit(data)
    try:
        full = Message.model_validate(data)
    except ValidationError as exc:
        with pytest.raises(ValidationError) as caught:
            Message.from_stored(data)
        assert caught.value.errors() == exc.errors()
        return
    assert_same(Message.from_stored(data), full)


def test_blocks_from_stored_equal_validated_blocks_and_refuse_other_forms() -> None:
    rng = random.Random(3)
    for index in range(400):
        original = block(rng, index)
        data = original.model_dump(mode="json")
        fast = block_from_stored(data)
        full = BLOCKS.validate_python(data)
        assert fast == full == original and type(fast) is type(full)
        assert fast is not None and fast.model_fields_set == full.model_fields_set
    assert block_from_stored({"text": "no type"}) is None
    assert block_from_stored(["not", "a", "dict"]) is None


def test_every_field_of_every_block_is_checked() -> None:
    """A field added to a block must be added to the stored-form checks (else its dumps would be refused)."""
    for cls, checks in _FIELD_CHECKS.items():
        assert list(checks) == list(cls.model_fields), cls.__name__


def test_containers_are_not_shared_with_the_data_read() -> None:
    message = Message(
        role="assistant",
        content=[
            ToolCallBlock(id="c", name="n", args={"a": {"b": 1}}),
            ToolResultBlock(call_id="c", output={"x": [1]}),
        ],
        metadata={"k": {"v": 1}},
        raw={"r": 1},
        tools_calls=[{"id": "c"}],
    )
    data = message.model_dump(mode="json")
    fast, full = Message.from_stored(data), Message.model_validate(data)
    for built in (fast, full):
        assert built.metadata is not data["metadata"] and built.raw is not data["raw"]
        assert built.tools_calls is not None and built.tools_calls is not data["tools_calls"]
        assert built.tools_calls[0] is not data["tools_calls"][0]
        assert built.content[0].args is not data["content"][0]["args"]  # type: ignore[union-attr]
        assert built.content[1].output is not data["content"][1]["output"]  # type: ignore[union-attr]
        assert built.content[1].output["x"] is not data["content"][1]["output"]["x"]  # type: ignore[union-attr,index,call-overload]


def test_edits_of_a_message_read_back_clear_its_fingerprint() -> None:
    data = Message.text_message("hello", message_id="m").model_dump(mode="json")
    fast = Message.from_stored(data, fingerprint="stored-fp")
    assert fast.fingerprint() == "stored-fp"
    fast.content.append(TextBlock(text=" world"))
    assert fast.fingerprint() == Message.model_validate(fast.model_dump(mode="json")).fingerprint()
    fast.role = "assistant"
    with pytest.raises(ValidationError):
        fast.role = "robot"  # type: ignore[assignment]


def test_make_block_and_from_blocks_equal_the_constructors() -> None:
    rng = random.Random(5)
    for index in range(300):
        text, name, call_id = odd(rng), odd(rng), f"c{index}" + rng.choice(["", "\udc00"])
        args = {odd(rng): json_value(rng)}
        built = [
            make_block("text", text=text),
            make_block("tool_call", id=call_id, name=name, args=args),
            make_block("tool_result", call_id=call_id, output=text),
        ]
        constructed = [
            TextBlock(text=text),
            ToolCallBlock(id=call_id, name=name, args=args),
            ToolResultBlock(call_id=call_id, output=text),
        ]
        assert built == constructed
        assert [b.model_fields_set for b in built] == [b.model_fields_set for b in constructed]
        message_id = f"m{index}" + rng.choice(["", "\ud800"])
        role = rng.choice(["user", "assistant", "tool", "system"])
        fast = Message.from_blocks(role, built, message_id=message_id, timestamp=None)
        full = Message(message_id=message_id, role=role, content=constructed, timestamp=None)
        assert_same(fast, full)
    with pytest.raises(ValidationError):
        make_block("tool_call", id=5, name="n")
    with pytest.raises(ValidationError):
        Message.from_blocks("robot", [], message_id="m", timestamp=None)


def _event_to_message_validated(event: dict[str, Any]) -> Message:
    """`event_to_message` as it was written with the validating constructors."""
    msg = event["message"]
    text = str(msg.get("content") or "")
    role = msg["role"]
    blocks: list[Any] = []
    ids = result_ids(event) if role == "tool" else []
    if ids:
        blocks.append(ToolResultBlock(call_id=ids[0], output=text))
        blocks.extend(ToolResultBlock(call_id=i, output="") for i in ids[1:])
    elif text:
        blocks.append(TextBlock(text=text))
    if role == "assistant":
        blocks.extend(ToolCallBlock(id=cid, name=name, args=args) for cid, name, args in event_tool_calls(event))
    return Message(message_id=str(msg["id"]), role=role, content=blocks, timestamp=None)


@pytest.mark.parametrize("seed", range(3))
def test_event_messages_equal_the_validated_construction(seed: int) -> None:
    for message in session(seed):
        event = json.loads(json.dumps(message_to_event(message), ensure_ascii=False))
        event["message"]["content"] = "[COMPACTED: " + odd(random.Random(seed)) + "]"
        event["message"]["tool_calls"] = [
            *event["message"].get("tool_calls", []),
            {"id": "c\ud800", "function": {"name": "f", "arguments": '{"k": "\\ud800"}'}},
        ]
        fast, full = event_to_message(event), _event_to_message_validated(event)
        assert_same(fast, full)


async def test_a_reopened_memory_gives_back_what_validation_builds(tmp_path: Any) -> None:
    """End to end: messages with odd unicode, tool calls and media added to a SQLite memory, read back by a new
    memory object (the cheap path), equal the added ones and what validating each stored doc builds."""
    from windowkeeper.memory import SQLiteMemory
    from windowkeeper.memory.compaction import is_compacted
    from windowkeeper.memory.events import full_source

    added = session(21, n=60)
    memory = SQLiteMemory(tmp_path / "m.db")
    for message in added:
        await memory.add(message, session_id="s")
    await memory.close()
    reopened = SQLiteMemory(tmp_path / "m.db")
    got = await reopened.messages("s")
    records = await reopened.store.list_records(reopened.namespace, "s")
    await reopened.close()
    validated = [
        Message.model_validate(full_source(r.doc))
        if not is_compacted(r.doc["event"])
        else _event_to_message_validated(r.doc["event"])
        for r in records
        if r.doc.get("type") == "event"
    ]
    expected = {str(m.message_id): m for m in validated}
    assert len(got) == len(added)
    for message, original in zip(got, added, strict=True):
        assert_same(message, expected[str(message.message_id)])
        assert message.fingerprint() == original.fingerprint()


def test_the_message_log_reads_rows_back_as_validation_does() -> None:
    """`storage.base.decode_message` (every backend's log read) takes the cheap path for rows it wrote, and the
    validating one for rows edited outside (here: a lone surrogate escape, an int timestamp)."""
    from windowkeeper.storage.base import decode_message, encode_message

    for message in session(31):
        body = encode_message("t", message)
        read = decode_message("t", body, 0)
        assert read.fingerprint() == message.fingerprint()  # the stored one, memoized
        assert_same(read, Message.model_validate(message.model_dump(mode="json")))
    edited = Message.text_message("x", message_id="m", timestamp=5.0).model_dump_json()
    row = edited.replace('"timestamp":5.0', '"timestamp":5')
    assert row != edited
    assert_same(decode_message("t", row, 0), Message.model_validate_json(row))
    # pydantic's JSON parser refuses a lone surrogate escape: such a row was refused before and still is
    row = edited.replace('"text":"x"', '"text":"a\\ud800"')
    assert row != edited
    with pytest.raises(StorageError, match="does not validate"):
        decode_message("t", row, 0)


def test_trusted_log_rows_of_every_block_type_read_back_as_validation_does() -> None:
    """A row whose stamp matches its body is built from its shape alone (`message_from_trusted`): every block
    type and nested model gives what validation gives, from text and from the UTF-8 bytes SQLite hands over; a
    shape this version does not write is validated in full."""
    from windowkeeper.messages import message_from_trusted
    from windowkeeper.storage.base import decode_message, encode_message

    rng = random.Random(5)
    for index in range(0, 400, 4):
        content = [block(rng, index + k) for k in range(4)]
        message = Message(role="assistant", content=content, message_id=f"m{index}", timestamp=1.5)
        body = encode_message("t", message)
        full = Message.model_validate(message.model_dump(mode="json"))
        for stored in (body, body.encode("utf-8")):
            read = decode_message("t", stored, 0)
            assert_same(read, full)
            assert read.fingerprint() == message.fingerprint()
    data = Message.text_message("x", message_id="m", timestamp=5.0).model_dump(mode="json")
    assert message_from_trusted({**data, "extra": 1}) is None
    assert message_from_trusted({**data, "role": "wizard"}) is None
    assert message_from_trusted({**data, "timestamp": 5}) is None
    assert message_from_trusted({**data, "content": [{"type": "text", "text": "x"}]}) is None  # keys missing
    assert message_from_trusted({**data, "content": [{"type": "new kind"}]}) is None


@pytest.mark.parametrize("output", [(1, 2), {1: "int key"}, {"k": {2}}, object()])
def test_values_json_does_not_decode_to_are_left_to_validation(output: Any) -> None:
    data = {"type": "tool_result", "call_id": "c", "output": output, "status": "completed", "name": None}
    assert block_from_stored(data) is None


def test_equality_ignores_the_fingerprint_memo() -> None:
    from windowkeeper import Message

    a = Message.text_message("same words", message_id="m1", timestamp=1.0)
    b = a.model_copy()
    a.fingerprint()
    assert a == b
    assert b == a
    assert a != Message.text_message("other words", message_id="m1", timestamp=1.0)
