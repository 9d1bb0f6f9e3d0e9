"""A conversation whose tools and system text alone are over the budget: the gateway cannot manage it, so it
forwards the client's bytes unmanaged, but the conversation keeps its one thread (one warning, not one per call),
and management resumes on that thread once the client's tools or system text fit again."""

from __future__ import annotations

import logging
from contextlib import ExitStack
from typing import Any

import anthropic
import httpx
import openai
import pytest

from windowkeeper.testing.fake_servers import FakeAnthropicServer, FakeOpenAIServer

from .conftest import GatewayFactory

BUDGET = 1000
BIG_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": f"tool_{i}",
            "description": "a description that goes on " * 60,
            "parameters": {"type": "object", "properties": {}},
        },
    }
    for i in range(3)
]
SMALL_TOOLS = [{"type": "function", "function": {"name": "ls", "parameters": {"type": "object", "properties": {}}}}]


def _metric(url: str, name: str, route: str) -> int:
    for line in httpx.get(url + "/metrics").text.splitlines():
        if line.startswith(f'{name}{{route="{route}"}} '):
            return int(line.rsplit(" ", 1)[1])
    return 0


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING and r.name.startswith("windowkeeper")
    ]


def test_tools_over_the_budget_keep_the_conversation_on_one_thread(
    make_gateway: GatewayFactory, openai_server: FakeOpenAIServer, closing: ExitStack, caplog: pytest.LogCaptureFixture
) -> None:
    gw = make_gateway(budget=BUDGET)
    client = closing.enter_context(openai.OpenAI(base_url=gw.url + "/v1", api_key="sk-fixed", max_retries=0))
    caplog.set_level(logging.WARNING, logger="windowkeeper")
    messages: list[dict[str, Any]] = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]
    names = []
    for turn in range(3):
        raw = client.chat.completions.with_raw_response.create(model="m", messages=messages, tools=BIG_TOOLS)
        names.append(raw.headers.get("x-windowkeeper-thread"))
        sent = openai_server.last_request.json
        assert sent["messages"] == messages and sent["tools"] == BIG_TOOLS  # forwarded unmanaged
        reply = raw.parse().choices[0].message.content
        messages = [*messages, {"role": "assistant", "content": reply}, {"role": "user", "content": f"go on {turn}"}]
    assert names[0] is not None and names == [names[0]] * 3, names
    warned = _warnings(caplog)
    assert len(warned) == 1, warned
    assert names[0] in warned[0] and "tools" in warned[0]
    assert _metric(gw.url, "windowkeeper_unmanaged_total", "chat_completions") == 3
    assert _metric(gw.url, "windowkeeper_fail_open_total", "chat_completions") == 0

    # the client drops its big tools: the same thread is managed again, and the request fits
    messages = [*messages, {"role": "assistant", "content": "ok"}, {"role": "user", "content": "word " * 900}]
    raw = client.chat.completions.with_raw_response.create(model="m", messages=messages, tools=SMALL_TOOLS)
    assert raw.headers["x-windowkeeper-thread"] == names[0]
    assert int(raw.headers["x-windowkeeper-tokens-after"]) < BUDGET
    assert int(raw.headers["x-windowkeeper-tokens-before"]) > BUDGET
    assert _metric(gw.url, "windowkeeper_managed_requests_total", "chat_completions") == 1
    assert len(_warnings(caplog)) == 1


