"""`WindowkeeperSession`: the OpenAI Agents SDK's Session protocol on a windowkeeper store."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from windowkeeper.llm.formats import from_responses_input
from windowkeeper.prompt import SUMMARY_HEADER
from windowkeeper.testing.fake_servers import FakeOpenAIServer
from windowkeeper.units import validate

from .scenario import SYSTEM, TURNS, make_manager, read_file, run_tests, script, user_text

agents = pytest.importorskip("agents")


async def _run_turns(session: Any, srv: FakeOpenAIServer, turns: range) -> None:
    from openai import AsyncOpenAI

    agents.set_tracing_disabled(True)
    client = AsyncOpenAI(base_url=srv.base_url, api_key="test", max_retries=0)
    agent = agents.Agent(
        name="coder",
        instructions=SYSTEM,
        tools=[agents.function_tool(read_file), agents.function_tool(run_tests)],
        model=agents.OpenAIResponsesModel(model="gpt-4o-mini", openai_client=client),
    )
    try:
        for turn in turns:
            result = await agents.Runner.run(agent, user_text(turn), session=session, max_turns=20)
            assert result.final_output.startswith(f"Turn {turn} reviewed")
    finally:
        await client.close()


async def test_session_keeps_everything_and_serves_the_managed_view(tmp_path: Path) -> None:
    from windowkeeper.integrations.openai_agents import WindowkeeperSession

    path = tmp_path / "agents.db"
    session = WindowkeeperSession("conv-1", str(path), manager_or_budget=make_manager())
    half = TURNS // 2
    with FakeOpenAIServer(script()) as srv:
        await _run_turns(session, srv, range(half))
        everything = await session.all_items()
        view = await session.get_items()
        await session.aclose()
        # every item the SDK added is kept; the view is smaller and opens with the summary
        assert len([i for i in everything if i.get("role") == "user"]) == half
        assert len(view) < len(everything)
        assert view[0]["role"] == "system" and view[0]["content"].startswith(SUMMARY_HEADER)
        assert validate(from_responses_input(view), "openai") == []

        # a new process (here: a new session object on the same file) continues the conversation
        again = WindowkeeperSession("conv-1", str(path), manager_or_budget=make_manager())
        assert await again.all_items() == everything
        assert await again.get_items() == view
        await _run_turns(again, srv, range(half, TURNS))
        requests = list(srv.requests)
    assert len(requests) == 4 * TURNS
    for request in requests[4 * half :]:
        body = request.json
        items = from_responses_input(body["input"], body.get("instructions"))
        assert validate(items, "openai") == []
        assert any(SUMMARY_HEADER in m.text() for m in items if m.role == "system")
    assert len([i for i in await again.all_items() if i.get("role") == "user"]) == TURNS
    last = await again.all_items()
    assert await again.pop_item() == last[-1]
    assert await again.all_items() == last[:-1]
    full = await again.get_items()
    for limit in (1, 2, 3, 5):
        # the newest ``limit`` items of the view, as the SDK's own sessions serve (see test_session_limit.py)
        assert await again.get_items(limit=limit) == full[-limit:]
    again.session_settings = agents.SessionSettings(limit=2)
    assert await again.get_items() == await again.get_items(limit=2)
    again.session_settings = None
    await again.clear_session()
    assert await again.get_items() == [] and await again.all_items() == []
    await again.aclose()


def test_session_implements_the_sdk_protocol() -> None:
    from agents.memory import Session

    from windowkeeper.integrations.openai_agents import WindowkeeperSession

    assert isinstance(WindowkeeperSession("s"), Session)


def test_input_filter_is_a_plain_sync_callable_with_the_offline_summarizer() -> None:
    from agents import Agent
    from agents.run_config import CallModelData, ModelInputData

    from windowkeeper.integrations.openai_agents import input_filter

    model_filter = input_filter(3000)
    items: list[Any] = []
    for n in range(30):
        items.append({"role": "user", "content": f"question {n}: " + "words " * 60})
        items.append(
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": f"answer {n} " * 40}]}
        )
    data = CallModelData(
        model_data=ModelInputData(input=items, instructions="Be kind."), agent=Agent(name="a"), context=None
    )
    out = model_filter(data)
    assert isinstance(out, ModelInputData)
    assert out.instructions.startswith("Be kind.") and SUMMARY_HEADER in out.instructions
    assert len(out.input) < len(items)


def test_a_limit_never_parts_a_call_from_the_reasoning_before_it() -> None:
    """The Responses API refuses a ``function_call`` sent without the reasoning item that preceded it (400
    "provided without its required 'reasoning' item"): a limit that cuts between them drops the rest of that
    response, and then the outputs of its calls."""
    from windowkeeper.integrations.openai_agents import latest_items

    items: list[Any] = [
        {"role": "user", "content": "Weather in Paris and Rome?"},
        {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAAAB"},
        {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "weather", "arguments": "{}"},
        {"type": "function_call", "id": "fc_2", "call_id": "call_2", "name": "weather", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_1", "output": "sunny"},
        {"type": "function_call_output", "call_id": "call_2", "output": "rain"},
        {"type": "message", "role": "assistant", "id": "msg_1", "content": [{"type": "output_text", "text": "Ok."}]},
        {"role": "user", "content": "Thanks."},
        {"type": "local_shell_call", "id": "ls_1", "call_id": "call_3", "action": {}, "status": "completed"},
        {"type": "local_shell_call_output", "id": "ls_1", "output": "done"},
    ]
    for limit in range(1, len(items) + 1):
        kept = latest_items(items, limit)
        assert len(kept) <= limit and kept == [i for i in items if any(i is k for k in kept)]
        ids = {i.get("id") for i in kept}
        if "fc_1" in ids or "fc_2" in ids:
            assert "rs_1" in ids
        calls = {i.get("call_id") for i in kept} | {i.get("id") for i in kept if i.get("type") == "local_shell_call"}
        assert all((i.get("call_id") or i.get("id")) in calls for i in kept if i.get("type", "").endswith("_output"))
    assert [i.get("id") for i in latest_items(items, 9)] == [
        "rs_1", "fc_1", "fc_2", None, None, "msg_1", None, "ls_1", "ls_1"
    ]  # fmt: skip
    assert [i.get("id") or i.get("role") for i in latest_items(items, 8)] == ["msg_1", "user", "ls_1", "ls_1"]


def test_what_an_agent_sends_beside_its_input_is_counted() -> None:
    """A handoff is a ``transfer_to_<agent>`` tool and an ``output_type`` a JSON schema in the request: neither
    was counted, so a run with handoffs or structured output went over the budget by their size."""
    from pydantic import BaseModel

    from windowkeeper.integrations.openai_agents import agent_tool_schemas

    class Verdict(BaseModel):
        approved: bool
        reason: str

    billing = agents.Agent(name="Billing agent", instructions="Bills.")
    triage = agents.Agent(name="Triage", instructions="Routes.", handoffs=[billing], output_type=Verdict)
    schemas = agent_tool_schemas(triage)
    assert schemas is not None
    assert [s.get("name") for s in schemas] == ["transfer_to_billing_agent", "final_output"]
    assert schemas[1]["schema"]["properties"].keys() == {"approved", "reason"}
    assert agent_tool_schemas(triage) is schemas  # the filter asks on every call: worked out once per agent
    assert agent_tool_schemas(agents.Agent(name="Plain", instructions="x")) is None


def _ledger(path: str) -> str:
    """Read a ledger file.

    Args:
        path: Path of the file.
    """
    return "\n".join(f"{path}:{i}: total_{i} = total_{i - 1} + {i * 7 % 13}  # ledger step {i}" for i in range(40))


@pytest.mark.parametrize("how", ["limit", "streamed"])
async def test_session_and_filter_share_one_thread_under_a_limit_and_when_streamed(how: str) -> None:
    """A ``SessionSettings(limit=)`` serves the end of the view, and a streamed run with a handoff reads a few
    latest items in the middle of the run to check its own write: either made the filter miss the view it was
    served and manage the run on a second thread, whose summary joined the session's (two in one request)."""
    from openai import AsyncOpenAI

    from windowkeeper import ExtractiveSummarizer, TokenBudgetContextManager
    from windowkeeper.integrations.openai_agents import WindowkeeperSession
    from windowkeeper.testing.fake_servers import FakeReply, FakeToolCall

    agents.set_tracing_disabled(True)
    turns = 8
    replies: list[FakeReply] = []
    for t in range(turns):
        replies.append(FakeReply(tool_calls=(FakeToolCall("_ledger", {"path": f"a{t}.py"}, id=f"ra{t}"),)))
        replies.append(FakeReply(tool_calls=(FakeToolCall("transfer_to_b", {}, id=f"ho{t}"),)))
        replies.append(FakeReply(text=f"Turn {t} done"))
    with FakeOpenAIServer(replies) as srv:
        client = AsyncOpenAI(base_url=srv.base_url, api_key="test", max_retries=0)
        manager = TokenBudgetContextManager(4000, reserve_tokens=1000, summarizer=ExtractiveSummarizer())
        session = WindowkeeperSession("s1", manager_or_budget=manager)
        if how == "limit":
            session.session_settings = agents.SessionSettings(limit=12)
        model = agents.OpenAIResponsesModel(model="gpt-4o-mini", openai_client=client)
        tools = [agents.function_tool(_ledger), session.recall_tool]
        other = agents.Agent(name="b", instructions="You check ledgers.", model=model, tools=tools)
        agent = agents.Agent(name="a", instructions="You keep ledgers.", model=model, tools=tools, handoffs=[other])
        config = agents.RunConfig(call_model_input_filter=session.input_filter)
        for t in range(turns):
            if how == "streamed":
                run = agents.Runner.run_streamed(agent, f"turn {t}", session=session, run_config=config)
                async for _ in run.stream_events():
                    pass
                assert run.final_output == f"Turn {t} done"
            else:
                done = await agents.Runner.run(agent, f"turn {t}", session=session, run_config=config)
                assert done.final_output == f"Turn {t} done"
        await client.close()
    summaries = [json.dumps(r.json).count(SUMMARY_HEADER) for r in srv.requests]
    assert max(summaries) == 1 and 1 in summaries[: len(summaries) // 2 + 4]
    assert list(session.window._threads) == ["s1"]


async def test_one_filter_serving_two_conversations_restores_each_from_its_own() -> None:
    """With ``thread_id`` a function of the run (several conversations on one filter), the recall tool restored
    from whichever conversation's model call came last: run concurrently, one got "no cleared content"."""
    import asyncio

    from openai import AsyncOpenAI

    from windowkeeper import TokenBudgetContextManager, Window
    from windowkeeper.integrations.openai_agents import WindowkeeperInputFilter
    from windowkeeper.testing.fake_servers import FakeReply, FakeToolCall

    agents.set_tracing_disabled(True)
    manager = TokenBudgetContextManager(3000, reserve_tokens=600, keep_tool_results=1, recall=False)
    window = Window(manager, format="openai_responses")
    conversations = ("A", "B")
    filt = WindowkeeperInputFilter(window, thread_id=lambda d: d.context["conv"])
    recalled: dict[str, str] = {}

    async def run(conv: str) -> None:
        script = [
            FakeReply(tool_calls=(FakeToolCall("_ledger", {"path": f"{conv}{t}"}, id=f"{conv}-r{t}"),))
            for t in range(4)
        ]
        script += [FakeReply(tool_calls=(FakeToolCall("recall", {"pointer_id": f"{conv}-r1"}, id=f"{conv}-rc"),))]
        script += [FakeReply(text="done")]
        with FakeOpenAIServer(script) as srv:
            client = AsyncOpenAI(base_url=srv.base_url, api_key="test", max_retries=0)
            agent = agents.Agent(
                name=conv,
                instructions="You keep ledgers.",
                model=agents.OpenAIResponsesModel(model="gpt-4o-mini", openai_client=client),
                tools=[agents.function_tool(_ledger), filt.recall_tool],
            )
            config = agents.RunConfig(call_model_input_filter=filt.acall)
            await agents.Runner.run(agent, "Read the ledgers.", context={"conv": conv}, run_config=config)
            await client.close()
            outputs = [i for i in srv.requests[-1].json["input"] if i.get("type") == "function_call_output"]
            recalled[conv] = next(o["output"] for o in outputs if o["call_id"] == f"{conv}-rc")

    await asyncio.gather(*(run(conv) for conv in conversations))
    for conv in conversations:
        assert recalled[conv] == _ledger(f"{conv}1")


async def test_a_sub_agent_run_as_a_tool_keeps_a_thread_of_its_own(caplog: pytest.LogCaptureFixture) -> None:
    """The SDK runs ``agent.as_tool()`` with the parent's run config, so the sub-agent's model calls reach the
    parent's filter: on the parent's thread each started it over (its summary dropped and remade), then the
    parent's next call started it over again. A call of another agent that does not go on from the thread
    gets a thread of that agent's own; a handoff's agent, which continues the conversation, stays on it."""
    import logging

    from openai import AsyncOpenAI

    from windowkeeper import ExtractiveSummarizer, TokenBudgetContextManager
    from windowkeeper.integrations.openai_agents import input_filter
    from windowkeeper.testing.fake_servers import FakeReply, FakeToolCall

    agents.set_tracing_disabled(True)
    turns = 6
    replies: list[FakeReply] = []
    for t in range(turns):
        replies.append(FakeReply(tool_calls=(FakeToolCall("_ledger", {"path": f"f{t}.py"}, id=f"r{t}"),)))
        replies.append(FakeReply(tool_calls=(FakeToolCall("helper", {"input": f"check f{t}"}, id=f"h{t}"),)))
        replies.append(FakeReply(text=f"helper says {t}"))
        replies.append(FakeReply(text=f"Turn {t} done"))
    with FakeOpenAIServer(replies) as srv, caplog.at_level(logging.INFO, logger="windowkeeper"):
        client = AsyncOpenAI(base_url=srv.base_url, api_key="test", max_retries=0)
        filt = input_filter(TokenBudgetContextManager(3000, reserve_tokens=600, summarizer=ExtractiveSummarizer()))
        model = agents.OpenAIResponsesModel(model="gpt-4o-mini", openai_client=client)
        helper = agents.Agent(name="helper_agent", instructions="Check.", model=model)
        parent = agents.Agent(
            name="main",
            instructions="You keep ledgers.",
            model=model,
            tools=[agents.function_tool(_ledger), helper.as_tool(tool_name="helper", tool_description="Checks.")],
        )
        config = agents.RunConfig(call_model_input_filter=filt)
        history: list[Any] = []
        for t in range(turns):
            history.append({"role": "user", "content": f"turn {t}"})
            done = await agents.Runner.run(parent, history, run_config=config)
            assert done.final_output == f"Turn {t} done"
            history = done.to_input_list()
        await client.close()
    restarted = [r.getMessage() for r in caplog.records if "starting the thread over" in r.getMessage()]
    assert not [m for m in restarted if "'default'" in m]  # the parent's conversation went on throughout
    assert set(filt.window._threads) == {"default", "default:helper_agent"}
