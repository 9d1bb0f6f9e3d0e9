"""OpenAI Chat Completions conversion: real transcripts, multimodal parts, replies and malformed input."""

from __future__ import annotations

import json
from typing import Any

import pytest

from windowkeeper.blocks import (
    AudioBlock,
    DocumentBlock,
    ImageBlock,
    MediaRef,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    VideoBlock,
)
from windowkeeper.errors import FormatError
from windowkeeper.llm.formats import (
    first_difference,
    from_openai_chat,
    openai_chat_message_to_message,
    to_openai_chat,
)
from windowkeeper.llm.formats.openai_chat import CHAT
from windowkeeper.messages import Message
from windowkeeper.units import validate

from .formats_data import swe_agent_histories, swe_agent_to_openai, tau_trajectories

pytestmark = pytest.mark.filterwarnings("error")


def test_all_tau_bench_trajectories_round_trip_unchanged() -> None:
    trajectories = tau_trajectories()
    assert len(trajectories) == 200
    for n, record in enumerate(trajectories):
        traj = record["traj"]
        messages = from_openai_chat(traj)
        assert len(messages) == len(traj)
        # written anew: the same dicts but for the tool messages' ``name``, which the SDK's type does not have
        fresh = [{k: v for k, v in m.items() if not (m["role"] == "tool" and k == "name")} for m in traj]
        assert to_openai_chat(messages, passthrough=False) == fresh, f"trajectory {n} changed"
        # read with sources kept and written back unchanged: the caller's very items
        written = CHAT.write_plain(CHAT.read(traj))
        assert written == traj and all(a is b for a, b in zip(written, traj, strict=True))


def test_tau_bench_structure_is_mapped_to_blocks() -> None:
    traj = tau_trajectories()[0]["traj"]
    messages = from_openai_chat(traj)
    assert messages[0].role == "system" and messages[0].text().startswith("# Airline Agent Policy")
    call_msg = messages[6]
    assert call_msg.role == "assistant"
    assert call_msg.content == [
        ToolCallBlock(id="call_oIHazX6yQrB8hUwl4cRilFKj", name="get_user_details", args={"user_id": "mia_li_3668"})
    ]
    assert call_msg.tools_calls == traj[6]["tool_calls"]
    result = messages[7]
    assert result.role == "tool"
    (block,) = result.content
    assert isinstance(block, ToolResultBlock)
    assert (block.call_id, block.name, block.status) == (
        "call_oIHazX6yQrB8hUwl4cRilFKj",
        "get_user_details",
        "completed",
    )
    assert block.output == traj[7]["content"]


def test_tau_bench_loaded_lists_are_structurally_valid() -> None:
    # tau-bench reuses some call ids in later turns (73 times over 200 trajectories): OpenAI accepted them when
    # the runs were recorded, so only the Anthropic rules flag the reuse.
    codes: set[str] = set()
    anthropic_codes: set[str] = set()
    for record in tau_trajectories():
        messages = from_openai_chat(record["traj"])
        codes.update(p.code for p in validate(messages, "openai"))
        anthropic_codes.update(p.code for p in validate(messages, "anthropic"))
    assert codes == set()
    assert anthropic_codes == {"duplicate_tool_call_id"}


def test_swe_agent_trajectories_load() -> None:
    histories = swe_agent_histories()
    tool_messages = 0
    for name, history in histories.items():
        wire = [swe_agent_to_openai(e) for e in history]
        messages = from_openai_chat(wire)
        assert [m.role for m in messages] == [e["role"] for e in history], name
        for entry, message in zip(history, messages, strict=True):
            if entry["role"] == "tool":
                tool_messages += 1
                assert message.tool_result_blocks()[0].call_id == entry["tool_call_ids"][0]
            elif entry["role"] == "assistant" and entry.get("tool_calls"):
                assert message.tool_call_ids() == [c["id"] for c in entry["tool_calls"]]
                assert message.text() == entry["content"]
            else:
                assert message.text() == entry["content"]
        assert to_openai_chat(messages) == wire, name
    assert tool_messages == 44


