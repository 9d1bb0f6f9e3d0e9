"""Probing the OpenAI Agents SDK adapters as a new user would wire them, with the real ``openai-agents`` package
against the local fake OpenAI server.

The docs show the session (``WindowkeeperSession``) and the filter (``input_filter``) one after the other; a user
who puts both in one run, or who builds the filter once from one session object and opens a session object per
request (as one does with the SDK's ``SQLiteSession``), must still send one summary per request, not the session's
summary item beside the filter's own.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from windowkeeper.prompt import SUMMARY_HEADER
from windowkeeper.testing.fake_servers import FakeOpenAIServer, FakeReply, FakeToolCall, RecordedRequest

agents = pytest.importorskip("agents")

TURNS = 14
BUDGET = 8000


def read_file(path: str) -> str:
    """Read a file of the repository.

    Args:
        path: Path of the file.
    """
    return "\n".join(f"{path}:{n}: total_{n} = total_{n - 1} + {n * 7 % 13}  # ledger step {n}" for n in range(20))


def script() -> list[FakeReply]:
    out: list[FakeReply] = []
    for turn in range(TURNS):
        calls = (
            FakeToolCall("read_file", {"path": f"src/l_{turn}.py"}, id=f"r{turn}"),
            FakeToolCall("read_file", {"path": f"src/m_{turn}.py"}, id=f"s{turn}"),
        )
        out += [FakeReply(tool_calls=calls), FakeReply(text=f"Turn {turn} done.")]
    return out


def _summaries(request: RecordedRequest) -> int:
    body = request.json
    return str(body.get("instructions") or "").count(SUMMARY_HEADER) + sum(
        str(item.get("content")).count(SUMMARY_HEADER) for item in body.get("input") or body.get("messages") or ()
    )


def _model(kind: str, client: Any) -> Any:
    if kind == "chat":
        return agents.OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=client)
    return agents.OpenAIResponsesModel(model="gpt-4o-mini", openai_client=client)


@pytest.mark.parametrize("kind", ["chat", "responses"])
@pytest.mark.parametrize("wiring", ["separate_filter", "filter_of_another_session_object"])
async def test_a_session_beside_a_filter_it_does_not_own_sends_one_summary(
    kind: str, wiring: str, tmp_path: Path
) -> None:
    from openai import AsyncOpenAI

    from windowkeeper.integrations.openai_agents import WindowkeeperSession, input_filter

    db = str(tmp_path / "agents.db")
    with FakeOpenAIServer(script()) as srv:
        client = AsyncOpenAI(base_url=srv.base_url, api_key="test", max_retries=0)
        model = _model(kind, client)
        first = WindowkeeperSession("user-42", db, manager_or_budget=BUDGET)
        model_filter = input_filter(BUDGET) if wiring == "separate_filter" else first.input_filter
        config = agents.RunConfig(call_model_input_filter=model_filter, tracing_disabled=True)
        agent = agents.Agent(
            name="reviewer",
            instructions="You review code.",
            tools=[agents.function_tool(read_file), model_filter.recall_tool],
            model=model,
        )
        try:
            for turn in range(TURNS):
                session = first
                if wiring != "separate_filter":  # a session object per request, on one store and id
                    session = WindowkeeperSession("user-42", db, manager_or_budget=BUDGET)
                await agents.Runner.run(agent, f"Turn {turn}: review l_{turn}.", session=session, run_config=config)
        finally:
            await client.close()
        counts = [_summaries(r) for r in srv.requests]
    assert len(counts) == 2 * TURNS
    assert max(counts) == 1, counts  # the run was managed (a summary went out) and never twice


async def test_a_session_takes_a_responses_window_and_keeps_its_items_in_the_windows_store(tmp_path: Path) -> None:
    """Every adapter takes a manager, a budget or a `Window`; the session raised 'pass store= to the Window, not
    beside it' for a Window given alone, naming a store the caller never passed."""
    from windowkeeper import Window
    from windowkeeper.integrations.openai_agents import WindowkeeperSession

    window = Window(budget=BUDGET, format="openai_responses", store=str(tmp_path / "w.db"))
    session = WindowkeeperSession("user-42", manager_or_budget=window)
    assert session.window is window and session.store is window.store
    await session.add_items([{"role": "user", "content": "hi"}])
    assert await session.get_items() == [{"role": "user", "content": "hi"}]
    again = WindowkeeperSession("user-42", manager_or_budget=Window(budget=BUDGET, format="openai_responses"))
    assert await again.get_items() == []  # a window without a store: the session's own in-memory store

    with pytest.raises(Exception, match=r"store='other.db'.*pass the store once") as caught:
        WindowkeeperSession("user-42", "other.db", manager_or_budget=window)
    assert type(caught.value).__name__ == "ConfigurationError"
    window.close()


