"""Defects found probing the OpenAI Agents adapter with the real SDK against the fake Responses server: a limit that
parts a model response's calls from its reasoning, a caller's own system item taken for a session's summary, and the
recall tool restoring on another session's thread."""

from __future__ import annotations

from typing import Any

import pytest

from windowkeeper import ExtractiveSummarizer, TokenBudgetContextManager
from windowkeeper.prompt import SUMMARY_HEADER
from windowkeeper.testing.fake_servers import FakeOpenAIServer, FakeReply, FakeToolCall

agents = pytest.importorskip("agents")


def _ledger(path: str) -> str:
    """Read a ledger file.

    Args:
        path: Path of the file.
    """
    return "\n".join(f"{path}:{i}: total_{i} = total_{i - 1} + {i * 7 % 13}  # ledger step {i}" for i in range(40))


def _reasoned_history(turns: int) -> list[dict[str, Any]]:
    """Turns of a reasoning model: reasoning, two parallel calls (with their response ids), outputs, an answer."""
    items: list[dict[str, Any]] = []
    for n in range(turns):
        items.append({"role": "user", "content": f"Question {n}: check the ledgers"})
        items.append({"type": "reasoning", "id": f"rs_{n}", "summary": [], "encrypted_content": f"enc{n}"})
        for k in range(2):
            items.append(
                {
                    "type": "function_call",
                    "id": f"fc_{n}_{k}",
                    "call_id": f"call_{n}_{k}",
                    "name": "_ledger",
                    "arguments": '{"path": "x"}',
                    "status": "completed",
                }
            )
        for k in range(2):
            items.append({"type": "function_call_output", "call_id": f"call_{n}_{k}", "output": f"line {n} {k}"})
        items.append(
            {
                "type": "message",
                "id": f"msg_{n}",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": f"Answer {n}.", "annotations": []}],
            }
        )
    return items


def _parted_calls(sent: list[dict[str, Any]], stored: list[dict[str, Any]]) -> list[str]:
    """Ids of the ``function_call`` items sent with a response id whose reasoning item (the one that opened their
    response in ``stored``) was not sent: the Responses API refuses them ("provided without its required
    'reasoning' item")."""
    reasoning_of: dict[str, str] = {}
    current: str | None = None
    for item in stored:
        if item.get("type") == "reasoning":
            current = item["id"]
        elif item.get("role") in ("user", "system", "developer") or item.get("type") == "function_call_output":
            current = None
        elif item.get("type") == "function_call" and current is not None:
            reasoning_of[item["id"]] = current
    sent_ids = {i.get("id") for i in sent}
    return [
        i["id"]
        for i in sent
        if i.get("type") == "function_call" and i.get("id") in reasoning_of and reasoning_of[i["id"]] not in sent_ids
    ]


@pytest.mark.parametrize("limit", range(3, 9))
async def test_a_session_limit_never_sends_a_call_without_its_reasoning(limit: int) -> None:
    from openai import AsyncOpenAI

    from windowkeeper.integrations.openai_agents import WindowkeeperSession

    agents.set_tracing_disabled(True)
    stored = _reasoned_history(3)
    session = WindowkeeperSession("s", manager_or_budget=100_000)
    session.session_settings = agents.SessionSettings(limit=limit)
    await session.add_items(stored)
    assert len(await session.get_items(limit=limit)) == limit  # the newest `limit`, as the SDK's sessions serve
    with FakeOpenAIServer([FakeReply(text="ok")]) as srv:
        client = AsyncOpenAI(base_url=srv.base_url, api_key="test", max_retries=0)
        agent = agents.Agent(
            name="a",
            instructions="You keep ledgers.",
            model=agents.OpenAIResponsesModel(model="gpt-4o-mini", openai_client=client),
            tools=[agents.function_tool(_ledger)],
        )
        await agents.Runner.run(agent, "And now?", session=session)
        await client.close()
    sent = srv.requests[-1].json["input"]
    assert not _parted_calls(sent, stored), (limit, sent[:4])


def test_a_callers_own_system_item_that_opens_like_a_summary_is_not_taken_for_one() -> None:
    """The filter took any system item starting with the summary header, among the first 8, for a session's summary
    item: a caller's own instructions written that way left the input and became the thread's summary."""
    from agents.run_config import CallModelData, ModelInputData

    from windowkeeper.integrations.openai_agents import input_filter

    own = {"role": "system", "content": SUMMARY_HEADER + "\nAlways answer in French."}
    items = [own, {"role": "user", "content": "Bonjour"}]
    model_filter = input_filter(100_000)
    data = CallModelData(
        model_data=ModelInputData(input=items, instructions="Be kind."), agent=agents.Agent(name="a"), context=None
    )
    out = model_filter(data)
    assert model_filter.last_result is not None and model_filter.last_result.summary is None
    assert "Always answer in French." in str(out.input) + str(out.instructions)
    assert str(out.instructions).count(SUMMARY_HEADER) + str(out.input).count(SUMMARY_HEADER) == 1


