"""The converters' wire types: what they promise the SDKs, at run time (the SDK sends exactly what we wrote) and to
the type checker (``mypy --strict`` accepts the SDK calls and rejects the shapes an SDK would refuse)."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mypy_strict import mypy_strict
from windowkeeper import Message, to_anthropic, to_gemini, to_openai_chat
from windowkeeper.blocks import ImageBlock, MediaRef, ReasoningBlock, TextBlock, ToolCallBlock, ToolResultBlock
from windowkeeper.errors import FormatError
from windowkeeper.testing.fake_servers import FakeAnthropicServer, FakeGeminiServer, FakeOpenAIServer, FakeReply

from .test_formats_roundtrip_property import conversation

CONVERSATION = [
    Message.text_message("Answer briefly.", role="system"),
    Message.text_message("What is in notes.txt?"),
    Message(
        role="assistant",
        content=[
            ReasoningBlock(text="look at the file", signature="c2lnMQ=="),
            ToolCallBlock(id="call_1", name="read_file", args={"path": "notes.txt"}),
        ],
    ),
    Message(role="tool", content=[ToolResultBlock(call_id="call_1", name="read_file", output={"text": "milk"})]),
    Message(role="assistant", content=[TextBlock(text="It says milk.")]),
    Message(
        role="user",
        content=[
            TextBlock(text="And this?"),
            ImageBlock(media=MediaRef(kind="data", data_base64="iVBORw0KGgo=", mime_type="image/png")),
        ],
    ),
]


def _plain(value: Any) -> Any:
    """``value`` as the JSON a server receives (bytes would not survive this; the wire dicts hold none)."""
    return json.loads(json.dumps(value))


def test_openai_sdk_sends_the_converted_messages_unchanged() -> None:
    import openai

    messages = to_openai_chat(CONVERSATION, include_reasoning=False)
    with FakeOpenAIServer([FakeReply(text="ok")]) as srv, openai.OpenAI(base_url=srv.base_url, api_key="t") as client:
        client.chat.completions.create(model="m", messages=messages)
    assert srv.requests[-1].json["messages"] == _plain(messages)
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "assistant", "user"]


def test_anthropic_sdk_sends_the_converted_messages_unchanged() -> None:
    import anthropic

    system, messages = to_anthropic(CONVERSATION, reasoning="signed", cache_breakpoints=["system", -1])
    assert isinstance(system, list)
    with (
        FakeAnthropicServer([FakeReply(text="ok")]) as srv,
        anthropic.Anthropic(base_url=srv.base_url, api_key="t") as client,
    ):
        client.messages.create(model="m", max_tokens=16, system=system, messages=messages)
    body = srv.requests[-1].json
    assert body["messages"] == _plain(messages)
    assert body["system"] == [{"type": "text", "text": "Answer briefly.", "cache_control": {"type": "ephemeral"}}]
    assert body["messages"][1]["content"][0] == {
        "type": "thinking",
        "thinking": "look at the file",
        "signature": "c2lnMQ==",
    }


def _camel(value: Any) -> Any:
    """Keys in camelCase: google-genai sends some keys snake_case (``inlineData.mime_type``), which Gemini's JSON
    parser accepts as well; the conversation here has no user keys with underscores that this would rename."""
    if isinstance(value, dict):
        return {re.sub(r"_([a-z])", lambda m: m.group(1).upper(), k): _camel(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_camel(v) for v in value]
    return value


def test_gemini_sdk_spelling_reaches_the_api_as_the_rest_spelling() -> None:
    """``spelling="sdk"`` (snake_case, bytes) is the same content: google-genai serializes it to what the default
    REST spelling writes (up to the key spelling the SDK picks)."""
    from google import genai
    from google.genai import types

    rest_system, rest = to_gemini(CONVERSATION, reasoning="signed")
    sdk_system, sdk = to_gemini(CONVERSATION, reasoning="signed", spelling="sdk")
    assert sdk[1]["parts"] is not None and sdk[1]["parts"][0]["thought_signature"] == b"sig1"
    with (
        FakeGeminiServer([FakeReply(text="ok")]) as srv,
        genai.Client(api_key="t", http_options=types.HttpOptions(base_url=srv.base_url)) as client,
    ):
        client.models.generate_content(
            model="gemini-2.0-flash", contents=sdk, config={"system_instruction": sdk_system}
        )
    body = srv.requests[-1].json
    assert _camel(body["contents"]) == _plain(rest)
    assert rest_system is not None and _camel(body["systemInstruction"]["parts"]) == _plain(rest_system["parts"])


def test_gemini_sdk_spelling_refuses_what_cannot_become_bytes() -> None:
    unsigned = [Message(role="assistant", content=[ReasoningBlock(text="", signature="not base64!")])]
    with pytest.raises(FormatError, match="not base64") as err:
        to_gemini(unsigned, spelling="sdk")
    assert err.value.key == "contents[0].parts[0].thoughtSignature"
    assert to_gemini(unsigned)[1] == [{"role": "model", "parts": [{"text": "", "thoughtSignature": "not base64!"}]}]
    with pytest.raises(ValueError, match="spelling='camel'"):
        to_gemini(unsigned, spelling="camel")  # type: ignore[call-overload]


def test_anthropic_refuses_media_types_the_api_rejects() -> None:
    bmp = [
        Message(
            role="user", content=[ImageBlock(media=MediaRef(kind="data", data_base64="Qk0=", mime_type="image/bmp"))]
        )
    ]
    with pytest.raises(FormatError, match="'image/bmp'") as err:
        to_anthropic(bmp)
    assert (err.value.index, err.value.key) == (0, "content[0].media.mime_type")


SNIPPET = """
from __future__ import annotations

