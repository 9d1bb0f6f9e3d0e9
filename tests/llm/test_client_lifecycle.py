"""Closing what the library opens: an SDK-backed client, a summarizer on it and a manager that built one close the
SDK client's connections, from async code (``aclose``/``async with``) and from sync code (``close``/``with``)."""

from __future__ import annotations

from typing import Any

import pytest

from windowkeeper.context import SummaryContextManager
from windowkeeper.llm import LLMRequest, complete, create_client
from windowkeeper.messages import Message
from windowkeeper.state import AgentState
from windowkeeper.summarize import LLMSummarizer, get_summarizer
from windowkeeper.testing.fake_servers import FakeOpenAIServer

pytest.importorskip("openai")

REQUEST = LLMRequest(messages=[Message.text_message("hi", message_id="u")])


def _client(srv: FakeOpenAIServer) -> Any:
    return create_client("gpt-4o-mini", base_url=srv.base_url, api_key="k", max_retries=0)


async def test_async_with_closes_the_loops_sdk_client() -> None:
    with FakeOpenAIServer() as srv:
        srv.reply("a")
        async with _client(srv) as client:
            await client.acomplete(REQUEST)
            assert client._clients.current() is not None
        assert client._clients.current() is None
        assert (client._clients.created, client._clients.closed) == (1, 1)


def test_sync_with_closes_the_sync_calls_sdk_client() -> None:
    with FakeOpenAIServer() as srv:
        srv.reply("a").reply("b")
        with _client(srv) as client:
            assert [complete(client, REQUEST).text for _ in range(2)] == ["a", "b"]
        assert (client._clients.created, client._clients.closed) == (1, 1)
        client.close()  # closing twice is harmless
        assert client._clients.closed == 1


async def test_sync_close_refuses_a_running_loop() -> None:
    with FakeOpenAIServer() as srv:
        client = _client(srv)
        with pytest.raises(RuntimeError, match=r"await client\.aclose\(\)"):
            client.close()


async def test_a_summarizer_closes_its_client() -> None:
    with FakeOpenAIServer() as srv:
        srv.reply("summary")
        summarizer = get_summarizer("gpt-4o-mini", base_url=srv.base_url, api_key="k", max_retries=0)
        assert isinstance(summarizer, LLMSummarizer)
        async with summarizer:
            assert await summarizer.summarize([Message.text_message("x", message_id="m")]) == "summary"
        clients = summarizer.client._clients  # type: ignore[attr-defined]
        assert (clients.created, clients.closed) == (1, 1)


async def test_a_manager_closes_the_summarizer_it_built_not_one_it_was_given() -> None:
    with FakeOpenAIServer() as srv:
        srv.reply("built").reply("given")
        history = [Message.text_message(f"m{i}", message_id=f"m{i}") for i in range(6)]
        built: SummaryContextManager[AgentState] = SummaryContextManager(
            "gpt-4o-mini", max_messages=3, keep_recent=1, base_url=srv.base_url, api_key="k", max_retries=0
        )
        await built.atrim_context(AgentState(context=list(history)))
        await built.aclose()
        assert built.summarizer.client._clients.closed == 1

        async with _client(srv) as client:
            given: SummaryContextManager[AgentState] = SummaryContextManager(
                None, summarizer=LLMSummarizer(client), max_messages=3, keep_recent=1
            )
            await given.atrim_context(AgentState(context=list(history)))
            await given.aclose()
            assert client._clients.closed == 0  # the caller's client: the caller closes it
        assert client._clients.closed == 1