async def test_a_sessions_summary_item_is_still_found_by_a_filter_it_does_not_own() -> None:
    """The summary item a session serves is recognized by what the session served, not its text alone: a filter
    beside the session (not the session's own) still takes it out and starts from its summary (one summary)."""
    from agents.run_config import CallModelData, ModelInputData

    from windowkeeper.integrations.openai_agents import WindowkeeperSession, input_filter

    manager = TokenBudgetContextManager(3000, reserve_tokens=500, summarizer=ExtractiveSummarizer())
    session = WindowkeeperSession("s", manager_or_budget=manager)
    await session.add_items(
        [{"role": ("user", "assistant")[n % 2], "content": f"turn {n} " + "ledger words " * 40} for n in range(40)]
    )
    view = await session.get_items()
    assert view[0]["role"] == "system" and view[0]["content"].startswith(SUMMARY_HEADER)
    model_filter = input_filter(100_000)
    copied = [dict(i) for i in view]  # the SDK may hand the filter equal copies
    data = CallModelData(
        model_data=ModelInputData(input=copied, instructions="Be kind."), agent=agents.Agent(name="a"), context=None
    )
    out = model_filter(data)
    assert model_filter.last_result is not None and model_filter.last_result.summary is not None
    assert str(out.input).count(SUMMARY_HEADER) == 0 and str(out.instructions).count(SUMMARY_HEADER) == 1


async def test_an_agent_shared_by_two_sessions_restores_from_the_session_of_its_run() -> None:
    """An agent defined once, with the recall tool of the first session it was built for, then run on another
    session with that session's filter: the tool restored the run's thread id on the first session's window."""
    from openai import AsyncOpenAI

    from windowkeeper.integrations.openai_agents import WindowkeeperSession

    agents.set_tracing_disabled(True)

    def session(name: str) -> WindowkeeperSession:
        manager = TokenBudgetContextManager(3000, reserve_tokens=600, keep_tool_results=1, recall=False)
        return WindowkeeperSession(name, manager_or_budget=manager)

    first, second = session("first"), session("second")
    script = [FakeReply(tool_calls=(FakeToolCall("_ledger", {"path": f"p{t}"}, id=f"r{t}"),)) for t in range(4)]
    script += [FakeReply(tool_calls=(FakeToolCall("recall", {"pointer_id": "r1"}, id="rc"),)), FakeReply(text="done")]
    with FakeOpenAIServer(script) as srv:
        client = AsyncOpenAI(base_url=srv.base_url, api_key="test", max_retries=0)
        agent = agents.Agent(
            name="a",
            instructions="You keep ledgers.",
            model=agents.OpenAIResponsesModel(model="gpt-4o-mini", openai_client=client),
            tools=[agents.function_tool(_ledger), first.recall_tool],
        )
        config = agents.RunConfig(call_model_input_filter=second.input_filter)
        await agents.Runner.run(agent, "Read the ledgers.", session=second, run_config=config)
        await client.close()
    outputs = [i for i in srv.requests[-1].json["input"] if i.get("type") == "function_call_output"]
    assert next(o["output"] for o in outputs if o["call_id"] == "rc") == _ledger("p1")


@pytest.mark.parametrize("model_kind", ["responses", "chat"])
@pytest.mark.parametrize("limit", range(3, 9))
async def test_a_limit_that_cuts_between_parallel_calls_keeps_the_sessions_thread(
    limit: int, model_kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A limit that cuts off the first of two parallel calls leaves its output after the second call; the SDK drops
    that output from the middle of the history, and the session's filter, which looked for dropped outputs only at
    the start of the view, took the run's input for a reshaped one and managed it on a second thread."""
    import logging

    from openai import AsyncOpenAI

    from windowkeeper.integrations.openai_agents import WindowkeeperSession

    caplog.set_level(logging.INFO, logger="windowkeeper")
    agents.set_tracing_disabled(True)
    session = WindowkeeperSession("s", manager_or_budget=100_000)
    session.session_settings = agents.SessionSettings(limit=limit)
    await session.add_items(_reasoned_history(3))
    with FakeOpenAIServer([FakeReply(text="ok")]) as srv:
        client = AsyncOpenAI(base_url=srv.base_url, api_key="test", max_retries=0)
        kind = agents.OpenAIChatCompletionsModel if model_kind == "chat" else agents.OpenAIResponsesModel
        agent = agents.Agent(name="a", instructions="x", model=kind(model="gpt-4o-mini", openai_client=client))
        config = agents.RunConfig(call_model_input_filter=session.input_filter)
        await agents.Runner.run(agent, "And now?", session=session, run_config=config)
        await client.close()
    assert not [r for r in caplog.records if "on its own thread" in r.getMessage()]
    assert list(session.window._threads) == ["s"]
    sent = srv.requests[-1].json["input" if model_kind == "responses" else "messages"]
    assert len(sent) > limit + 1  # the filter managed the whole stored history, not the served tail alone


async def test_reading_the_session_mid_run_leaves_the_thread_its_filter_chose() -> None:
    """The SDK reads the session again in the middle of a streamed run: that read must not point the recall tool
    back at the session's own thread when the session's filter runs the call on another (a reshaped input's
    ``<id>:run``, a sub-agent's); a read by a run of another session, or without a filter, does point it there."""
    from windowkeeper.integrations import openai_agents as oa

    first, second = oa.WindowkeeperSession("first"), oa.WindowkeeperSession("second")
    await first.add_items([{"role": "user", "content": "hi"}])
    await second.add_items([{"role": "user", "content": "hi"}])
    oa._RUN.set((first.input_filter, "first:run"))
    await first.get_items()
    assert oa._RUN.get() == (first.input_filter, "first:run")
    await second.get_items()
    assert oa._RUN.get() == (second.input_filter, "second")
