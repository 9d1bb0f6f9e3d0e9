"""The data model: constructors, text extraction, validation errors, JSON round trips, the reducer."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from windowkeeper import (
    AgentState,
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
    ToolResult,
    ToolResultBlock,
    VideoBlock,
    add_messages,
)


def every_block() -> list:
    media = MediaRef(kind="data", data_base64="aGVsbG8=", mime_type="audio/wav", size_bytes=5)
    return [
        TextBlock(text="Here is the answer.", annotations=[AnnotationRef(url="https://e.x", title="Source")]),
        ImageBlock(
            media=MediaRef(url="https://e.x/p.png", mime_type="image/png"), alt_text="a photo", bbox=[1, 2, 3, 4]
        ),
        AudioBlock(media=media, transcript="hello", sample_rate=16000, channels=1),
        VideoBlock(media=media, thumbnail=MediaRef(url="https://e.x/t.jpg", mime_type="image/jpeg")),
        DocumentBlock(media=MediaRef(kind="file_id", file_id="doc-key"), text="body", pages=[1, 2], excerpt="pre"),
        DataBlock(
            mime_type="application/octet-stream", data_base64="AAEC", media=MediaRef(kind="file_id", file_id="k")
        ),
        ToolCallBlock(id="call_1", name="get_weather", args={"location": "Tokyo", "n": [1, 2]}, tool_type=None),
        ToolResultBlock(call_id="call_1", output={"temp_c": 22, "sky": "sunny"}, status="completed"),
        ReasoningBlock(text="Let me think."),
        ErrorBlock(error="Tool timed out after 30 s.", tool_call_id="call_1"),
        AnnotationBlock(annotation=AnnotationRef(url="https://e.x", title="Source article")),
    ]


def test_text_message_and_ids() -> None:
    a = Message.text_message("Hello!")
    b = Message.text_message("Hello!", role="user", message_id="msg-1")
    assert a.role == "user" and a.text() == "Hello!"
    assert b.message_id == "msg-1"
    assert a.message_id != Message.text_message("Hello!").message_id
    assert isinstance(a.timestamp, float)


def test_tool_message_and_text_includes_results() -> None:
    msg = Message.tool_message(
        content=[ToolResultBlock(call_id="call_123", output="Sunny, 22°C", status="completed")],
        message_id="tr-1",
    )
    assert msg.role == "tool" and msg.message_id == "tr-1"
    assert msg.text() == "Sunny, 22°C"
    mixed = Message(role="assistant", content=[TextBlock(text="a"), ReasoningBlock(text="hidden"), TextBlock(text="b")])
    assert mixed.text() == "ab"


def test_every_block_round_trips_through_json() -> None:
    msg = Message(
        role="assistant",
        content=every_block(),
        tools_calls=[{"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}],
        reasoning="because",
        metadata={"k": [1, {"x": None}]},
        usages=TokenUsages(prompt_tokens=10, completion_tokens=2, total_tokens=12, cache_read_input_tokens=8),
        raw={"id": "resp_1"},
    )
    again = Message.model_validate(msg.model_dump(mode="json"))
    assert again == msg
    assert again.model_dump_json() == msg.model_dump_json()
    assert [type(b) for b in again.content] == [type(b) for b in msg.content]


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"role": "robot", "content": []}, "role"),
        ({"role": "user", "content": [{"type": "hologram", "text": "x"}]}, "content.0"),
        ({"role": "assistant", "content": [{"type": "tool_call", "name": "f"}]}, "content.0.tool_call.id"),
    ],
)
def test_bad_input_names_the_field(payload: dict, field: str) -> None:
    with pytest.raises(ValidationError) as info:
        Message.model_validate(payload)
    text = str(info.value)
    assert field in text
    if "hologram" in str(payload):
        assert "hologram" in text


def test_tool_call_block_requires_id() -> None:
    with pytest.raises(ValidationError, match="id"):
        ToolCallBlock(name="f")  # type: ignore[call-arg]


def test_tool_calls_read_from_native_dicts() -> None:
    msg = Message(
        role="assistant",
        content=[],
        tools_calls=[{"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}],
    )
    [call] = msg.tool_call_blocks()
    assert (call.id, call.name, call.args) == ("c1", "f", {"a": 1})


def test_fingerprint_resets_when_content_is_reassigned() -> None:
    msg = Message.text_message("one")
    first = msg.fingerprint()
    assert msg.fingerprint() == first
    msg.content = [TextBlock(text="two")]
    assert msg.fingerprint() != first
    assert Message.text_message("two", message_id="x").fingerprint() == msg.fingerprint()


def test_add_messages_appends_dedupes_and_skips_deltas() -> None:
    a, b = Message.text_message("a", message_id="1"), Message.text_message("b", message_id="2")
    partial = Message(role="assistant", content=[TextBlock(text="par")], delta=True)
    dup = Message.text_message("a again", message_id="1")
    merged = add_messages([a], [b, partial, dup, b])
    assert [m.message_id for m in merged] == ["1", "2"]
    assert add_messages(None, a) == [a]


def test_agent_state_helpers_and_custom_subclass() -> None:
    class MyState(AgentState):
        user_id: str = ""
        session_data: dict = {}
        selected_city: str = ""

    state = MyState(user_id="u1")
    assert not state.is_running()
    state.start()
    assert state.is_running()
    state.advance_step()
    state.set_current_node("MAIN")
    assert (state.execution_meta.step, state.execution_meta.current_node) == (1, "MAIN")
    state.error("boom")
    assert state.execution_meta.error == "boom" and not state.is_running()
    state.complete()
    assert not state.is_stopped_requested()
    state.request_stop()
    assert state.is_stopped_requested()
    again = MyState.model_validate(state.model_dump(mode="json"))
    assert again == state


def test_tool_result() -> None:
    res = ToolResult(message="City updated to 'Paris'.", state={"selected_city": "Paris"})
    assert res.state == {"selected_city": "Paris"}
