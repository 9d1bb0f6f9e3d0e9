"""Under budget the gateway is invisible: the upstream gets the client's own bytes and headers, the client gets
the upstream's answer, streamed or not, through the official SDKs (sync and async)."""

from __future__ import annotations

import asyncio
import json
import time
from contextlib import ExitStack

import anthropic
import httpx
import openai

from windowkeeper.testing.fake_servers import FakeAnthropicServer, FakeOpenAIServer, FakeToolCall

from .harness import Gateway

CHAT = [
    {"role": "system", "content": "Be brief."},
    {"role": "developer", "content": "Prefer metric units."},
    {"role": "user", "content": [{"type": "text", "text": "hi"}, {"type": "x_future_part", "v": 1}], "x_tag": 7},
]


def test_the_upstream_receives_the_clients_exact_bytes_and_headers(
    gateway: Gateway, openai_server: FakeOpenAIServer
) -> None:
    raw = b'{"model": "m",  "messages": [{"role": "user", "content": "hi", "x_unknown": [1, 2.50]}], "x_top": null}'
    response = httpx.post(
        gateway.url + "/v1/chat/completions?api-version=7",
        content=raw,
        headers={"authorization": "Bearer sk-one", "content-type": "application/json", "x-client-thing": "kept"},
    )
    assert response.status_code == 200
    received = openai_server.last_request
    assert received.raw == raw
    assert received.query == {"api-version": ["7"]}
    assert received.headers["authorization"] == "Bearer sk-one"
    assert received.headers["x-client-thing"] == "kept"
    assert response.json()["choices"][0]["message"]["content"] == "ok"
    assert response.headers["x-windowkeeper-thread"]
    assert response.headers["x-windowkeeper-tokens-before"] == response.headers["x-windowkeeper-tokens-after"]


def test_chat_sync_streaming_and_not(gateway: Gateway, openai_server: FakeOpenAIServer, closing: ExitStack) -> None:
    client = closing.enter_context(openai.OpenAI(base_url=gateway.url + "/v1", api_key="sk-a", max_retries=0))
    openai_server.reply("hello there", tool_calls=[FakeToolCall("lookup", {"q": "x"}, id="call_9")])
    done = client.chat.completions.create(model="m", messages=CHAT, extra_body={"x_top": {"a": 1}})
    assert done.choices[0].message.tool_calls[0].id == "call_9"
    body = openai_server.last_request.json
    assert body["messages"] == CHAT
    assert body["x_top"] == {"a": 1}
    openai_server.reply("streamed words arrive")
    with client.chat.completions.stream(model="m", messages=CHAT, stream_options={"include_usage": True}) as stream:
        pieces = [e.delta for e in stream if e.type == "content.delta" and e.delta]
        final = stream.get_final_completion()
    assert pieces == ["streamed", " words", " arrive"]
    assert final.usage is not None and final.usage.prompt_tokens > 0
    assert openai_server.last_request.json["messages"] == CHAT


def test_responses_and_anthropic_async(
    gateway: Gateway, openai_server: FakeOpenAIServer, anthropic_server: FakeAnthropicServer
) -> None:
    async def scenario() -> None:
        oa = openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key="sk-b", max_retries=0)
        items = [{"type": "message", "role": "user", "content": "hi", "x_unknown": True}]
        openai_server.reply("from responses")
        response = await oa.responses.create(model="m", input=items, instructions="Be kind.")
        assert response.output_text == "from responses"
        assert openai_server.last_request.json["input"] == items
        openai_server.reply("streamed responses text")
        async with oa.responses.stream(model="m", input=items) as stream:
            deltas = [e.delta async for e in stream if e.type == "response.output_text.delta"]
        assert "".join(deltas) == "streamed responses text"

        an = anthropic.AsyncAnthropic(base_url=gateway.url, api_key="sk-c", max_retries=0)
        system = [{"type": "text", "text": "S", "cache_control": {"type": "ephemeral"}}]
        messages = [
            {"role": "user", "content": [{"type": "text", "text": "q", "cache_control": {"type": "ephemeral"}}]}
        ]
        anthropic_server.reply("anthropic says", reasoning="thinking it over")
        message = await an.messages.create(model="c", max_tokens=50, system=system, messages=messages)
        assert [b.type for b in message.content] == ["thinking", "text"]
        assert anthropic_server.last_request.json["system"] == system
        assert anthropic_server.last_request.json["messages"] == messages
        anthropic_server.reply("streamed anthropic", tool_calls=[("grep", {"pattern": "x"})])
        async with an.messages.stream(model="c", max_tokens=50, messages=messages) as astream:
            final = await astream.get_final_message()
        assert [b.type for b in final.content] == ["text", "tool_use"]
        assert final.content[1].input == {"pattern": "x"}
        await oa.close()
        await an.close()
        sent = anthropic_server.last_request.headers
        assert "sk-c" in (sent.get("x-api-key", ""), sent.get("authorization", "").removeprefix("Bearer "))
        assert sent["anthropic-version"]

    asyncio.run(scenario())