import anthropic
import openai
from google import genai

from windowkeeper import Message, Window, to_anthropic, to_gemini, to_openai_chat, to_responses_input


def calls(messages: list[Message]) -> None:
    oa = openai.OpenAI(api_key="x")
    oa.chat.completions.create(model="m", messages=to_openai_chat(messages))
    oa.chat.completions.create(model="m", messages=Window(budget=9000).fit([]).messages)
    oa.chat.completions.create(model="m", messages=to_responses_input(messages)[1])  # rejected
    an = anthropic.Anthropic(api_key="x")
    system, msgs = to_anthropic(messages, reasoning="signed", cache_breakpoints=["system", -1])
    an.messages.create(model="m", max_tokens=1, system=system or anthropic.omit, messages=msgs)
    fit = Window(budget=9000, format="anthropic").fit([])
    an.messages.create(model="m", max_tokens=1, system=fit.system or anthropic.omit, messages=fit.messages)
    an.messages.create(model="m", max_tokens=1, messages=to_anthropic(messages)[1])  # rejected
    g = genai.Client(api_key="x")
    sdk_system, contents = to_gemini(messages, spelling="sdk")
    g.models.generate_content(model="m", contents=contents, config={"system_instruction": sdk_system})
    g.models.generate_content(model="m", contents=to_gemini(messages)[1])  # rejected
    reveal_type(to_openai_chat(messages)[0])
    reveal_type(Window(budget=9000, format="gemini").fit([]).messages)
