"""Clients of the thread probes (`test_threads_probe_*`): one conversation sent through each route's official
SDK, with the response's ``x-windowkeeper-*`` headers read back."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

import anthropic
import httpx
import openai
import pytest

from windowkeeper.testing.fake_servers import FakeAnthropicServer, FakeGeminiServer, FakeOpenAIServer

from .conftest import GatewayFactory
from .harness import Gateway

ROUTES = ["chat", "responses", "messages", "gemini"]


@dataclass
class Sent:
    """What the gateway said of one call (its headers; None where a header is absent)."""

    thread: str | None
    before: int | None
    after: int | None


def _sent(headers: Any) -> Sent:
    def number(name: str) -> int | None:
        value = headers.get(name)
        return int(value) if value is not None else None

    return Sent(
        headers.get("x-windowkeeper-thread"),
        number("x-windowkeeper-tokens-before"),
        number("x-windowkeeper-tokens-after"),
    )


Send = Callable[[str, list[str]], Sent]
"""``send(system, turns)``: ``turns`` alternate the user's and the model's texts, the user's first."""


def sender(
    route: str,
    url: str,
    closing: ExitStack,
    upstream: FakeOpenAIServer | FakeAnthropicServer | FakeGeminiServer,
    key: str = "sk-probe",
) -> tuple[Send, Callable[[], Any]]:
    """``send`` for ``route`` through its SDK, and a reader of the system text the upstream last received."""
    if route in ("chat", "responses"):
        oa = closing.enter_context(openai.OpenAI(base_url=url + "/v1", api_key=key, max_retries=0))
        roles = ("user", "assistant")

        def send_openai(system: str, turns: list[str]) -> Sent:
            items = [{"role": roles[i % 2], "content": t} for i, t in enumerate(turns)]
            if route == "chat":
                raw: Any = oa.chat.completions.with_raw_response.create(
                    model="m", messages=[{"role": "system", "content": system}, *items]
                )
            else:
                raw = oa.responses.with_raw_response.create(model="m", instructions=system, input=items)
            return _sent(raw.headers)

        def sent_openai() -> Any:
            body = upstream.last_request.json
            return body["messages"][0]["content"] if route == "chat" else body["instructions"]

        return send_openai, sent_openai
    if route == "messages":
        an = closing.enter_context(anthropic.Anthropic(base_url=url, api_key=key, max_retries=0))

        def send_anthropic(system: str, turns: list[str]) -> Sent:
            items = [{"role": ("user", "assistant")[i % 2], "content": t} for i, t in enumerate(turns)]
            raw = an.messages.with_raw_response.create(model="c", max_tokens=5, system=system, messages=items)
            return _sent(raw.headers)

        return send_anthropic, lambda: upstream.last_request.json["system"]
    from google import genai
    from google.genai import types

    client = genai.Client(api_key=key, http_options=types.HttpOptions(base_url=url))
    closing.callback(client.close)

    def send_gemini(system: str, turns: list[str]) -> Sent:
        contents: Any = [{"role": ("user", "model")[i % 2], "parts": [{"text": t}]} for i, t in enumerate(turns)]
        reply = client.models.generate_content(
            model="gemini-2.5-flash", contents=contents, config=types.GenerateContentConfig(system_instruction=system)
        )
        assert reply.sdk_http_response is not None
        return _sent(reply.sdk_http_response.headers)

    return send_gemini, lambda: upstream.last_request.json["systemInstruction"]


def metric(url: str, name: str) -> int:
    """The sum of a series over its routes, from the gateway's ``/metrics``."""
    return sum(
        int(float(line.rsplit(" ", 1)[1]))
        for line in httpx.get(url + "/metrics").text.splitlines()
        if line.startswith((name + "{", name + " "))
    )


def turns(count: int, tag: str = "") -> list[str]:
    """``count`` long alternating turns (15 of them are over a 2,000-token budget)."""
    return [f"{tag}turn {i} " + ("lorem ipsum dolor " if i % 2 == 0 else "sit amet ") * 40 for i in range(count)]


RouteSender = Callable[..., tuple[Send, Callable[[], Any], Gateway]]
"""``route_sender(route, **settings)``: a new gateway (``budget`` 2,000 unless given), ``send`` through the
route's SDK, and the reader of the system text the upstream last received."""


@pytest.fixture
def gemini_server() -> Iterator[FakeGeminiServer]:
    with FakeGeminiServer() as srv:
        yield srv  # type: ignore[misc]


@pytest.fixture
def route_sender(
    make_gateway: GatewayFactory,
    openai_server: FakeOpenAIServer,
    anthropic_server: FakeAnthropicServer,
    gemini_server: FakeGeminiServer,
    closing: ExitStack,
) -> RouteSender:
    def make(route: str, **settings: Any) -> tuple[Send, Callable[[], Any], Gateway]:
        settings.setdefault("budget", 2000)
        gw = make_gateway(gemini_base_url=gemini_server.url, **settings)
        upstream = {"chat": openai_server, "responses": openai_server, "messages": anthropic_server}.get(
            route, gemini_server
        )
        send, sent = sender(route, gw.url, closing, upstream)
        return send, sent, gw

    return make