def test_other_paths_are_relayed_to_their_family_with_the_query(
    gateway: Gateway, openai_server: FakeOpenAIServer, anthropic_server: FakeAnthropicServer, closing: ExitStack
) -> None:
    oa = closing.enter_context(openai.OpenAI(base_url=gateway.url + "/v1", api_key="sk-a", max_retries=0))
    assert [m.id for m in oa.models.list()] == ["gpt-fake"]
    assert openai_server.last_request.path == "/v1/models"
    an = closing.enter_context(anthropic.Anthropic(base_url=gateway.url, api_key="sk-c", max_retries=0))
    count = an.messages.count_tokens(model="c", messages=[{"role": "user", "content": "hello"}])
    assert count.input_tokens > 0
    assert anthropic_server.last_request.path == "/v1/messages/count_tokens"
    assert [m.id for m in an.models.list()] == ["claude-fake"]  # /v1/models with anthropic-version: Anthropic's
    missing = httpx.get(gateway.url + "/v1/nothing/here?x=1")
    assert missing.status_code == 404
    assert "no route for GET /v1/nothing/here" in missing.json()["error"]["message"]


def test_healthz_and_metrics(gateway: Gateway, openai_server: FakeOpenAIServer) -> None:
    assert httpx.get(gateway.url + "/healthz").json() == {"status": "ok"}
    httpx.post(gateway.url + "/v1/chat/completions", json={"model": "m", "messages": CHAT})
    text = httpx.get(gateway.url + "/metrics").text
    assert 'windowkeeper_requests_total{route="chat_completions",outcome="200"} 1' in text
    assert 'windowkeeper_managed_requests_total{route="chat_completions"} 1' in text
    assert 'windowkeeper_cuts_total{route="chat_completions"} 0' in text
    assert 'windowkeeper_upstream_latency_seconds_count{route="chat_completions"} 1' in text
    assert "# TYPE windowkeeper_upstream_latency_seconds histogram" in text


def test_bypass_header_forwards_an_over_budget_list_unchanged(make_gateway, openai_server: FakeOpenAIServer) -> None:  # type: ignore[no-untyped-def]
    gw = make_gateway(budget=300)
    messages = [
        {"role": "user", "content": "word " * 400},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "more"},
    ]
    raw = json.dumps({"model": "m", "messages": messages}).encode()
    off = httpx.post(gw.url + "/v1/chat/completions", content=raw, headers={"X-Windowkeeper": "off"})
    assert off.status_code == 200
    assert openai_server.last_request.raw == raw
    assert "x-windowkeeper-thread" not in off.headers
    managed = httpx.post(gw.url + "/v1/chat/completions", content=raw)
    assert openai_server.last_request.raw != raw
    assert (
        int(managed.headers["x-windowkeeper-tokens-after"])
        <= 300
        < int(managed.headers["x-windowkeeper-tokens-before"])
    )


