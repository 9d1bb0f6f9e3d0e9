"""Anthropic, Gemini and OpenAI Responses conversion: real transcripts, provider rules, replies, malformed input."""

from __future__ import annotations

from typing import Any

import pytest

from windowkeeper import Window
from windowkeeper.blocks import (
    DocumentBlock,
    ImageBlock,
    MediaRef,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
)
from windowkeeper.errors import FormatError
from windowkeeper.llm.formats import (
    anthropic_blocks_to_message,
    first_difference,
    from_anthropic,
    from_gemini,
    from_openai_chat,
    from_responses_input,
    gemini_content_to_messages,
    to_anthropic,
    to_gemini,
    to_responses_input,
)
from windowkeeper.messages import Message
from windowkeeper.units import validate

from .formats_data import tau_trajectories


def _turn() -> list[Message]:
    """system, user, assistant with reasoning + two parallel calls, both results (one failed), final answer."""
    return [
        Message.text_message("You are helpful.", role="system", message_id="s"),
        Message.text_message("Weather in Paris and Rome?", message_id="u"),
        Message(
            message_id="a1",
            role="assistant",
            content=[
                ReasoningBlock(text="Two cities.", signature="sig-1"),
                TextBlock(text="Checking both."),
                ToolCallBlock(id="call_p", name="weather", args={"city": "Paris"}),
                ToolCallBlock(id="call_r", name="weather", args={"city": "Rome"}),
            ],
        ),
        Message.tool_message([ToolResultBlock(call_id="call_p", output="18C", name="weather")], message_id="t1"),
        Message.tool_message(
            [ToolResultBlock(call_id="call_r", output="service down", status="error", name="weather")],
            message_id="t2",
        ),
        Message.text_message("Paris is 18C; Rome is unavailable.", role="assistant", message_id="a2"),
    ]


# -- tau-bench through Anthropic and Gemini ------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["anthropic", "gemini", "openai_responses"])
def test_tau_bench_round_trips_and_validates(fmt: str) -> None:
    for n, record in enumerate(tau_trajectories()):
        ours = from_openai_chat(record["traj"])
        if fmt == "anthropic":
            back = from_anthropic(*to_anthropic(ours, passthrough=False))
        elif fmt == "gemini":
            back = from_gemini(*to_gemini(ours, passthrough=False))
        else:
            back = from_responses_input(to_responses_input(ours, passthrough=False)[1])
        diff = first_difference(ours, back, fmt)  # type: ignore[arg-type]
        assert diff is None, f"trajectory {n}: {diff}"
        if fmt != "openai_responses":
            for provider in ("openai", "anthropic", "gemini"):
                assert validate(back, provider) == [], f"trajectory {n} via {fmt} invalid for {provider}"


# -- Anthropic ------------------------------------------------------------------------------------------------


