"""Two requests of one conversation in flight at once, through the async SDKs: a retry of the same body, and two
siblings that share the history and differ in their last message (an agent's side call beside its main turn).

Both are placed on the conversation's thread before either has its window run. The one that runs second must not
start the thread's window over from its own list: a sibling that no longer continues the thread's list is a branch
of its own, and the conversation goes on on its thread."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import anthropic
import httpx
import openai
import pytest

from windowkeeper.testing.fake_servers import FakeAnthropicServer, FakeOpenAIServer

from .conftest import GatewayFactory
from .harness import Gateway

BUDGET = 2000


def _history(count: int) -> list[dict[str, Any]]:
    words = ("lorem ipsum dolor ", "sit amet ")
    return [{"role": ("user", "assistant")[i % 2], "content": f"turn {i} " + words[i % 2] * 40} for i in range(count)]


def _slow_windows(gw: Gateway, seconds: float) -> None:
    """Each window holds its thread's lock a little longer, so that a request sent beside another is placed on the
    thread before the other's window has run (what a busy process does without help)."""
    threads = gw.gateway.threads
    fit = threads.fit

    async def slow(*args: Any, **kwargs: Any) -> Any:
        await asyncio.sleep(seconds)
        return await fit(*args, **kwargs)

    threads.fit = slow  # type: ignore[method-assign]


async def _chat(client: openai.AsyncOpenAI, messages: list[dict[str, Any]]) -> tuple[str, int]:
    raw = await client.chat.completions.with_raw_response.create(model="m", messages=messages)
    return raw.headers["x-windowkeeper-thread"], int(raw.headers["x-windowkeeper-tokens-after"])


async def _messages(client: anthropic.AsyncAnthropic, messages: list[dict[str, Any]]) -> tuple[str, int]:
    raw = await client.messages.with_raw_response.create(model="c", max_tokens=5, messages=messages)
    return raw.headers["x-windowkeeper-thread"], int(raw.headers["x-windowkeeper-tokens-after"])


Send = Callable[[list[dict[str, Any]]], Awaitable[tuple[str, int]]]


async def _siblings(send: Send) -> None:
    history = _history(15)
    main = [*history, {"role": "user", "content": "the main question"}]
    thread, _ = await send(main)
    main = [*main, {"role": "assistant", "content": "ok"}, {"role": "user", "content": "go on"}]
    side = [*main[:-1], {"role": "user", "content": "a side question: name this conversation"}]

    async def side_call() -> tuple[str, int]:
        await asyncio.sleep(0.05)  # placed while the main turn's window runs (`_slow_windows`), never before it
        return await send(side)

    (main_thread, main_after), (side_thread, side_after) = await asyncio.gather(send(main), side_call())
    assert main_after < BUDGET and side_after < BUDGET
    assert main_thread == thread
    assert side_thread != thread  # the side call is a branch: its own thread
    for turn in range(2):
        main = [*main, {"role": "assistant", "content": "ok"}, {"role": "user", "content": f"next {turn}"}]
        assert (await send(main))[0] == thread


@pytest.mark.parametrize("route", ["chat", "messages"])
def test_siblings_in_flight_together_leave_the_conversation_on_its_thread(
    route: str,
    make_gateway: GatewayFactory,
    openai_server: FakeOpenAIServer,
    anthropic_server: FakeAnthropicServer,
    caplog: pytest.LogCaptureFixture,
) -> None:
    gw = make_gateway(budget=BUDGET)
    _slow_windows(gw, 0.3)
    caplog.set_level(logging.INFO, logger="windowkeeper")

    async def run() -> None:
        if route == "chat":
            async with openai.AsyncOpenAI(base_url=gw.url + "/v1", api_key="sk-conc", max_retries=0) as oa:
                await _siblings(lambda m: _chat(oa, m))
        else:
            async with anthropic.AsyncAnthropic(base_url=gw.url, api_key="sk-conc", max_retries=0) as an:
                await _siblings(lambda m: _messages(an, m))

    asyncio.run(run())
    assert not [r for r in caplog.records if "starting the thread over" in r.getMessage()]
    managed = [line for line in httpx.get(gw.url + "/metrics").text.splitlines() if "managed_requests_total{" in line]
    assert managed and managed[0].endswith(" 5")


def test_the_same_body_twice_in_flight_is_one_turn(
    make_gateway: GatewayFactory, openai_server: FakeOpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    """A client that retries a request still in flight (its timeout was shorter than the answer): both land on
    the thread, the second adds nothing, and the conversation's next turn continues the thread."""
    gw = make_gateway(budget=BUDGET)
    _slow_windows(gw, 0.2)
    caplog.set_level(logging.INFO, logger="windowkeeper")

    async def run() -> list[str]:
        async with openai.AsyncOpenAI(base_url=gw.url + "/v1", api_key="sk-conc", max_retries=0) as oa:
            history = [*_history(15), {"role": "user", "content": "q"}]
            first, _ = await _chat(oa, history)
            history = [*history, {"role": "assistant", "content": "ok"}, {"role": "user", "content": "again"}]
            twice = await asyncio.gather(_chat(oa, history), _chat(oa, history))
            history = [*history, {"role": "assistant", "content": "ok"}, {"role": "user", "content": "then"}]
            return [first, *(name for name, _ in twice), (await _chat(oa, history))[0]]

    names = asyncio.run(run())
    assert len(set(names)) == 1, names
    assert not [r for r in caplog.records if "starting the thread over" in r.getMessage()]