def test_a_responses_call_continued_by_previous_response_id_passes_through_unchanged(
    make_gateway,
    openai_server: FakeOpenAIServer,  # type: ignore[no-untyped-def]
    closing: ExitStack,
) -> None:
    """The provider keeps that conversation (``previous_response_id``, ``conversation``): the gateway sees only the
    new input, so it never manages it, even when the new input alone is over the budget."""
    gateway = make_gateway(budget=1000)
    client = closing.enter_context(openai.OpenAI(base_url=gateway.url + "/v1", api_key="sk-prev", max_retries=0))
    first = client.responses.create(model="m", input=[{"role": "user", "content": "start the job"}])
    new_input = [
        {"type": "function_call_output", "call_id": "call_1", "output": "line of build output\n" * 600},
        {"role": "user", "content": "and now?", "x_client_tag": 3},
    ]
    raw = json.dumps(
        {"model": "m", "input": new_input, "previous_response_id": first.id, "store": True, "x_top": [1, 2.50]}
    ).encode()
    for stream in (False, True):
        body = raw if not stream else raw[:-1] + b', "stream": true}'
        response = httpx.post(
            gateway.url + "/v1/responses", content=body, headers={"authorization": "Bearer sk-prev"}, timeout=30
        )
        assert response.status_code == 200
        assert openai_server.last_request.raw == body
        assert "x-windowkeeper-thread" not in response.headers
    # the SDK's own call, streamed: relayed event by event, the request as the SDK sent it
    with client.responses.stream(model="m", input="next step", previous_response_id=first.id) as events:
        final = events.get_final_response()
    assert final.output_text == "ok"
    sent = openai_server.last_request.json
    assert sent["previous_response_id"] == first.id and sent["input"] == "next step"
    conversation = {"model": "m", "input": new_input, "conversation": "conv_1"}
    response = httpx.post(gateway.url + "/v1/responses", json=conversation, headers={"authorization": "Bearer sk-prev"})
    assert response.status_code == 200 and openai_server.last_request.json == conversation


def test_an_unchanged_continuation_goes_upstream_before_the_window_has_run(
    gateway: Gateway, openai_server: FakeOpenAIServer
) -> None:
    """A thread that never needed a change, far under its watermark: each next call goes up as sent and is
    answered while the window does its bookkeeping behind it, and the response still says what was sent (the
    window's own count) and which thread it is."""
    messages: list[dict[str, object]] = [{"role": "system", "content": "Be brief."}]
    threads = set()
    for n in range(5):
        messages.append({"role": "user", "content": f"question {n}", "x_tag": n})
        raw = json.dumps({"model": "m", "messages": messages, "stream": n % 2 == 1}).encode()
        response = httpx.post(
            gateway.url + "/v1/chat/completions", content=raw, headers={"authorization": "Bearer sk-early"}
        )
        assert response.status_code == 200
        assert openai_server.last_request.raw == raw
        headers = response.headers
        assert headers["x-windowkeeper-tokens-before"] == headers["x-windowkeeper-tokens-after"]
        assert int(headers["x-windowkeeper-tokens-after"]) > 0
        threads.add(response.headers["x-windowkeeper-thread"])
        messages.append({"role": "assistant", "content": f"answer {n}"})
    assert len(threads) == 1
    metrics = gateway.gateway.metrics
    assert metrics.early_forwards["chat_completions"] == 4  # every call after the first
    assert metrics.early_misses["chat_completions"] == 0
    deadline = time.monotonic() + 10
    while metrics.managed["chat_completions"] < 5 and time.monotonic() < deadline:
        time.sleep(0.01)  # the last call's window runs after its response
    assert metrics.managed["chat_completions"] == 5  # the window saw every call all the same
    assert metrics.early_recounts["chat_completions"] == 0  # the headers gave the window's own counts


def test_anthropic_system_blocks_reach_the_upstream_as_the_client_sent_them(  # type: ignore[no-untyped-def]
    make_gateway, anthropic_server: FakeAnthropicServer
) -> None:
    """A ``system`` of blocks with a ``cache_control`` goes upstream as the client's bytes while nothing is cut,
    and once the window summarizes, as the client's blocks with the summary a text block after them."""
    gw = make_gateway(budget=1_500)
    system = [{"type": "text", "text": "You are a careful assistant.", "cache_control": {"type": "ephemeral"}}]
    messages: list[dict[str, object]] = [{"role": "user", "content": "hi"}]
    raw = json.dumps({"model": "m", "max_tokens": 64, "system": system, "messages": messages}).encode()
    assert httpx.post(gw.url + "/v1/messages", content=raw).status_code == 200
    assert anthropic_server.last_request.raw == raw
    for turn in range(30):
        messages += [
            {"role": "assistant", "content": f"answer {turn} " + "lorem ipsum " * 30},
            {"role": "user", "content": f"question {turn} " + "dolor sit " * 30},
        ]
        body = {"model": "m", "max_tokens": 64, "system": system, "messages": messages}
        assert httpx.post(gw.url + "/v1/messages", json=body).status_code == 200
    sent = anthropic_server.last_request.body["system"]
    assert sent[0] == system[0] and len(sent) == 2 and "Summary of the earlier" in sent[1]["text"]