def test_anthropic_shape() -> None:
    system, wire = to_anthropic(_turn())
    assert system == "You are helpful."
    assert wire == [
        {"role": "user", "content": [{"type": "text", "text": "Weather in Paris and Rome?"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "Two cities.", "signature": "sig-1"},
                {"type": "text", "text": "Checking both."},
                {"type": "tool_use", "id": "call_p", "name": "weather", "input": {"city": "Paris"}},
                {"type": "tool_use", "id": "call_r", "name": "weather", "input": {"city": "Rome"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "call_p", "content": "18C"},
                {"type": "tool_result", "tool_use_id": "call_r", "content": "service down", "is_error": True},
            ],
        },
        {"role": "assistant", "content": [{"type": "text", "text": "Paris is 18C; Rome is unavailable."}]},
    ]
    back = from_anthropic(system, wire)
    assert [m.role for m in back] == ["system", "user", "assistant", "tool", "tool", "assistant"]
    assert back[4].tool_result_blocks()[0].status == "error"
    assert first_difference(_turn(), back, "anthropic") is None


def test_anthropic_joins_system_messages_and_rewrites_reused_ids() -> None:
    messages = [
        Message.text_message("rule one", role="system"),
        Message.text_message("go"),
        Message(role="assistant", content=[ToolCallBlock(id="dup", name="f")]),
        Message.tool_message([ToolResultBlock(call_id="dup", output="1")]),
        Message.text_message("late rule", role="system"),
        Message(role="assistant", content=[ToolCallBlock(id="dup", name="f")]),
        Message.tool_message([ToolResultBlock(call_id="dup", output="2")]),
        Message(role="assistant", content=[ToolCallBlock(id="bad id!", name="g")]),
        Message.tool_message([ToolResultBlock(call_id="bad id!", output="3")]),
    ]
    system, wire = to_anthropic(messages)
    assert system == "rule one\n\nlate rule"
    ids = [b["id"] for m in wire for b in m["content"] if b["type"] == "tool_use"]
    results = [b["tool_use_id"] for m in wire for b in m["content"] if b["type"] == "tool_result"]
    assert ids == ["dup", "dup_2", "bad_id_"]
    assert results == ids
    back = from_anthropic(system, wire)
    assert validate(back, "anthropic") == []


def test_anthropic_reasoning_modes_and_redacted_thinking() -> None:
    assistant = Message(
        role="assistant",
        content=[ReasoningBlock(text="plain"), ReasoningBlock(text="", signature="opaque"), TextBlock(text="ok")],
    )
    messages = [Message.text_message("q"), assistant]
    _, wire = to_anthropic(messages)
    assert wire[1]["content"][:2] == [
        {"type": "thinking", "thinking": "plain"},
        {"type": "redacted_thinking", "data": "opaque"},
    ]
    _, signed = to_anthropic(messages, reasoning="signed")
    assert [b["type"] for b in signed[1]["content"]] == ["redacted_thinking", "text"]
    _, none = to_anthropic(messages, reasoning="none")
    assert none[1]["content"] == [{"type": "text", "text": "ok"}]
    back = from_anthropic(None, wire)
    assert back[1].content[1] == ReasoningBlock(text="", signature="opaque")


def test_anthropic_media_and_documents() -> None:
    user = Message(
        role="user",
        content=[
            ImageBlock(media=MediaRef(kind="data", data_base64="iVBO", mime_type="image/png")),
            ImageBlock(media=MediaRef(kind="url", url="https://x/y.jpg")),
            DocumentBlock(media=MediaRef(kind="file_id", file_id="file_1", filename="spec.pdf")),
            DocumentBlock(text="plain notes"),
        ],
    )
    _, wire = to_anthropic([user])
    assert wire[0]["content"] == [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBO"}},
        {"type": "image", "source": {"type": "url", "url": "https://x/y.jpg"}},
        {"type": "document", "source": {"type": "file", "file_id": "file_1"}, "title": "spec.pdf"},
        {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "plain notes"}},
    ]
    assert from_anthropic(None, wire)[0].content == user.content


def test_anthropic_user_message_mixing_results_and_text_splits() -> None:
    wire = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {}}]},
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "done"}]},
                {"type": "text", "text": "thanks"},
            ],
        },
    ]
    back = from_anthropic([{"type": "text", "text": "sys"}], wire)
    assert [m.role for m in back] == ["system", "user", "assistant", "tool", "user"]
    assert back[3].tool_result_blocks() == [ToolResultBlock(call_id="t1", output="done")]
    assert back[4].content == [TextBlock(text="thanks")]