def test_swe_agent_unknown_keys_are_kept_in_metadata_not_sent_back() -> None:
    history = next(iter(swe_agent_histories().values()))
    message = openai_chat_message_to_message(history[0])
    assert message.metadata["openai_extra"]["agent"] == history[0]["agent"]
    assert "agent" not in to_openai_chat([message])[0]


def test_multimodal_user_parts_round_trip() -> None:
    wire = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is in these?"},
                {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}},
                {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,/9j/4AAQ"}},
                {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}},
                {"type": "file", "file": {"file_id": "file-abc", "filename": "report.pdf"}},
                {"type": "file", "file": {"file_data": "data:application/pdf;base64,JVBERi0=", "filename": "a.pdf"}},
            ],
            "name": "alice",
        }
    ]
    (message,) = from_openai_chat(wire)
    assert message.metadata["name"] == "alice"
    assert message.content == [
        TextBlock(text="What is in these?"),
        ImageBlock(media=MediaRef(kind="url", url="https://example.com/cat.png")),
        ImageBlock(media=MediaRef(kind="data", data_base64="/9j/4AAQ", mime_type="image/jpeg")),
        AudioBlock(media=MediaRef(kind="data", data_base64="UklGRg==", mime_type="audio/wav")),
        DocumentBlock(media=MediaRef(kind="file_id", file_id="file-abc", filename="report.pdf")),
        DocumentBlock(
            media=MediaRef(kind="data", data_base64="JVBERi0=", mime_type="application/pdf", filename="a.pdf")
        ),
    ]
    assert to_openai_chat([message]) == wire


def test_parallel_calls_reasoning_and_developer_role() -> None:
    wire: list[dict[str, Any]] = [
        {"role": "developer", "content": "be terse"},
        {"role": "user", "content": "weather in Paris and Rome?"},
        {
            "role": "assistant",
            "content": None,
            "reasoning_content": "two cities, two calls",
            "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "weather", "arguments": '{"city": "Paris"}'}},
                {"id": "b", "type": "function", "function": {"name": "weather", "arguments": '{"city":"Rome"}'}},
            ],
        },
        {"role": "tool", "tool_call_id": "a", "content": "18C"},
        {
            "role": "tool",
            "tool_call_id": "b",
            "content": [{"type": "text", "text": "2"}, {"type": "text", "text": "4C"}],
        },
    ]
    messages = from_openai_chat(wire)
    assert messages[0].role == "system" and messages[0].metadata["openai_role"] == "developer"
    assert messages[2].content[0] == ReasoningBlock(text="two cities, two calls")
    assert messages[2].tool_call_ids() == ["a", "b"]
    assert messages[4].tool_result_blocks()[0].output == "24C"
    back = to_openai_chat(messages, passthrough=False)
    assert back[:4] == wire[:4]  # the original argument strings, spacing included, are reused
    assert back[4] == {"role": "tool", "tool_call_id": "b", "content": "24C"}
    assert validate(messages, "openai") == []


def test_edited_arguments_are_serialized_fresh() -> None:
    (message,) = from_openai_chat(
        [{"role": "assistant", "tool_calls": [{"id": "a", "function": {"name": "f", "arguments": '{"x": 1}'}}]}]
    )
    edited = message.with_content([ToolCallBlock(id="a", name="f", args={"x": 2, "y": "é"})])
    assert to_openai_chat([edited])[0]["tool_calls"][0]["function"]["arguments"] == '{"x":2,"y":"é"}'


def test_reply_message_dict_is_accepted() -> None:
    reply = {
        "role": "assistant",
        "content": "Sure.",
        "refusal": None,
        "annotations": [],
        "audio": None,
        "function_call": None,
        "tool_calls": None,
    }
    (message,) = from_openai_chat(reply)
    assert message.content == [TextBlock(text="Sure.")]
    assert message.metadata == {}
    assert openai_chat_message_to_message(reply).text() == "Sure."


def test_sdk_message_object_is_accepted() -> None:
    from openai.types.chat import ChatCompletionMessage

    sdk = ChatCompletionMessage.model_validate(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
        }
    )
    message = openai_chat_message_to_message(sdk)
    assert message.tool_call_blocks() == [ToolCallBlock(id="c1", name="f", args={})]


