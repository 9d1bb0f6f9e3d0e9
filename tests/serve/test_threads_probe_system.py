"""A conversation whose system text changes between calls (an agent that puts the date, its working directory or
a memory block in its system prompt) is still one conversation: it stays on its thread, whose summary and view
carry on, on every route and through each provider's SDK. Two conversations that open with the same message under
different system prompts stay apart."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import Any

import anthropic
import httpx
import openai
import pytest

genai = pytest.importorskip("google.genai")
from google.genai import types  # noqa: E402

from windowkeeper.testing.fake_servers import (  # noqa: E402
    FakeAnthropicServer,
    FakeGeminiServer,
    FakeOpenAIServer,
)

from .conftest import GatewayFactory  # noqa: E402

BUDGET = 2000
ROUTES = ["chat", "responses", "messages", "gemini"]
Send = Callable[[str, list[dict[str, Any]]], tuple[str, int]]
"""``send(system, turns)`` -> (the thread header, the tokens-after header); ``turns`` alternate user and model."""


@pytest.fixture
def gemini_server() -> Iterator[FakeGeminiServer]:
    with FakeGeminiServer() as srv:
        yield srv  # type: ignore[misc]


def _turns(count: int, tag: str = "") -> list[str]:
    return [f"{tag}turn {i} " + ("lorem ipsum dolor " if i % 2 == 0 else "sit amet ") * 40 for i in range(count)]


def _sender(
    route: str,
    url: str,
    closing: ExitStack,
    upstream: FakeOpenAIServer | FakeAnthropicServer | FakeGeminiServer,
) -> tuple[Send, Callable[[], Any]]:
    """``send`` for ``route`` through its SDK, and a reader of the system text the upstream last received."""
    if route in ("chat", "responses"):
        oa = closing.enter_context(openai.OpenAI(base_url=url + "/v1", api_key="sk-sys", max_retries=0))
        roles = ("user", "assistant")

        def send_openai(system: str, turns: list[dict[str, Any]]) -> tuple[str, int]:
            items = [{"role": roles[i % 2], "content": t} for i, t in enumerate(turns)]
            if route == "chat":
                raw: Any = oa.chat.completions.with_raw_response.create(
                    model="m", messages=[{"role": "system", "content": system}, *items]
                )
            else:
                raw = oa.responses.with_raw_response.create(model="m", instructions=system, input=items)
            return raw.headers["x-windowkeeper-thread"], int(raw.headers["x-windowkeeper-tokens-after"])

        def sent_openai() -> Any:
            body = upstream.last_request.json
            return body["messages"][0]["content"] if route == "chat" else body["instructions"]

        return send_openai, sent_openai
    if route == "messages":
        an = closing.enter_context(anthropic.Anthropic(base_url=url, api_key="sk-sys", max_retries=0))

        def send_anthropic(system: str, turns: list[dict[str, Any]]) -> tuple[str, int]:
            items = [{"role": ("user", "assistant")[i % 2], "content": t} for i, t in enumerate(turns)]
            raw = an.messages.with_raw_response.create(model="c", max_tokens=5, system=system, messages=items)
            return raw.headers["x-windowkeeper-thread"], int(raw.headers["x-windowkeeper-tokens-after"])

        return send_anthropic, lambda: upstream.last_request.json["system"]
    client = genai.Client(api_key="gemini-key", http_options=types.HttpOptions(base_url=url))
    closing.callback(client.close)

    def send_gemini(system: str, turns: list[dict[str, Any]]) -> tuple[str, int]:
        contents = [{"role": ("user", "model")[i % 2], "parts": [{"text": t}]} for i, t in enumerate(turns)]
        reply = client.models.generate_content(
            model="gemini-2.5-flash", contents=contents, config=types.GenerateContentConfig(system_instruction=system)
        )
        headers = reply.sdk_http_response.headers
        return headers["x-windowkeeper-thread"], int(headers["x-windowkeeper-tokens-after"])

    return send_gemini, lambda: upstream.last_request.json["systemInstruction"]


@pytest.fixture
def route_sender(
    make_gateway: GatewayFactory,
    openai_server: FakeOpenAIServer,
    anthropic_server: FakeAnthropicServer,
    gemini_server: FakeGeminiServer,
    closing: ExitStack,
) -> Callable[[str], tuple[Send, Callable[[], Any], str]]:
    def make(route: str) -> tuple[Send, Callable[[], Any], str]:
        gw = make_gateway(budget=BUDGET, gemini_base_url=gemini_server.url)
        upstream = {"chat": openai_server, "responses": openai_server, "messages": anthropic_server}.get(
            route, gemini_server
        )
        send, sent = _sender(route, gw.url, closing, upstream)
        return send, sent, gw.url

    return make


def _metric(url: str, name: str) -> int:
    return sum(
        int(line.rsplit(" ", 1)[1])
        for line in httpx.get(url + "/metrics").text.splitlines()
        if line.startswith((name + "{", name + " "))
    )


@pytest.mark.parametrize("route", ROUTES)
def test_a_system_text_that_changes_every_call_keeps_the_thread(
    route: str,
    route_sender: Callable[[str], tuple[Send, Callable[[], Any], str]],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="windowkeeper")
    send, sent_system, url = route_sender(route)
    turns = _turns(15)
    names = set()
    for call in range(4):
        system = f"You are terse. Today is day {call} of the project."
        name, after = send(system, turns)
        names.add(name)
        assert after < BUDGET
        assert f"day {call} of" in str(sent_system())  # the client's system text of this call goes up
        turns = [*turns, f"reply {call}", f"question {call} " + "more words " * 30]
    assert len(names) == 1, names
    # the thread's window carried on (its summary kept), not started over from the whole list
    assert not [r for r in caplog.records if "starting the thread over" in r.getMessage()]
    assert _metric(url, "windowkeeper_threads_in_memory") == 1
    assert _metric(url, "windowkeeper_managed_requests_total") == 4


@pytest.mark.parametrize("route", ["chat", "messages"])
def test_the_same_opening_under_two_system_prompts_is_two_conversations(
    route: str, route_sender: Callable[[str], tuple[Send, Callable[[], Any], str]]
) -> None:
    send, _, _ = route_sender(route)
    opening = _turns(1)
    first_a, _ = send("You are agent A.", opening)
    first_b, _ = send("You are agent B.", opening)
    assert first_a != first_b
    a = [*opening, "reply", "a goes on"]
    b = [*opening, "reply", "b goes on"]
    for _ in range(2):
        assert send("You are agent A.", a)[0] == first_a
        assert send("You are agent B.", b)[0] == first_b
        a, b = [*a, "reply", "a again"], [*b, "reply", "b again"]


@pytest.mark.parametrize("route", ["chat", "responses"])
def test_two_conversations_alike_but_for_their_system_prompts_part_once_and_stay_apart(
    route: str,
    route_sender: Callable[[str], tuple[Send, Callable[[], Any], str]],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """B opens with A's whole list under another system prompt, so B is taken for A under a new system text and
    continues A's thread. When A goes on, the two part: A gets a thread of its own, and from then on each keeps
    its thread, neither starting the other's window over call after call."""
    caplog.set_level(logging.INFO, logger="windowkeeper")
    send, _, _ = route_sender(route)
    shared = _turns(15)
    first, _ = send("Prompt variant A.", shared)
    assert send("Prompt variant B.", [*shared, "reply", "b goes on"])[0] == first
    a, b = [*shared, "reply", "a goes on"], [*shared, "reply", "b goes on", "reply", "b again"]
    a_thread, _ = send("Prompt variant A.", a)
    assert a_thread != first
    caplog.clear()
    for turn in range(3):
        a, b = [*a, "reply", f"a {turn}"], [*b, "reply", f"b {turn}"]
        assert send("Prompt variant A.", a)[0] == a_thread
        assert send("Prompt variant B.", b)[0] == first
    assert not [r for r in caplog.records if "starting the thread over" in r.getMessage()]