def test_anthropic_response_content_blocks_and_sdk_objects() -> None:
    from anthropic.types import Message as SdkMessage

    sdk = SdkMessage.model_validate(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude",
            "stop_reason": "tool_use",
            "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1},
            "content": [
                {"type": "thinking", "thinking": "hmm", "signature": "s"},
                {"type": "text", "text": "calling", "citations": None},
                {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {"a": 1}},
            ],
        }
    )
    message = anthropic_blocks_to_message(sdk.content)
    assert message.content == [
        ReasoningBlock(text="hmm", signature="s"),
        TextBlock(text="calling"),
        ToolCallBlock(id="toolu_1", name="f", args={"a": 1}),
    ]
    assert message.tools_calls == [
        {"id": "toolu_1", "type": "function", "function": {"name": "f", "arguments": '{"a":1}'}}
    ]
    assert from_anthropic(None, sdk)[0].content == message.content


@pytest.mark.parametrize(
    ("wire", "index", "key"),
    [
        ([{"content": "x"}], 0, "role"),
        ([{"role": "user"}], 0, "content"),
        (
            [{"role": "user", "content": "q"}, {"role": "assistant", "content": [{"text": "no type"}]}],
            1,
            "content[0].type",
        ),
        ([{"role": "assistant", "content": [{"type": "tool_use", "name": "f", "input": {}}]}], 0, "content[0].id"),
        ([{"role": "user", "content": [{"type": "tool_result", "content": "x"}]}], 0, "content[0].tool_use_id"),
        ([{"role": "user", "content": [{"type": "image", "source": {"data": "x"}}]}], 0, "content[0].source.type"),
        ([{"role": "system", "content": "x"}], 0, "role"),
    ],
)
def test_anthropic_malformed_input(wire: list[Any], index: int, key: str) -> None:
    with pytest.raises(FormatError) as err:
        from_anthropic(None, wire)
    assert (err.value.index, err.value.key) == (index, key)


def test_a_reader_called_with_the_wrong_arguments_says_so_instead_of_blaming_the_payload() -> None:
    """``from_anthropic(messages)`` without its ``system`` argument was reported as "Anthropic messages are
    malformed (TypeError: ...)": the guard that turns a reader's failures on damaged input into `FormatError`
    also caught the call's own argument error. A call with wrong arguments is the caller's mistake: it raises the
    `TypeError` Python gives, naming the missing argument; damaged input still raises `FormatError`."""
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'messages'"):
        from_anthropic([{"role": "user", "content": "hi"}])  # type: ignore[call-arg]
    with pytest.raises(FormatError, match="tool_result part must be an object"):
        from_anthropic(
            None, [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "x", "content": [1]}]}]
        )


def test_anthropic_rejects_audio() -> None:
    from windowkeeper.blocks import AudioBlock

    with pytest.raises(FormatError, match="AudioBlock cannot be carried"):
        to_anthropic([Message(role="user", content=[AudioBlock(media=MediaRef(kind="data", data_base64="x"))])])


# -- Gemini ---------------------------------------------------------------------------------------------------


def test_gemini_shape() -> None:
    system, contents = to_gemini(_turn())
    assert system == {"parts": [{"text": "You are helpful."}]}
    assert contents == [
        {"role": "user", "parts": [{"text": "Weather in Paris and Rome?"}]},
        {
            "role": "model",
            "parts": [
                {"text": "Two cities.", "thought": True, "thoughtSignature": "sig-1"},
                {"text": "Checking both."},
                {"functionCall": {"name": "weather", "args": {"city": "Paris"}, "id": "call_p"}},
                {"functionCall": {"name": "weather", "args": {"city": "Rome"}, "id": "call_r"}},
            ],
        },
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "weather", "response": {"result": "18C"}, "id": "call_p"}},
                {"functionResponse": {"name": "weather", "response": {"error": "service down"}, "id": "call_r"}},
            ],
        },
        {"role": "model", "parts": [{"text": "Paris is 18C; Rome is unavailable."}]},
    ]
    back = from_gemini(system, contents)
    # ids written are read back (Gemini's functionCall.id pairs each response with its call)
    assert back[2].tool_call_ids() == ["call_p", "call_r"]
    assert [b.call_id for m in back[3:5] for b in m.tool_result_blocks()] == ["call_p", "call_r"]
    assert back[4].tool_result_blocks()[0].status == "error"
    assert first_difference(_turn(), back, "gemini") is None
    assert validate(back, "gemini") == []


