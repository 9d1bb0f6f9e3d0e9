"""`WindowkeeperSession.get_items(limit=N)` serves what the SDK's own sessions serve: at most N items, the newest."""

from __future__ import annotations

import json
from typing import Any

import pytest

from windowkeeper import ExtractiveSummarizer, TokenBudgetContextManager
from windowkeeper.prompt import SUMMARY_HEADER
from windowkeeper.testing.fake_servers import FakeOpenAIServer, FakeReply, FakeToolCall

agents = pytest.importorskip("agents")


def _history(turns: int) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for n in range(turns):
        items.append({"role": "user", "content": f"Question {n}: " + "why is the ledger off? " * 20})
        items.append({"type": "function_call", "call_id": f"c{n}", "name": "read", "arguments": "{}"})
        items.append({"type": "function_call_output", "call_id": f"c{n}", "output": f"ledger line {n} " * 30})
        items.append(
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": f"Answer {n}."}]}
        )
    return items


async def _summarized_session() -> Any:
    from windowkeeper.integrations.openai_agents import WindowkeeperSession

    manager = TokenBudgetContextManager(3000, reserve_tokens=500, summarizer=ExtractiveSummarizer())
    session = WindowkeeperSession("s", manager_or_budget=manager)
    await session.add_items(_history(30))
    return session


async def test_a_limit_serves_at_most_that_many_items_the_newest_of_the_view() -> None:
    """It served N+1 items (the summary item before the newest N), and fewer than N when the cut fell on a tool
    output: the SDK reads ``get_items(limit=len(expected))`` to compare the tail with what it wrote."""
    session = await _summarized_session()
    full = await session.get_items()
    assert full[0]["role"] == "system" and full[0]["content"].startswith(SUMMARY_HEADER)
    for limit in range(len(full) + 2):
        limited = await session.get_items(limit=limit)
        assert limited == (full[-limit:] if limit else []), limit
        assert (limited[:1] == full[:1]) == (limit >= len(full))  # the summary only when the whole view fits
    assert await session.get_items(limit=-1) == []


async def test_the_newest_item_is_the_one_stored_last() -> None:
    """The SDK's rewind of a server-managed retry reads ``get_items(limit=1)[0]`` as the latest item; it got the
    summary item (or nothing, when the latest item was a tool output)."""
    session = await _summarized_session()
    call = {"type": "function_call", "call_id": "late", "name": "read", "arguments": "{}"}
    output = {"type": "function_call_output", "call_id": "late", "output": "done"}
    await session.add_items([call, output])
    assert await session.get_items(limit=1) == [output]
    assert await session.get_items(limit=2) == [call, output]


@pytest.mark.parametrize("settings", [{"limit": 3}, "SessionSettings"])
async def test_session_settings_limit_is_the_default_and_an_argument_overrides_it(settings: Any) -> None:
    session = await _summarized_session()
    full = await session.get_items()
    session.session_settings = agents.SessionSettings(limit=3) if settings == "SessionSettings" else settings
    assert await session.get_items() == full[-3:]
    assert await session.get_items(limit=5) == full[-5:]
    session.session_settings = {"limit": "3"}
    with pytest.raises(Exception, match="'3'"):
        await session.get_items()


@pytest.mark.parametrize("with_filter", [False, True])
async def test_a_limit_cutting_a_call_from_its_output_sends_no_orphan_output(with_filter: bool) -> None:
    """``SessionSettings(limit=2)`` after turns of [user, call, output, answer] serves [output, answer]: the
    output's call is cut off. The SDK drops that output before the model call, so no request carries a tool
    output without its call; with the session's filter the run stays on the session's one thread (its input
    starts with the view less that output) and no request carries two summaries."""
    from openai import AsyncOpenAI

    from windowkeeper.integrations.openai_agents import WindowkeeperSession

    def lookup(key: str) -> str:
        """Look a key up.

        Args:
            key: The key.
        """
        return f"value of {key} " * 200

    agents.set_tracing_disabled(True)
    turns = 6
    replies: list[FakeReply] = []
    for t in range(turns):
        replies.append(FakeReply(tool_calls=(FakeToolCall("lookup", {"key": f"k{t}"}, id=f"call{t}"),)))
        replies.append(FakeReply(text=f"Turn {t} done"))
    manager = TokenBudgetContextManager(3000, reserve_tokens=600, summarizer=ExtractiveSummarizer())
    session = WindowkeeperSession("s", manager_or_budget=manager, session_settings=agents.SessionSettings(limit=2))
    with FakeOpenAIServer(replies) as srv:
        client = AsyncOpenAI(base_url=srv.base_url, api_key="test", max_retries=0)
        model = agents.OpenAIResponsesModel(model="gpt-4o-mini", openai_client=client)
        agent = agents.Agent(
            name="a", instructions="You look keys up.", model=model, tools=[agents.function_tool(lookup)]
        )
        config = agents.RunConfig(call_model_input_filter=session.input_filter) if with_filter else None
        for t in range(turns):
            if t:
                served = await session.get_items()
                assert served[0]["type"] == "function_call_output" and len(served) == 2
            done = await agents.Runner.run(agent, f"turn {t}", session=session, run_config=config)
            assert done.final_output == f"Turn {t} done"
        await client.close()
    assert len(srv.requests) == 2 * turns
    for request in srv.requests:
        items = request.json["input"]
        calls = {i.get("call_id") for i in items if isinstance(i, dict) and i.get("type") == "function_call"}
        outputs = [i for i in items if isinstance(i, dict) and i.get("type") == "function_call_output"]
        assert all(o["call_id"] in calls for o in outputs), items
        assert json.dumps(request.json).count(SUMMARY_HEADER) <= 1
    if with_filter:
        assert list(session.window._threads) == ["s"]