def test_tool_result_with_object_output_and_error_status() -> None:
    message = Message.tool_message(
        [ToolResultBlock(call_id="c", output={"ok": False}, status="error", name="f")], message_id="t"
    )
    # the SDK's tool message has no ``name`` and no error flag: the text says the call failed
    assert to_openai_chat([message]) == [{"role": "tool", "tool_call_id": "c", "content": 'Error: {"ok": false}'}]
    (back,) = from_openai_chat(to_openai_chat([message]))
    assert back.tool_result_blocks() == [ToolResultBlock(call_id="c", output='Error: {"ok": false}')]


def test_blocks_the_format_cannot_carry_raise_with_position() -> None:
    video = Message(role="user", content=[TextBlock(text="x"), VideoBlock(media=MediaRef(url="https://v"))])
    with pytest.raises(FormatError) as err:
        to_openai_chat([Message.text_message("hi"), video])
    assert (err.value.index, err.value.key) == (1, "content[1]")
    assert "VideoBlock" in str(err.value)


@pytest.mark.parametrize(
    ("wire", "index", "key", "fragment"),
    [
        ([{"content": "hi"}], 0, "role", "missing required 'role'"),
        ([{"role": "user", "content": "a"}, {"role": 7, "content": "b"}], 1, "role", "must be a non-empty string"),
        ([{"role": "user"}], 0, "content", "missing required 'content'"),
        ([{"role": "user", "content": 42}], 0, "content", "must be a string or a list of parts"),
        ([{"role": "user", "content": [{"text": "hologram"}]}], 0, "content[0].type", "has no 'type'"),
        (
            [{"role": "user", "content": "q"}, {"role": "assistant", "tool_calls": [{"function": {"name": "f"}}]}],
            1,
            "tool_calls[0].id",
            "missing required 'id'",
        ),
        (
            [{"role": "assistant", "tool_calls": [{"id": "x", "function": {"name": "f", "arguments": "{oops"}}]}],
            0,
            "tool_calls[0].function.arguments",
            "not valid JSON",
        ),
        (
            [{"role": "assistant", "tool_calls": [{"id": "x", "function": {"name": "f", "arguments": "[1]"}}]}],
            0,
            "tool_calls[0].function.arguments",
            "JSON object",
        ),
        (
            [
                {
                    "role": "assistant",
                    "tool_calls": [{"id": "x", "function": {"name": "f", "arguments": {"q": [object()]}}}],
                }
            ],
            0,
            "tool_calls[0].function.arguments",
            "JSON cannot carry",
        ),
        ([{"role": "assistant", "tool_calls": [{"id": "x"}]}], 0, "tool_calls[0].function", "must be an object"),
        ([{"role": "assistant", "tool_calls": "nope"}], 0, "tool_calls", "must be a list"),
        ([{"role": "tool", "content": "x"}], 0, "tool_call_id", "missing required 'tool_call_id'"),
        (["not a dict"], 0, "role", "must be an object"),
        ([{"role": "user", "content": "x", "tool_calls": [{"id": "a"}]}], 0, "tool_calls", "only assistant"),
    ],
)
def test_malformed_openai_dicts_name_index_and_key(wire: list[Any], index: int, key: str, fragment: str) -> None:
    with pytest.raises(FormatError) as err:
        from_openai_chat(wire)
    assert err.value.index == index
    assert err.value.key == key
    assert fragment in str(err.value)
    assert str(err.value).startswith(f"message {index}, key {key!r}: ")


def test_not_a_list_is_rejected() -> None:
    with pytest.raises(FormatError, match="must be a list of messages"):
        from_openai_chat("hello")


def test_compare_helper_reports_the_first_difference() -> None:
    a = [Message.text_message("hi"), Message.text_message("yo", role="assistant")]
    b = [Message.text_message("hi"), Message.text_message("no", role="assistant")]
    assert first_difference(a, a, "openai_chat") is None
    diff = first_difference(a, b, "openai_chat")
    assert diff is not None and diff.startswith("message 1 differs")
    assert json.dumps(to_openai_chat(a))  # plain JSON types only
