"""OpenAIClient on the official SDK against the local fake server: Responses and Chat Completions."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable

import pytest

from windowkeeper.blocks import ReasoningBlock, TextBlock, ToolCallBlock, ToolResultBlock
from windowkeeper.errors import ProviderError
from windowkeeper.llm import LLMRequest, create_client
from windowkeeper.llm.openai_client import OpenAIClient
from windowkeeper.messages import Message
from windowkeeper.testing.fake_servers import FakeOpenAIServer, FakeToolCall, FakeUsage

TOOLS = [
    {
        "name": "get_weather",
        "description": "Weather for a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
]


def _request(**changes: object) -> LLMRequest:
    base: dict[str, object] = {
        "messages": [Message.text_message("What is the weather in Paris and Oslo?", message_id="u1")],
        "system": "You are terse.",
        "max_output_tokens": 120,
    }
    base.update(changes)
    return LLMRequest.model_validate(base)


@pytest.fixture
def server():
    with FakeOpenAIServer() as srv:
        yield srv


Connect = Callable[..., OpenAIClient]


@pytest.fixture
async def connect(server: FakeOpenAIServer) -> AsyncIterator[Connect]:
    """Clients on the fake server, each closed (its SDK client's connections with it) when the test ends."""
    made: list[OpenAIClient] = []

    def _client(api_style: str = "responses", **kw: object) -> OpenAIClient:
        client = create_client(
            "gpt-4o-mini", base_url=server.base_url, api_key="test-key", api_style=api_style, max_retries=0, **kw
        )
        assert isinstance(client, OpenAIClient)
        made.append(client)
        return client

    yield _client
    for client in made:
        await client.aclose()


async def test_responses_request_and_text_reply(connect: Connect, server: FakeOpenAIServer) -> None:
    server.reply("It is sunny.", usage=FakeUsage(input_tokens=40, output_tokens=6, cached_tokens=32))
    response = await connect().acomplete(_request())

    sent = server.last_request
    assert sent.path == "/v1/responses"
    assert sent.headers["authorization"] == "Bearer test-key"
    assert sent.json["model"] == "gpt-4o-mini"
    assert sent.json["instructions"] == "You are terse."
    assert sent.json["max_output_tokens"] == 120
    assert sent.json["input"] == [
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "What is the weather in Paris and Oslo?"}],
        },
    ]
    assert "tools" not in sent.json and "temperature" not in sent.json

    assert response.text == "It is sunny."
    assert response.message.role == "assistant"
    assert response.usages.prompt_tokens == 40
    assert response.usages.completion_tokens == 6
    assert response.usages.total_tokens == 46
    assert response.usages.cache_read_input_tokens == 32
    assert response.message.metadata["provider"] == "openai"
    assert response.raw is not None and response.raw["object"] == "response"


async def test_responses_parallel_tool_calls_reasoning_and_tools_spec(
    connect: Connect, server: FakeOpenAIServer
) -> None:
    server.reply(
        tool_calls=[FakeToolCall("get_weather", {"city": "Paris"}, id="call_p"), ("get_weather", {"city": "Oslo"})],
        reasoning="Two cities, two calls.",
        usage=FakeUsage(input_tokens=50, output_tokens=30, reasoning_tokens=12),
    )
    response = await connect().acomplete(_request(tools=TOOLS, temperature=0.2))

    assert server.last_request.json["tools"] == [
        {
            "type": "function",
            "name": "get_weather",
            "description": "Weather for a city",
            "parameters": TOOLS[0]["parameters"],
        },
    ]
    assert server.last_request.json["temperature"] == 0.2
    calls = response.tool_calls
    assert [(c.id, c.name, c.args) for c in calls] == [
        ("call_p", "get_weather", {"city": "Paris"}),
        ("call_1", "get_weather", {"city": "Oslo"}),
    ]
    assert [d["id"] for d in response.message.tools_calls or []] == ["call_p", "call_1"]
    assert json.loads((response.message.tools_calls or [])[1]["function"]["arguments"]) == {"city": "Oslo"}
    assert isinstance(response.message.content[0], ReasoningBlock)
    assert response.message.reasoning == "Two cities, two calls."
    assert response.usages.reasoning_tokens == 12


async def test_responses_sends_tool_history_and_embedded_system(connect: Connect, server: FakeOpenAIServer) -> None:
    history = [
        Message.text_message("Policy: metric units.", role="system", message_id="s1"),
        Message.text_message("Weather in Paris?", message_id="u1"),
        Message(role="assistant", content=[ToolCallBlock(id="c1", name="get_weather", args={"city": "Paris"})]),
        Message.tool_message([ToolResultBlock(call_id="c1", output="18 C", name="get_weather")]),
    ]
    await connect().acomplete(LLMRequest(messages=history, system="You are terse."))
    body = server.last_request.json
    assert body["instructions"] == "You are terse.\n\nPolicy: metric units."
    kinds = [item["type"] for item in body["input"]]
    assert kinds == ["message", "function_call", "function_call_output"]
    assert body["input"][1]["call_id"] == "c1"
    assert body["input"][2] == {"type": "function_call_output", "call_id": "c1", "output": "18 C"}