def test_gemini_object_outputs_and_pairing_by_name() -> None:
    contents = [
        {"role": "user", "parts": [{"text": "go"}]},
        {
            "role": "model",
            "parts": [
                {"functionCall": {"name": "a", "args": {}}},
                {"functionCall": {"name": "b", "args": {"n": 1}}},
                {"functionCall": {"name": "a", "args": {"n": 2}}},
            ],
        },
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "b", "response": {"rows": [1, 2]}}},
                {"functionResponse": {"name": "a", "response": {"result": None}}},
                {"functionResponse": {"name": "a", "response": {"result": 7}}},
            ],
        },
    ]
    back = from_gemini(None, contents, id_prefix="r9")
    assert back[1].tool_call_ids() == ["r9_1_0", "r9_1_1", "r9_1_2"]
    results = [m.tool_result_blocks()[0] for m in back[2:]]
    assert [(r.call_id, r.output) for r in results] == [("r9_1_1", {"rows": [1, 2]}), ("r9_1_0", None), ("r9_1_2", 7)]
    assert to_gemini(back)[1] == contents


def test_gemini_signature_on_function_call_part_round_trips() -> None:
    reply = {
        "role": "model",
        "parts": [{"functionCall": {"name": "f", "args": {}}, "thoughtSignature": "c2ln"}],
    }
    (message,) = gemini_content_to_messages(reply, id_prefix="x")
    assert message.content == [ReasoningBlock(text="", signature="c2ln"), ToolCallBlock(id="x_0_0", name="f")]
    _, contents = to_gemini([Message.text_message("q"), message])
    assert contents[1] == reply


def test_gemini_media_and_snake_case_input() -> None:
    contents = [
        {
            "role": "user",
            "parts": [
                {"inline_data": {"mime_type": "image/png", "data": "iVBO"}},
                {"file_data": {"file_uri": "gs://b/clip.mp4", "mime_type": "video/mp4"}},
                {"inlineData": {"mimeType": "text/plain", "data": "aGVsbG8="}},
            ],
        }
    ]
    (message,) = from_gemini("be brief", contents)[1:]
    kinds = [type(b).__name__ for b in message.content]
    assert kinds == ["ImageBlock", "VideoBlock", "DocumentBlock"]
    assert message.content[2] == DocumentBlock(text="hello")
    _, back = to_gemini([message], passthrough=False)
    assert back[0]["parts"][0] == {"inlineData": {"mimeType": "image/png", "data": "iVBO"}}
    assert back[0]["parts"][1] == {"fileData": {"fileUri": "gs://b/clip.mp4", "mimeType": "video/mp4"}}


def test_gemini_sdk_content_is_accepted() -> None:
    from google.genai import types

    content = types.Content(
        role="model",
        parts=[types.Part(text="hi"), types.Part(function_call=types.FunctionCall(name="f", args={"a": 1}))],
    )
    (message,) = gemini_content_to_messages(content, id_prefix="p")
    assert message.content == [TextBlock(text="hi"), ToolCallBlock(id="p_0_1", name="f", args={"a": 1})]


@pytest.mark.parametrize(
    ("contents", "index", "key"),
    [
        ([{"role": "assistant", "parts": []}], 0, "role"),
        ([{"role": "user", "parts": "x"}], 0, "parts"),
        ([{"role": "user", "parts": ["not a part"]}], 0, "parts[0]"),
        ([{"role": "model", "parts": [{"functionCall": {"args": {}}}]}], 0, "parts[0].functionCall.name"),
    ],
)
def test_gemini_malformed_input(contents: list[Any], index: int, key: str) -> None:
    with pytest.raises(FormatError) as err:
        from_gemini(None, contents)
    assert (err.value.index, err.value.key) == (index, key)


