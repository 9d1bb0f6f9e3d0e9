"""LLMSummarizer through each provider's official SDK against the fake servers: exact request, reply, failures."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from windowkeeper.blocks import ToolCallBlock, ToolResultBlock
from windowkeeper.errors import ProviderError
from windowkeeper.llm import ScriptedClient, create_client
from windowkeeper.messages import Message
from windowkeeper.summarize import DEFAULT_SUMMARY_PROMPT, LLMSummarizer
from windowkeeper.testing.fake_servers import (
    FakeAnthropicServer,
    FakeGeminiServer,
    FakeOpenAIServer,
    FakeProviderServer,
    RecordedRequest,
)

OLD = [
    Message.text_message("My name is Sam and I deploy billing-api.", message_id="u1"),
    Message(
        role="assistant",
        message_id="a1",
        content=[ToolCallBlock(id="c1", name="deploy", args={"env": "staging"})],
    ),
    Message.tool_message([ToolResultBlock(call_id="c1", name="deploy", output="deployed v2.3.1 in 41 s")]),
    Message.text_message("Deployed v2.3.1 to staging.", role="assistant", message_id="a2"),
]
LINES = [
    "user: My name is Sam and I deploy billing-api.",
    'assistant: deploy({"env": "staging"})',
    "tool: [deploy] deployed v2.3.1 in 41 s",
    "assistant: Deployed v2.3.1 to staging.",
]


def _openai_responses(req: RecordedRequest) -> tuple[str, str | None, int | None, str]:
    body = req.json
    return (
        body["model"],
        body.get("instructions"),
        body.get("max_output_tokens"),
        body["input"][0]["content"][0]["text"],
    )


def _openai_chat(req: RecordedRequest) -> tuple[str, str | None, int | None, str]:
    body = req.json
    system, user = body["messages"]
    assert system["role"] == "system"
    return body["model"], system["content"], body.get("max_completion_tokens"), user["content"]


def _anthropic(req: RecordedRequest) -> tuple[str, str | None, int | None, str]:
    body = req.json
    return body["model"], body.get("system"), body["max_tokens"], body["messages"][0]["content"][0]["text"]


def _gemini(req: RecordedRequest) -> tuple[str, str | None, int | None, str]:
    body = req.json
    system = "".join(p["text"] for p in body["systemInstruction"]["parts"])
    user = body["contents"][0]["parts"][0]["text"]
    return FakeGeminiServer.model_of(req), system, body["generationConfig"]["maxOutputTokens"], user


Extract = Callable[[RecordedRequest], tuple[str, str | None, int | None, str]]
CASES: list[tuple[type[FakeProviderServer], str, dict[str, Any], str, Extract]] = [
    (FakeOpenAIServer, "gpt-4o-mini", {"api_style": "responses"}, "/v1/responses", _openai_responses),
    (FakeOpenAIServer, "gpt-4o-mini", {"api_style": "chat"}, "/v1/chat/completions", _openai_chat),
    (FakeAnthropicServer, "claude-3-5-haiku-latest", {}, "/v1/messages", _anthropic),
    (FakeGeminiServer, "gemini-2.0-flash", {}, "/v1beta/models/gemini-2.0-flash:generateContent", _gemini),
]
IDS = ["openai-responses", "openai-chat", "anthropic", "gemini"]


@pytest.mark.parametrize(("server_cls", "model", "kwargs", "path", "extract"), CASES, ids=IDS)
async def test_summary_request_on_each_provider(
    server_cls: type[FakeProviderServer], model: str, kwargs: dict[str, Any], path: str, extract: Extract
) -> None:
    with server_cls() as srv:
        srv.reply("  Sam deployed billing-api v2.3.1 to staging.  ")
        srv.reply("Second summary.")
        client = create_client(model, base_url=srv.base_url, api_key="k", max_retries=0, **kwargs)
        async with client:  # type: ignore[attr-defined]
            summarizer = LLMSummarizer(client)
            first = await summarizer.summarize(OLD, max_tokens=321)
            second = await summarizer.summarize(
                OLD[3:], previous_summary="Sam deployed v2.3.1.", max_tokens=99, instructions="Use bullet points."
            )
    assert first == "Sam deployed billing-api v2.3.1 to staging."
    assert second == "Second summary."

    req1, req2 = srv.requests
    assert req1.path == path
    got_model, system, max_out, user = extract(req1)
    assert (got_model, system, max_out) == (model, DEFAULT_SUMMARY_PROMPT, 321)
    assert user.startswith("Transcript:\n" + "\n".join(LINES) + "\n\n")
    assert user.endswith("at most 321 tokens.")

    _, system2, max_out2, user2 = extract(req2)
    assert (system2, max_out2) == ("Use bullet points.", 99)
    assert user2.startswith(
        "Earlier summary:\nSam deployed v2.3.1.\n\nTranscript:\nassistant: Deployed v2.3.1 to staging."
    )


@pytest.mark.parametrize(("server_cls", "model", "kwargs", "path", "extract"), CASES, ids=IDS)
async def test_failures_surface_as_provider_error(
    server_cls: type[FakeProviderServer], model: str, kwargs: dict[str, Any], path: str, extract: Extract
) -> None:
    with server_cls() as srv:
        srv.fail(500).sleep(6.0).empty()
        client = create_client(model, base_url=srv.base_url, api_key="k", max_retries=0, timeout=1.5, **kwargs)
        async with client:  # type: ignore[attr-defined]
            summarizer = LLMSummarizer(client, system_prompt="Custom.")
            for expected in ("500", "timed out", "no text"):
                with pytest.raises(ProviderError, match=expected):
                    await summarizer.summarize(OLD)
    assert len(srv.requests) == 3
    assert extract(srv.requests[0])[1] == "Custom."


async def test_scripted_client_sees_the_same_prompt() -> None:
    client = ScriptedClient(["done"])
    assert await LLMSummarizer(client).summarize(OLD, max_tokens=50) == "done"
    (request,) = client.requests
    assert request.max_output_tokens == 50
    assert request.system == DEFAULT_SUMMARY_PROMPT
    assert request.messages[0].role == "user"
    assert "\n".join(LINES) in request.messages[0].text()


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="acomplete"):
        LLMSummarizer("gpt-4o")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_result_chars"):
        LLMSummarizer(ScriptedClient([]), max_result_chars=-5)