async def test_chat_request_and_parallel_tool_calls(connect: Connect, server: FakeOpenAIServer) -> None:
    server.reply(
        "Checking both.",
        tool_calls=[("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Oslo"})],
        usage=FakeUsage(input_tokens=21, output_tokens=9, cached_tokens=16, reasoning_tokens=3),
    )
    response = await connect("chat").acomplete(_request(tools=TOOLS))

    sent = server.last_request
    assert sent.path == "/v1/chat/completions"
    assert sent.json["model"] == "gpt-4o-mini"
    assert sent.json["max_completion_tokens"] == 120
    assert "max_tokens" not in sent.json
    assert sent.json["messages"] == [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "What is the weather in Paris and Oslo?"},
    ]
    assert sent.json["tools"][0] == {
        "type": "function",
        "function": {"name": "get_weather", "description": "Weather for a city", "parameters": TOOLS[0]["parameters"]},
    }
    assert isinstance(response.message.content[0], TextBlock)
    assert response.text == "Checking both."
    assert [(c.id, c.args["city"]) for c in response.tool_calls] == [("call_1", "Paris"), ("call_2", "Oslo")]
    usage = response.usages
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (21, 9, 30)
    assert (usage.cache_read_input_tokens, usage.reasoning_tokens) == (16, 3)


async def test_chat_max_tokens_field_is_switchable(server: FakeOpenAIServer) -> None:
    client = OpenAIClient(
        "local-model",
        api_style="chat",
        base_url=server.base_url,
        api_key="k",
        max_retries=0,
        chat_max_tokens_field="max_tokens",
    )
    async with client:
        await client.acomplete(_request())
    assert server.last_request.json["max_tokens"] == 120
    assert "max_completion_tokens" not in server.last_request.json


@pytest.mark.parametrize("api_style", ["responses", "chat"])
async def test_http_500_raises_provider_error_without_retry_storm(
    connect: Connect, server: FakeOpenAIServer, api_style: str
) -> None:
    server.fail(500, "boom")
    with pytest.raises(ProviderError) as info:
        await connect(api_style).acomplete(_request())
    assert info.value.status_code == 500
    assert info.value.provider == "openai"
    assert isinstance(info.value.__cause__, Exception)
    assert len(server.requests) == 1


@pytest.mark.parametrize("api_style", ["responses", "chat"])
async def test_timeout_raises_provider_error(connect: Connect, server: FakeOpenAIServer, api_style: str) -> None:
    server.sleep(3.0)
    client = connect(api_style, timeout=0.3)
    with pytest.raises(ProviderError, match="timed out"):
        await client.acomplete(_request())


@pytest.mark.parametrize("api_style", ["responses", "chat"])
async def test_empty_reply_raises_provider_error(connect: Connect, server: FakeOpenAIServer, api_style: str) -> None:
    server.empty()
    with pytest.raises(ProviderError, match="no text and no tool call"):
        await connect(api_style).acomplete(_request())


async def test_malformed_body_raises_provider_error(connect: Connect, server: FakeOpenAIServer) -> None:
    server.raw(b"this is not json")
    with pytest.raises(ProviderError):
        await connect("chat").acomplete(_request())


async def test_one_sdk_client_is_reused_across_calls(connect: Connect, server: FakeOpenAIServer) -> None:
    client = connect()
    for text in ("a", "b", "c"):
        server.reply(text)
    texts = [(await client.acomplete(_request())).text for _ in range(3)]
    assert texts == ["a", "b", "c"]
    assert client._clients.created == 1
    await client.aclose()


def test_sync_use_across_event_loops(server: FakeOpenAIServer) -> None:
    from windowkeeper.llm import complete

    server.reply("first").reply("second")
    with create_client("gpt-4o-mini", base_url=server.base_url, api_key="k", max_retries=0) as client:  # type: ignore[attr-defined]
        assert complete(client, _request()).text == "first"
        assert complete(client, _request()).text == "second"
        assert client._clients.current() is None  # the sync calls' SDK client lives on the thread's own loop
    assert client._clients.closed == 1


async def test_missing_key_is_a_provider_error(monkeypatch: pytest.MonkeyPatch, server: FakeOpenAIServer) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    async with create_client("gpt-4o-mini", base_url=server.base_url) as client:  # type: ignore[attr-defined]
        with pytest.raises(ProviderError, match="OPENAI_API_KEY"):
            await client.acomplete(_request())
    assert server.requests == []


async def test_key_and_base_url_from_environment(monkeypatch: pytest.MonkeyPatch, server: FakeOpenAIServer) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "env-key")
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    server.reply("from env")
    async with create_client("gpt-4o-mini", max_retries=0) as client:  # type: ignore[attr-defined]
        assert (await client.acomplete(_request())).text == "from env"
    assert server.last_request.headers["authorization"] == "Bearer env-key"
