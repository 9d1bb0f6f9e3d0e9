"""AnthropicClient on the official SDK against the local fake Messages server."""

from __future__ import annotations

import pytest

from windowkeeper.blocks import ReasoningBlock, ToolCallBlock, ToolResultBlock
from windowkeeper.errors import ProviderError
from windowkeeper.llm import LLMRequest, create_client
from windowkeeper.llm.anthropic_client import AnthropicClient
from windowkeeper.messages import Message
from windowkeeper.testing.fake_servers import FakeAnthropicServer, FakeUsage

TOOL = {"name": "lookup", "description": "Find a record", "parameters": {"type": "object", "properties": {}}}


@pytest.fixture
async def server():
    with FakeAnthropicServer() as srv:
        yield srv


def _client(srv: FakeAnthropicServer, **kw: object) -> AnthropicClient:
    client = create_client("claude-3-5-haiku-latest", base_url=srv.base_url, api_key="ak", max_retries=0, **kw)
    assert isinstance(client, AnthropicClient)
    return client


def _request(**changes: object) -> LLMRequest:
    base: dict[str, object] = {
        "messages": [Message.text_message("Find order 42.", message_id="u1")],
        "system": "Be precise.",
        "max_output_tokens": 300,
    }
    base.update(changes)
    return LLMRequest.model_validate(base)


async def test_request_shape_and_text_reply(server: FakeAnthropicServer) -> None:
    server.reply("Order 42 shipped.", usage=FakeUsage(input_tokens=100, output_tokens=7, cached_tokens=60))
    async with _client(server) as client:
        response = await client.acomplete(_request())
    sent = server.last_request
    assert sent.path == "/v1/messages"
    assert "ak" in (sent.headers.get("x-api-key"), sent.headers.get("authorization", "").removeprefix("Bearer "))
    assert "anthropic-version" in sent.headers
    assert sent.json["model"] == "claude-3-5-haiku-latest"
    assert sent.json["system"] == "Be precise."
    assert sent.json["max_tokens"] == 300
    assert sent.json["messages"] == [{"role": "user", "content": [{"type": "text", "text": "Find order 42."}]}]
    assert response.text == "Order 42 shipped."
    usage = response.usages
    assert usage.prompt_tokens == 100  # 40 uncached + 60 cache reads
    assert usage.cache_read_input_tokens == 60
    assert (usage.completion_tokens, usage.total_tokens) == (7, 107)


async def test_default_max_tokens_and_system_messages_merge(server: FakeAnthropicServer) -> None:
    history = [
        Message.text_message("House rules: no guessing.", role="system"),
        Message.text_message("Find order 42."),
    ]
    async with _client(server) as client:
        await client.acomplete(LLMRequest(messages=history, system="Be precise."))
    body = server.last_request.json
    assert body["max_tokens"] == 4096
    assert body["system"] == "Be precise.\n\nHouse rules: no guessing."
    assert [m["role"] for m in body["messages"]] == ["user"]


async def test_parallel_tool_use_thinking_and_tool_results(server: FakeAnthropicServer) -> None:
    server.reply(
        "Looking both up.",
        tool_calls=[("lookup", {"id": 42}), ("lookup", {"id": 43})],
        reasoning="Need two lookups.",
    )
    history = [
        Message.text_message("Find order 41."),
        Message(role="assistant", content=[ToolCallBlock(id="t0", name="lookup", args={"id": 41})]),
        Message.tool_message([ToolResultBlock(call_id="t0", output="shipped")]),
        Message.text_message("Now 42 and 43."),
    ]
    async with _client(server) as client:
        response = await client.acomplete(LLMRequest(messages=history, tools=[TOOL]))
    body = server.last_request.json
    assert body["tools"] == [
        {"name": "lookup", "description": "Find a record", "input_schema": {"type": "object", "properties": {}}},
    ]
    assert body["messages"][1]["content"][0] == {"type": "tool_use", "id": "t0", "name": "lookup", "input": {"id": 41}}
    assert body["messages"][2]["content"][0]["type"] == "tool_result"
    assert body["messages"][2]["content"][0]["tool_use_id"] == "t0"
    assert [(c.id, c.args) for c in response.tool_calls] == [("toolu_1", {"id": 42}), ("toolu_2", {"id": 43})]
    assert isinstance(response.message.content[0], ReasoningBlock)
    assert response.message.content[0].signature == "fake-signature"
    assert [d["id"] for d in response.message.tools_calls or []] == ["toolu_1", "toolu_2"]


async def test_500_timeout_and_empty_reply_raise_provider_error(server: FakeAnthropicServer) -> None:
    server.fail(500).sleep(6.0).empty()
    async with _client(server, timeout=1.5) as client:
        with pytest.raises(ProviderError) as failed:
            await client.acomplete(_request())
        assert failed.value.status_code == 500 and failed.value.provider == "anthropic"
        with pytest.raises(ProviderError, match="timed out"):
            await client.acomplete(_request())
        with pytest.raises(ProviderError, match="no text and no tool call"):
            await client.acomplete(_request())
    assert len(server.requests) == 3


def test_missing_key_fails_at_call_time(monkeypatch: pytest.MonkeyPatch) -> None:
    from windowkeeper.llm import complete

    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    client = create_client("claude-3-5-haiku-latest")
    with pytest.raises(ProviderError, match="ANTHROPIC_API_KEY"):
        complete(client, _request())