def test_a_managed_thread_whose_tools_outgrow_the_budget_is_forwarded_and_resumed(
    make_gateway: GatewayFactory,
    anthropic_server: FakeAnthropicServer,
    closing: ExitStack,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The thread's manager was made with small tools; the client then declares tools over the budget. Managing
    that request would cut the conversation to its last turn and still send more than the budget: it goes as the
    client sent it instead, on the same thread, and the next request with small tools is managed there again."""
    gw = make_gateway(budget=BUDGET)
    client = closing.enter_context(anthropic.Anthropic(base_url=gw.url, api_key="sk-fixed", max_retries=0))
    caplog.set_level(logging.WARNING, logger="windowkeeper")
    small = [{"name": "ls", "input_schema": {"type": "object"}}]
    huge = [{"name": f"t{i}", "description": "a clause " * 200, "input_schema": {"type": "object"}} for i in range(3)]
    messages: list[dict[str, Any]] = [{"role": "user", "content": "hi"}]
    raw = client.messages.with_raw_response.create(
        model="c", max_tokens=5, system="You help.", messages=messages, tools=small
    )
    name = raw.headers["x-windowkeeper-thread"]
    sizes = []
    for turn, tools in enumerate([huge, huge, small]):
        messages = [
            *messages,
            {"role": "assistant", "content": "ok"},
            {"role": "user", "content": f"turn {turn} " + "more words " * 100},
        ]
        raw = client.messages.with_raw_response.create(
            model="c", max_tokens=5, system="You help.", messages=messages, tools=tools
        )
        sent = anthropic_server.last_request.json
        assert raw.headers["x-windowkeeper-thread"] == name
        sizes.append(raw.headers.get("x-windowkeeper-tokens-after"))
        if tools is huge:
            assert sent["messages"] == messages and sent["tools"] == huge  # the client's own, not cut for nothing
    assert len(_warnings(caplog)) == 1, _warnings(caplog)
    assert _metric(gw.url, "windowkeeper_unmanaged_total", "messages") == 2
    assert sizes[2] is not None and int(sizes[2]) < BUDGET


def test_responses_and_gemini_keep_their_thread_while_their_tools_fill_the_budget(
    make_gateway: GatewayFactory, openai_server: FakeOpenAIServer, closing: ExitStack, caplog: pytest.LogCaptureFixture
) -> None:
    genai = pytest.importorskip("google.genai")
    from google.genai import types

    from windowkeeper.testing.fake_servers import FakeGeminiServer

    gemini_server = closing.enter_context(FakeGeminiServer())
    gw = make_gateway(budget=BUDGET, gemini_base_url=gemini_server.url)
    caplog.set_level(logging.WARNING, logger="windowkeeper")
    oa = closing.enter_context(openai.OpenAI(base_url=gw.url + "/v1", api_key="sk-fixed", max_retries=0))
    tools: Any = [
        {"type": "function", "name": f"t{i}", "description": "a clause " * 200, "parameters": {"type": "object"}}
        for i in range(3)
    ]
    items: list[dict[str, Any]] = [{"role": "user", "content": "hi"}]
    names = []
    for turn in range(2):
        raw = oa.responses.with_raw_response.create(model="m", input=items, tools=tools)  # type: ignore[arg-type]
        names.append(raw.headers.get("x-windowkeeper-thread"))
        assert openai_server.last_request.json["input"] == items
        items = [*items, {"role": "assistant", "content": "ok"}, {"role": "user", "content": f"on {turn}"}]
    raw = oa.responses.with_raw_response.create(model="m", input=items)
    names.append(raw.headers.get("x-windowkeeper-thread"))
    assert names[0] is not None and names == [names[0]] * 3, names

    client = genai.Client(api_key="g-fixed", http_options=types.HttpOptions(base_url=gw.url))
    closing.callback(client.close)
    big = types.Tool(
        function_declarations=[
            types.FunctionDeclaration(name=f"t{i}", description="a clause " * 200, parameters_json_schema={})
            for i in range(3)
        ]
    )
    contents: list[Any] = [{"role": "user", "parts": [{"text": "hi"}]}]
    threads = []
    for turn, config in enumerate([types.GenerateContentConfig(tools=[big])] * 2 + [None]):
        reply = client.models.generate_content(model="gemini-2.5-flash", contents=contents, config=config)
        assert reply.sdk_http_response is not None
        threads.append(reply.sdk_http_response.headers.get("x-windowkeeper-thread"))
        contents = [
            *contents,
            {"role": "model", "parts": [{"text": "ok"}]},
            {"role": "user", "parts": [{"text": f"{turn}"}]},
        ]
    assert threads[0] is not None and threads == [threads[0]] * 3, threads
    assert len(_warnings(caplog)) == 2, _warnings(caplog)  # one per thread
    assert _metric(gw.url, "windowkeeper_unmanaged_total", "responses") == 2
    assert _metric(gw.url, "windowkeeper_managed_requests_total", "responses") == 1
