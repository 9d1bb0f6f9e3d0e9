"""A ``session_input_callback`` that reshapes the history: the filter manages the run's input on a thread of its
own, and a request still carries one summary at most."""

from __future__ import annotations

import json
from typing import Any

import pytest

from windowkeeper.prompt import SUMMARY_HEADER
from windowkeeper.testing.fake_servers import FakeOpenAIServer

agents = pytest.importorskip("agents")


def _ledger(path: str) -> str:
    """Read a ledger file.

    Args:
        path: Path of the file.
    """
    return "\n".join(f"{path}:{i}: total_{i} = total_{i - 1} + {i * 7 % 13}  # ledger step {i}" for i in range(40))


def _latest(history: list[Any], new: list[Any]) -> list[Any]:
    """A callback that keeps the session's summary and its latest items, as users write one."""
    head = [item for item in history[:1] if isinstance(item, dict) and item.get("role") == "system"]
    return [*head, *history[len(head) :][-10:], *new]


def _tail(history: list[Any], new: list[Any]) -> list[Any]:
    return [*history[-10:], *new]


def _reminder_first(history: list[Any], new: list[Any]) -> list[Any]:
    return [{"role": "user", "content": "Reminder: answer briefly."}, *history, *new]


@pytest.mark.parametrize("callback", [_latest, _tail, _reminder_first])
async def test_a_reshaped_history_keeps_one_summary_per_request(callback: Any) -> None:
    """Before: an input that does not start with the view the session served was taken for all new by the empty
    view the first run was served (the session's thread restarted on it, summary item and all), and on the
    filter's own thread the session's summary item stayed beside that thread's summary: two in 17 of 40 requests.
    Now the session's summary goes to that thread as its summary, which its cuts extend."""
    from openai import AsyncOpenAI

    from windowkeeper import ExtractiveSummarizer, TokenBudgetContextManager
    from windowkeeper.integrations.openai_agents import WindowkeeperSession
    from windowkeeper.testing.fake_servers import FakeReply, FakeToolCall

    agents.set_tracing_disabled(True)
    turns = 10
    replies: list[FakeReply] = []
    for t in range(turns):
        replies.extend(
            FakeReply(tool_calls=(FakeToolCall("_ledger", {"path": f"a{t}-{k}.py"}, id=f"r{t}{k}"),)) for k in range(3)
        )
        replies.append(FakeReply(text=f"Turn {t} done"))
    with FakeOpenAIServer(replies) as srv:
        client = AsyncOpenAI(base_url=srv.base_url, api_key="test", max_retries=0)
        manager = TokenBudgetContextManager(4000, reserve_tokens=1000, summarizer=ExtractiveSummarizer())
        session = WindowkeeperSession("s1", manager_or_budget=manager)
        model = agents.OpenAIResponsesModel(model="gpt-4o-mini", openai_client=client)
        agent = agents.Agent(
            name="a",
            instructions="You keep ledgers.",
            model=model,
            tools=[agents.function_tool(_ledger), session.recall_tool],
        )
        config = agents.RunConfig(call_model_input_filter=session.input_filter, session_input_callback=callback)
        for t in range(turns):
            done = await agents.Runner.run(agent, f"turn {t}", session=session, run_config=config)
            assert done.final_output == f"Turn {t} done"
        await client.close()
    summaries = [json.dumps(r.json).count(SUMMARY_HEADER) for r in srv.requests]
    assert 1 in summaries
    reshaped = callback is _reminder_first  # the others still start with (the end of) a view it served
    assert list(session.window._threads) == (["s1", "s1:run"] if reshaped else ["s1"])
    assert max(summaries) == 1, summaries