def test_a_gemini_function_response_answering_no_call_reads_as_a_tool_result_without_its_call() -> None:
    """It raised, so a file holding one was unreadable (exit 2) where the other formats read it and `validate`
    reports orphan_tool_result (exit 1)."""
    (message,) = from_gemini(
        None, [{"role": "user", "parts": [{"functionResponse": {"name": "ghost", "response": {}}}]}]
    )
    assert message.role == "tool"
    assert "orphan_tool_result" in [p.code for p in validate([message], "gemini")]


def test_a_gemini_content_without_a_role_is_the_users() -> None:
    """The Gemini API reads a content without ``role`` as the user's, and its own quickstart sends
    ``{"contents": [{"parts": [{"text": ...}]}]}``: `Window(format="gemini")` refused such a list ("missing required
    'role'", then "it looks like Gemini: pass format='gemini'" to a window that already had it). It is a user turn
    now, passed through as it came, and the hint no longer names the window's own format."""
    contents = [{"parts": [{"text": "Explain how AI works"}]}, {"role": "model", "parts": [{"text": "It learns."}]}]
    contents.append({"parts": [{"text": "In one line?"}]})
    assert [m.role for m in from_gemini(None, contents)] == ["user", "assistant", "user"]
    fit = Window(budget=4_000, format="gemini").fit(contents)
    assert fit.messages == contents
    with pytest.raises(FormatError) as err:
        Window(budget=4_000, format="gemini").fit([{"role": "bot", "parts": [{"text": "x"}]}])
    assert "unknown role 'bot'" in str(err.value) and "pass format=" not in str(err.value)


def test_gemini_needs_mime_for_inline_data_and_a_name_for_results() -> None:
    with pytest.raises(FormatError) as err:
        to_gemini([Message(role="user", content=[ImageBlock(media=MediaRef(kind="data", data_base64="x"))])])
    assert err.value.key == "content[0].media.mime_type"
    with pytest.raises(FormatError, match="cannot name the Gemini functionResponse"):
        to_gemini([Message.tool_message([ToolResultBlock(call_id="nope", output="x")])])


# -- OpenAI Responses ----------------------------------------------------------------------------------------


def test_responses_shape() -> None:
    turn = _turn()
    turn[2] = turn[2].with_content(
        [ReasoningBlock(text="Two cities.", id="rs_1", signature="enc"), *turn[2].content[1:]]
    )
    instructions, items = to_responses_input(turn)
    assert instructions is None
    # an assistant message is the SDK's output message: a ``msg_`` id derived from the message id, and a status
    for k in (3, 8):
        assert items[k]["id"].startswith("msg_") and items[k].pop("status") == "completed"
        del items[k]["id"]
    assert items == [
        {"type": "message", "role": "system", "content": [{"type": "input_text", "text": "You are helpful."}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Weather in Paris and Rome?"}]},
        {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [{"type": "summary_text", "text": "Two cities."}],
            "encrypted_content": "enc",
        },
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Checking both.", "annotations": []}],
        },
        {"type": "function_call", "call_id": "call_p", "name": "weather", "arguments": '{"city":"Paris"}'},
        {"type": "function_call", "call_id": "call_r", "name": "weather", "arguments": '{"city":"Rome"}'},
        {"type": "function_call_output", "call_id": "call_p", "output": "18C"},
        {"type": "function_call_output", "call_id": "call_r", "output": "Error: service down"},
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Paris is 18C; Rome is unavailable.", "annotations": []}],
        },
    ]
    back = from_responses_input(items)
    assert [m.role for m in back] == ["system", "user", "assistant", "tool", "tool", "assistant"]
    assert back[2].content[0] == ReasoningBlock(text="Two cities.", id="rs_1", signature="enc")
    assert first_difference(turn, back, "openai_responses") is None