"""


@pytest.mark.slow
def test_mypy_strict_accepts_the_sdk_calls_and_rejects_the_wrong_shapes(tmp_path: Path) -> None:
    """Not only "no errors": each shape an SDK refuses is an error, so the types have not degraded to Any."""
    module = tmp_path / "wire_snippet.py"
    module.write_text(textwrap.dedent(SNIPPET), encoding="utf-8")
    done = mypy_strict([str(module)])
    out = done.stdout + done.stderr
    lines = module.read_text(encoding="utf-8").splitlines()
    expected = {n for n, line in enumerate(lines, start=1) if line.endswith("# rejected")}
    errors = {int(m.group(1)) for m in re.finditer(r"wire_snippet\.py:(\d+): error:", out)}
    assert errors == expected, out
    notes = [line for line in out.splitlines() if "Revealed type" in line]
    assert len(notes) == 2, out
    assert "ChatCompletionSystemMessageParam" in notes[0] and "OpenAIChatAssistantMessage" in notes[0], notes[0]
    assert "GeminiContent" in notes[1], notes[1]


def _unb64(text: str) -> bytes:
    """Standard or URL-safe base64 (pydantic, so google-genai, writes bytes URL-safe) as bytes."""
    import base64

    return base64.urlsafe_b64decode(text.replace("+", "-").replace("/", "_"))


def _decoded(value: Any) -> Any:
    """REST-spelled contents with base64 fields decoded: the same bytes, however the base64 was written."""
    if isinstance(value, dict):
        out = {k: _decoded(v) for k, v in value.items()}
        if isinstance(out.get("thoughtSignature"), str):
            out["thoughtSignature"] = _unb64(out["thoughtSignature"])
        if isinstance(out.get("inlineData"), dict):
            out["inlineData"] = {**out["inlineData"], "data": _unb64(out["inlineData"]["data"])}
        return out
    if isinstance(value, list):
        return [_decoded(v) for v in value]
    return value


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_gemini_sdk_spelling_is_the_rest_content(data: st.DataObject) -> None:
    """For any conversation: google-genai reads the ``spelling="sdk"`` contents as the very content the REST spelling
    states (same keys, same bytes), or the conversion refuses a field that is not base64."""
    from google.genai import types

    messages = data.draw(conversation("gemini"))
    _, rest = to_gemini(messages)
    try:
        _, sdk = to_gemini(messages, spelling="sdk")
    except FormatError as exc:
        assert "not base64" in str(exc)
        return
    read = [types.Content.model_validate(c).model_dump(mode="json", by_alias=True, exclude_none=True) for c in sdk]
    assert _decoded(read) == _decoded(_plain(rest))


def test_gemini_sdk_spelling_keeps_a_function_responses_delivery_keys() -> None:
    """``willContinue`` and ``scheduling`` say how the API delivers a response; the SDK spelling carries them
    (``will_continue``, ``scheduling``) and google-genai sends them as the caller wrote them."""
    from google import genai
    from google.genai import types

    from windowkeeper.llm.formats import from_gemini

    contents: list[dict[str, Any]] = [
        {"role": "user", "parts": [{"text": "Watch the build."}]},
        {"role": "model", "parts": [{"functionCall": {"id": "fc-1", "name": "watch", "args": {}}}]},
        {
            "role": "user",
            "parts": [
                {
                    "functionResponse": {
                        "id": "fc-1",
                        "name": "watch",
                        "response": {"output": "still running"},
                        "willContinue": True,
                        "scheduling": "WHEN_IDLE",
                    }
                }
            ],
        },
    ]
    _, sdk = to_gemini(from_gemini(None, contents), spelling="sdk")
    parts = sdk[2]["parts"]
    assert parts is not None
    response = parts[0]["function_response"]
    assert response is not None and response["will_continue"] is True and response["scheduling"] == "WHEN_IDLE"
    with (
        FakeGeminiServer([FakeReply(text="ok")]) as srv,
        genai.Client(api_key="t", http_options=types.HttpOptions(base_url=srv.base_url)) as client,
    ):
        client.models.generate_content(model="gemini-2.0-flash", contents=sdk)
    sent = srv.requests[-1].json["contents"][2]["parts"][0]["functionResponse"]
    # google-genai 3.x sends this field in its own snake_case spelling, which the API's JSON parser accepts
    assert sent.get("willContinue", sent.get("will_continue")) is True and sent["scheduling"] == "WHEN_IDLE"
