"""Failing open and loudly: upstream errors reach the client unchanged, broken streams stay broken, malformed
bodies get 400 in the provider's shape, and an internal failure forwards the client's own request."""

from __future__ import annotations

import json
import logging
import socket
import time
from contextlib import ExitStack

import anthropic
import httpx
import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from windowkeeper.serve.upstream import is_google_request
from windowkeeper.testing.fake_servers import FakeAnthropicServer, FakeGeminiServer, FakeOpenAIServer, FakeReply

from .conftest import GatewayFactory
from .harness import Gateway

MESSAGES = [{"role": "user", "content": "hello"}]
try:  # newer anthropic SDKs run on httpx2
    import httpx2

    BROKEN: tuple[type[BaseException], ...] = (httpx.HTTPError, httpx2.HTTPError)
except ImportError:
    BROKEN = (httpx.HTTPError,)


def test_an_upstream_error_reaches_the_client_unchanged(
    gateway: Gateway, openai_server: FakeOpenAIServer, closing: ExitStack
) -> None:
    openai_server.fail(429, "slow down please", headers={"retry-after": "7", "x-ratelimit-remaining-requests": "0"})
    client = closing.enter_context(openai.OpenAI(base_url=gateway.url + "/v1", api_key="sk", max_retries=0))
    with pytest.raises(openai.RateLimitError) as caught:
        client.chat.completions.create(model="m", messages=MESSAGES)
    assert caught.value.response.headers["retry-after"] == "7"
    assert caught.value.response.headers["x-ratelimit-remaining-requests"] == "0"
    assert caught.value.body["message"] == "slow down please"  # type: ignore[index]
    openai_server.fail(503, "overloaded")
    with pytest.raises(openai.InternalServerError):
        client.chat.completions.create(model="m", messages=MESSAGES, stream=True)


def test_anthropic_errors_keep_their_shape(
    gateway: Gateway, anthropic_server: FakeAnthropicServer, closing: ExitStack
) -> None:
    anthropic_server.fail(529, "Overloaded")
    client = closing.enter_context(anthropic.Anthropic(base_url=gateway.url, api_key="sk", max_retries=0))
    with pytest.raises(anthropic.APIStatusError) as caught:
        client.messages.create(model="c", max_tokens=5, messages=MESSAGES)
    assert caught.value.status_code == 529
    assert caught.value.body == {"type": "error", "error": {"type": "api_error", "message": "Overloaded"}}


def test_an_upstream_that_times_out_or_is_down_is_a_gateway_error(
    make_gateway: GatewayFactory, openai_server: FakeOpenAIServer, closing: ExitStack
) -> None:
    gw = make_gateway(budget=4000, timeout=0.5)
    openai_server.sleep(3)
    started = time.monotonic()
    response = httpx.post(gw.url + "/v1/chat/completions", json={"model": "m", "messages": MESSAGES})
    assert response.status_code == 504 and time.monotonic() - started < 3
    assert "timed out" in response.json()["error"]["message"]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    down = make_gateway(budget=4000, anthropic_base_url=f"http://127.0.0.1:{closed}")
    client = closing.enter_context(anthropic.Anthropic(base_url=down.url, api_key="sk", max_retries=0))
    with pytest.raises(anthropic.APIStatusError) as caught:
        client.messages.create(model="c", max_tokens=5, messages=MESSAGES)
    assert caught.value.status_code == 502
    assert "cannot reach the anthropic upstream" in caught.value.body["error"]["message"]  # type: ignore[index]


@pytest.mark.parametrize("route", ["chat", "messages"])
def test_a_stream_the_upstream_drops_is_dropped_for_the_client_too(
    gateway: Gateway, openai_server: FakeOpenAIServer, anthropic_server: FakeAnthropicServer, route: str
) -> None:
    if route == "chat":
        openai_server.drop(after_events=3, text="one two three four five six")
        # the broken stream and the clients are closed here: a dropped response is no longer in the pool, so only
        # closing its stream releases its socket
        with openai.OpenAI(base_url=gateway.url + "/v1", api_key="sk", max_retries=0) as client:
            with (
                pytest.raises((openai.APIError, *BROKEN)),
                client.chat.completions.create(model="m", messages=MESSAGES, stream=True) as chunks,
            ):
                for _ in chunks:
                    pass
            assert client.chat.completions.create(model="m", messages=MESSAGES).choices[0].message.content == "ok"
    else:
        anthropic_server.drop(after_events=4, text="one two three four five six")
        with anthropic.Anthropic(base_url=gateway.url, api_key="sk", max_retries=0) as aclient:
            with (
                pytest.raises((anthropic.APIError, *BROKEN)),
                aclient.messages.stream(model="c", max_tokens=5, messages=MESSAGES) as stream,
            ):
                for _ in stream:
                    pass
                stream.get_final_message()
            reply = aclient.messages.create(model="c", max_tokens=5, messages=MESSAGES)
            assert reply.content[0].text == "ok"  # type: ignore[union-attr]