def test_responses_instructions_mode_and_signed_reasoning() -> None:
    instructions, items = to_responses_input(_turn(), system="instructions", reasoning="signed")
    assert instructions == "You are helpful."
    assert all(item.get("role") != "system" for item in items)
    assert all(item["type"] != "reasoning" for item in items)  # no Responses item id, so not sendable
    back = from_responses_input(items, instructions)
    assert back[0].role == "system" and back[0].text() == "You are helpful."


def test_responses_reply_output_items_and_plain_string_input() -> None:
    output = [
        {"type": "reasoning", "id": "rs_9", "summary": [], "status": None},
        {
            "type": "message",
            "id": "msg_1",
            "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "On it.", "annotations": [], "logprobs": []}],
        },
        {
            "type": "function_call",
            "id": "fc_1",
            "call_id": "call_1",
            "name": "f",
            "arguments": "{}",
            "status": "completed",
        },
    ]
    (message,) = from_responses_input(output)
    assert message.content == [
        ReasoningBlock(text="", id="rs_9"),
        TextBlock(text="On it."),
        ToolCallBlock(id="call_1", name="f"),
    ]
    assert from_responses_input("hello")[0].content == [TextBlock(text="hello")]


def test_responses_user_media() -> None:
    user = Message(
        role="user",
        content=[
            ImageBlock(media=MediaRef(kind="file_id", file_id="file-img")),
            ImageBlock(media=MediaRef(kind="data", data_base64="iVBO", mime_type="image/png")),
            DocumentBlock(media=MediaRef(kind="url", url="https://x/a.pdf", filename="a.pdf")),
        ],
    )
    _, items = to_responses_input([user])
    assert items[0]["content"] == [
        {"type": "input_image", "detail": "auto", "file_id": "file-img"},
        {"type": "input_image", "detail": "auto", "image_url": "data:image/png;base64,iVBO"},
        {"type": "input_file", "file_url": "https://x/a.pdf", "filename": "a.pdf"},
    ]
    assert from_responses_input(items)[0].content == user.content


@pytest.mark.parametrize(
    ("items", "index", "key"),
    [
        ([{"type": "function_call", "name": "f", "arguments": "{}"}], 0, "call_id"),
        ([{"type": "function_call", "call_id": "c", "name": "f", "arguments": "{x"}], 0, "arguments"),
        ([{"type": "message", "role": "user", "content": "a"}, {"type": 5}], 1, "type"),
        ([{"type": "message", "role": "robot", "content": "a"}], 0, "role"),
        ([{"type": "function_call_output", "call_id": "c", "output": 3}], 0, "output"),
        ([{"content": "no role or type"}], 0, "type"),
    ],
)
def test_responses_malformed_input(items: list[Any], index: int, key: str) -> None:
    with pytest.raises(FormatError) as err:
        from_responses_input(items)
    assert (err.value.index, err.value.key) == (index, key)


def test_unknown_reasoning_mode_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="reasoning='some'"):
        to_anthropic([], reasoning="some")  # type: ignore[arg-type]


def test_anthropic_source_kinds_not_modelled_pass_through() -> None:
    """A custom-content document (``source.type == "content"``) made the reader refuse the whole conversation; a
    source kind not modelled is now kept whole, like any unknown kind, and passes through unchanged."""
    from windowkeeper.llm.formats.registry import get_format

    document = {
        "type": "document",
        "source": {"type": "content", "content": [{"type": "text", "text": "Clause 4: rent is due on the 1st."}]},
        "title": "Lease",
        "citations": {"enabled": True},
    }
    items = [{"role": "user", "content": [document, {"type": "text", "text": "When is rent due?"}]}]
    fmt = get_format("anthropic")
    read = fmt.read(items)
    assert read[0].text().startswith("[unknown document]") and "Clause 4" in read[0].text()
    assert fmt.write_plain(read) == items