RECALLED = "call_1"


def _module(path: str) -> str:
    return "\n".join(f"{path}:{n}: value_{n} = {n * n}  # computed by step {n}" for n in range(60))


def read_module(path: str) -> str:
    """Read a module of the repository.

    Args:
        path: Path of the module.
    """
    return _module(path)


@pytest.mark.parametrize("kind", ["chat", "responses"])
async def test_the_session_alone_names_the_recall_tool_it_hands_out_and_the_model_gets_the_original(
    kind: str,
) -> None:
    """The docs give the session's tool to the agent (``Agent(tools=[..., session.recall_tool])``) and say the
    pointers name it; a session without the filter never sees the agent, and its view's pointers told the model
    to ask the user, so the tool it was given could never be used."""
    from openai import AsyncOpenAI

    from windowkeeper import ExtractiveSummarizer, TokenBudgetContextManager
    from windowkeeper.integrations.openai_agents import WindowkeeperSession

    manager = TokenBudgetContextManager(
        4500, reserve_tokens=900, summarizer=ExtractiveSummarizer(), keep_tool_results=1
    )
    replies: list[FakeReply] = []
    for turn in range(4):
        replies.append(FakeReply(tool_calls=(FakeToolCall("read_module", {"path": f"m{turn}.py"}, id=f"call_{turn}"),)))
        replies.append(FakeReply(text=f"Read m{turn}."))
    replies.append(FakeReply(tool_calls=(FakeToolCall("recall", {"pointer_id": RECALLED}, id="call_recall"),)))
    replies.append(FakeReply(text="m1 defines value_59."))
    with FakeOpenAIServer(replies) as srv:
        client = AsyncOpenAI(base_url=srv.base_url, api_key="test", max_retries=0)
        session = WindowkeeperSession("user-42", manager_or_budget=manager)
        agent = agents.Agent(
            name="reader", tools=[agents.function_tool(read_module), session.recall_tool], model=_model(kind, client)
        )
        config = agents.RunConfig(tracing_disabled=True)
        try:
            for turn in range(5):
                await agents.Runner.run(
                    agent, f"Turn {turn}: read the next module.", session=session, run_config=config
                )
        finally:
            await client.close()
        asked, answered = srv.requests[-2].raw.decode(), srv.requests[-1].raw.decode()
    assert f'recall(pointer_id=\\"{RECALLED}\\")' in asked  # the pointer names the tool the agent has
    assert "ask the user" not in asked
    assert json.dumps(_module("m1.py"))[1:-1] in answered  # and calling it gave the original back


async def test_clear_session_forgets_the_threads_its_filter_ran_on() -> None:
    """A run whose input does not start with the served view (a ``session_input_callback``) is managed on the
    session's ``<id>:run`` thread; ``clear_session`` forgot only ``<id>``, so that thread's summary and cleared
    originals (restorable by their ids) outlived the conversation the user cleared."""
    from agents.run_config import CallModelData, ModelInputData

    from windowkeeper import ExtractiveSummarizer, TokenBudgetContextManager
    from windowkeeper.integrations.openai_agents import WindowkeeperSession

    manager = TokenBudgetContextManager(
        4500, reserve_tokens=900, summarizer=ExtractiveSummarizer(), keep_tool_results=1
    )
    session = WindowkeeperSession("user-42", manager_or_budget=manager)
    items: list[Any] = []
    for turn in range(4):
        items += [
            {"role": "user", "content": f"Turn {turn}: read m{turn}.py"},
            {"type": "function_call", "call_id": f"call_{turn}", "name": "read_module", "arguments": "{}"},
            {"type": "function_call_output", "call_id": f"call_{turn}", "output": _module(f"m{turn}.py")},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": f"Read m{turn}."}]},
        ]
    data = CallModelData(
        model_data=ModelInputData(input=items, instructions="You read code."),
        agent=agents.Agent(name="reader"),
        context=None,
    )
    session.input_filter(data)
    assert session.input_filter.last_result is not None and session.input_filter.last_result.thread_id == "user-42:run"
    assert await session.window.arestore("call_0", thread_id="user-42:run") is not None  # cleared, restorable
    await session.clear_session()
    assert await session.window.arestore("call_0", thread_id="user-42:run") is None