def test_a_client_that_leaves_mid_stream_does_not_disturb_the_gateway(
    gateway: Gateway, openai_server: FakeOpenAIServer
) -> None:
    openai_server.enqueue(FakeReply(text=" ".join(f"w{i}" for i in range(40)), event_delay=0.05))
    body = {"model": "m", "messages": MESSAGES, "stream": True}
    with httpx.stream("POST", gateway.url + "/v1/chat/completions", json=body) as response:
        first = next(response.iter_bytes())
        assert first.startswith(b"data: ")
    # the client closed after one chunk; the gateway answers the next request as usual
    assert (
        httpx.post(gateway.url + "/v1/chat/completions", json={"model": "m", "messages": MESSAGES}).status_code == 200
    )
    deadline = time.monotonic() + 5
    while (
        time.monotonic() < deadline
        and 'route="chat_completions",outcome="200"} 2' not in httpx.get(gateway.url + "/metrics").text
    ):
        time.sleep(0.05)
    assert 'route="chat_completions",outcome="200"} 2' in httpx.get(gateway.url + "/metrics").text


@pytest.mark.parametrize(
    ("path", "raw", "message"),
    [
        ("/v1/chat/completions", b"{not json", "the request body is not valid JSON"),
        ("/v1/chat/completions", b"[1, 2]", "the request body must be a JSON object, got list"),
        ("/v1/chat/completions", b'{"model": "m"}', "'messages' is required"),
        ("/v1/chat/completions", b'{"messages": "hi"}', "'messages' must be a list, got str"),
        ("/v1/responses", b'{"input": [{"role": "user", "content": "x"}, 5]}', "'input[1]' must be an object, got int"),
        ("/v1/chat/completions", b"[" * 100_000 + b"]" * 100_000, "nests deeper than the gateway reads"),
    ],
)
def test_malformed_bodies_get_400_in_the_openai_shape(gateway: Gateway, path: str, raw: bytes, message: str) -> None:
    response = httpx.post(gateway.url + path, content=raw, headers={"content-type": "application/json"})
    assert response.status_code == 400
    error = response.json()["error"]
    assert message in error["message"] and error["type"] == "invalid_request_error"


def test_malformed_bodies_get_400_in_the_anthropic_shape(gateway: Gateway) -> None:
    response = httpx.post(gateway.url + "/v1/messages", content=b'{"messages": {"role": "user"}}')
    assert response.status_code == 400
    assert response.json() == {
        "type": "error",
        "error": {"type": "invalid_request_error", "message": "'messages' must be a list, got dict"},
    }


def test_a_body_over_the_limit_is_refused(make_gateway: GatewayFactory) -> None:
    gw = make_gateway(budget=4000, max_body_bytes=1000)
    response = httpx.post(gw.url + "/v1/messages", content=b"x" * 5000)
    assert response.status_code == 413
    assert "over the gateway's limit of 1,000" in response.json()["error"]["message"]


def test_an_internal_failure_forwards_the_original_request_and_warns_once(
    gateway: Gateway, openai_server: FakeOpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    # content the manager cannot read (a number): the gateway cannot manage it, the provider must judge it
    raw = json.dumps({"model": "m", "messages": [{"role": "user", "content": 12345}]}).encode()
    with caplog.at_level(logging.WARNING, logger="windowkeeper.serve.gateway"):
        response = httpx.post(
            gateway.url + "/v1/chat/completions", content=raw, headers={"authorization": "Bearer sk-secret"}
        )
    assert response.status_code == 200
    assert openai_server.last_request.raw == raw
    warnings = [r for r in caplog.records if r.name == "windowkeeper.serve.gateway"]
    assert len(warnings) == 1 and "forwarding it unchanged" in warnings[0].getMessage()
    assert "thread t" in warnings[0].getMessage()
    assert "12345" not in caplog.text and "sk-secret" not in caplog.text
    assert 'windowkeeper_fail_open_total{route="chat_completions"} 1' in httpx.get(gateway.url + "/metrics").text


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.sampled_from(["role", "content", "type", "text", "x"]), inner, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    messages=st.lists(json_values, max_size=5),
    path=st.sampled_from(["/v1/chat/completions", "/v1/responses", "/v1/messages"]),
)
def test_hostile_bodies_never_break_the_gateway(gateway: Gateway, messages: list[object], path: str) -> None:
    key = "input" if path == "/v1/responses" else "messages"
    response = httpx.post(gateway.url + path, json={"model": "m", key: messages}, timeout=30)
    assert response.status_code in (200, 400), response.text
    if response.status_code == 400:
        assert "error" in response.json()


def test_a_gemini_key_goes_to_the_gemini_upstream_only(
    make_gateway: GatewayFactory, openai_server: FakeOpenAIServer, anthropic_server: FakeAnthropicServer
) -> None:
    """Before the Gemini route, a google-genai client pointed at the gateway had its request, ``x-goog-api-key``
    included, relayed to the OpenAI host. A Gemini request (its path, key header or ``key`` query parameter) goes
    to the Gemini upstream and to no other host."""
    from google import genai
    from google.genai import types

    with FakeGeminiServer() as gemini_server:
        gateway = make_gateway(gemini_base_url=gemini_server.url)
        client = genai.Client(api_key="AIza-secret", http_options=types.HttpOptions(base_url=gateway.url))
        assert client.models.generate_content(model="gemini-2.5-flash", contents="hello").text == "ok"
        client.close()
        httpx.get(f"{gateway.url}/v1/models?key=AIza-secret").raise_for_status()
        assert [r.headers.get("x-goog-api-key") for r in gemini_server.requests] == ["AIza-secret", None]
    assert openai_server.requests == [] and anthropic_server.requests == []
    # an OpenAI fine-tuned model's id holds colons: still OpenAI's
    assert not is_google_request("/v1/models/ft:gpt-4o-mini:org::abc", ["authorization"])
    assert is_google_request("/v1/models/gemini-2.5-flash:streamGenerateContent", [])
