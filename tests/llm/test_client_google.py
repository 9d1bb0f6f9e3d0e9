"""GoogleClient on the official google-genai SDK against the local fake generateContent server."""

from __future__ import annotations

import pytest

from windowkeeper.blocks import ReasoningBlock, ToolCallBlock, ToolResultBlock
from windowkeeper.errors import ProviderError
from windowkeeper.llm import LLMRequest, create_client
from windowkeeper.llm.google_client import GoogleClient
from windowkeeper.messages import Message
from windowkeeper.testing.fake_servers import FakeGeminiServer, FakeToolCall, FakeUsage

TOOL = {
    "name": "lookup",
    "description": "Find a record",
    "parameters": {"type": "object", "properties": {"id": {"type": "integer"}}},
}


@pytest.fixture
async def server():
    with FakeGeminiServer() as srv:
        yield srv


def _client(srv: FakeGeminiServer, **kw: object) -> GoogleClient:
    client = create_client("gemini-2.0-flash", base_url=srv.base_url, api_key="gk", max_retries=0, **kw)
    assert isinstance(client, GoogleClient)
    return client


def _request(**changes: object) -> LLMRequest:
    base: dict[str, object] = {
        "messages": [Message.text_message("Find order 42.")],
        "system": "Be precise.",
        "max_output_tokens": 256,
    }
    base.update(changes)
    return LLMRequest.model_validate(base)


async def test_request_shape_and_text_reply(server: FakeGeminiServer) -> None:
    server.reply(
        "Order 42 shipped.",
        reasoning="Check the order.",
        usage=FakeUsage(input_tokens=80, output_tokens=20, cached_tokens=64, reasoning_tokens=12),
    )
    async with _client(server) as client:
        response = await client.acomplete(_request(temperature=0.0))
    sent = server.last_request
    assert sent.path == "/v1beta/models/gemini-2.0-flash:generateContent"
    assert FakeGeminiServer.model_of(sent) == "gemini-2.0-flash"
    assert sent.headers["x-goog-api-key"] == "gk"
    assert sent.json["contents"] == [{"role": "user", "parts": [{"text": "Find order 42."}]}]
    assert sent.json["systemInstruction"]["parts"] == [{"text": "Be precise."}]
    assert sent.json["generationConfig"]["maxOutputTokens"] == 256
    assert sent.json["generationConfig"]["temperature"] == 0.0
    assert response.text == "Order 42 shipped."
    assert isinstance(response.message.content[0], ReasoningBlock)
    usage = response.usages
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (80, 20, 100)
    assert (usage.reasoning_tokens, usage.cache_read_input_tokens) == (12, 64)


async def test_parallel_function_calls_get_unique_ids(server: FakeGeminiServer) -> None:
    server.reply(tool_calls=[("lookup", {"id": 42}), FakeToolCall("lookup", {"id": 43}, id="given-id")])
    server.reply(tool_calls=[("lookup", {"id": 44})])
    history = [
        Message.text_message("Find 41."),
        Message(role="assistant", content=[ToolCallBlock(id="c0", name="lookup", args={"id": 41})]),
        Message.tool_message([ToolResultBlock(call_id="c0", output={"status": "shipped"}, name="lookup")]),
        Message.text_message("Now 42 and 43."),
    ]
    async with _client(server) as client:
        first = await client.acomplete(LLMRequest(messages=history, tools=[TOOL]))
        second = await client.acomplete(LLMRequest(messages=history, tools=[TOOL]))
    body = server.requests[0].json
    declarations = body["tools"][0]["functionDeclarations"]
    assert [d["name"] for d in declarations] == ["lookup"]
    assert body["contents"][1]["parts"][0]["functionCall"]["name"] == "lookup"
    assert body["contents"][2]["parts"][0]["functionResponse"]["name"] == "lookup"
    calls = first.tool_calls
    assert [(c.name, c.args) for c in calls] == [("lookup", {"id": 42}), ("lookup", {"id": 43})]
    assert calls[1].id == "given-id"
    assert len({c.id for c in calls} | {c.id for c in second.tool_calls}) == 3


async def test_500_timeout_and_empty_reply_raise_provider_error(server: FakeGeminiServer) -> None:
    server.fail(500).sleep(6.0).empty()
    async with _client(server, timeout=1.5) as client:
        with pytest.raises(ProviderError) as failed:
            await client.acomplete(_request())
        assert failed.value.status_code == 500 and failed.value.provider == "google"
        with pytest.raises(ProviderError, match="timed out"):
            await client.acomplete(_request())
        with pytest.raises(ProviderError, match="no text and no tool call"):
            await client.acomplete(_request())
    assert len(server.requests) == 3


async def test_key_from_gemini_env(monkeypatch: pytest.MonkeyPatch, server: FakeGeminiServer) -> None:
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    monkeypatch.setenv("GEMINI_API_KEY", "env-gk")
    async with create_client("gemini/gemini-2.0-flash", base_url=server.base_url, max_retries=0) as client:
        assert (await client.acomplete(_request())).text == "ok"
    assert server.last_request.headers["x-goog-api-key"] == "env-gk"
