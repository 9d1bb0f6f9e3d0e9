"""The OpenAI Agents SDK acceptance run: both model classes, with the filter, the session and both, over 30 turns.

Each turn the scripted model makes two parallel tool calls with long outputs and then answers; one turn's tool
raises (the SDK hands the model an error message as the output). Against the local fake OpenAI server, with the real
``openai-agents`` package, every run must complete and every request must be valid, within the model's window
(and, where the filter manages the call, within the budget less the reply reserve) and carry at most one summary.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from windowkeeper import ExtractiveSummarizer, TokenBudgetContextManager
from windowkeeper.llm.formats import from_openai_chat, from_responses_input
from windowkeeper.prompt import SUMMARY_HEADER
from windowkeeper.testing.fake_servers import FakeOpenAIServer, FakeReply, FakeToolCall, RecordedRequest
from windowkeeper.tokens import TiktokenCounter
from windowkeeper.units import validate

agents = pytest.importorskip("agents")

TURNS = 30
ERROR_TURN = 7
MAX_TOKENS = 8000
RESERVE = 2500
SYSTEM = "You review code. Read what you need, run the tests, then report."


def read_file(path: str) -> str:
    """Read a file of the repository.

    Args:
        path: Path of the file.
    """
    return "\n".join(f"{path}:{n}: total_{n} = total_{n - 1} + {n * 7 % 13}  # ledger step {n}" for n in range(40))


def run_tests(target: str) -> str:
    """Run the tests of a target.

    Args:
        target: Test file.
    """
    if target.endswith(f"_{ERROR_TURN}.py"):
        raise RuntimeError(f"the test runner crashed on {target}")
    return "\n".join([*(f"{target}::test_{n} PASSED" for n in range(30)), "==== 30 passed ===="])


def script() -> list[FakeReply]:
    out: list[FakeReply] = []
    for turn in range(TURNS):
        calls = (
            FakeToolCall("read_file", {"path": f"src/ledger_{turn}.py"}, id=f"r{turn}"),
            FakeToolCall("run_tests", {"target": f"tests/test_ledger_{turn}.py"}, id=f"t{turn}"),
        )
        out.append(FakeReply(tool_calls=calls))
        out.append(FakeReply(text=f"Turn {turn} done: ledger_{turn} reviewed."))
    return out


def manager() -> TokenBudgetContextManager[Any]:
    return TokenBudgetContextManager(MAX_TOKENS, reserve_tokens=RESERVE, summarizer=ExtractiveSummarizer())


def _messages(request: RecordedRequest) -> tuple[list[Any], str]:
    body = request.json
    if "messages" in body:
        messages = from_openai_chat(body["messages"])
        system = "\n".join(str(m.get("content")) for m in body["messages"] if m.get("role") in ("system", "developer"))
        return messages, system
    items = body["input"]
    inline = "\n".join(
        str(i.get("content")) for i in items if isinstance(i, dict) and i.get("role") in ("system", "developer")
    )
    return from_responses_input(items, body.get("instructions")), f"{body.get('instructions') or ''}\n{inline}"


def _check(requests: list[RecordedRequest], *, filtered: bool) -> dict[str, int]:
    counter = TiktokenCounter("o200k_base")
    assert len(requests) == 2 * TURNS
    largest = 0
    summaries = 0
    for k, request in enumerate(requests):
        messages, system = _messages(request)
        assert validate(messages, "openai") == [], k
        assert (
            system.count(SUMMARY_HEADER) + sum(m.text().count(SUMMARY_HEADER) for m in messages if m.role != "system")
            <= 1
        ), k
        summaries += SUMMARY_HEADER in system
        tokens = counter.count_messages(messages)
        largest = max(largest, tokens)
        assert tokens <= (MAX_TOKENS - RESERVE if filtered else MAX_TOKENS), (k, tokens)
    assert summaries > 0  # the budget was crossed: the run was managed, not merely small
    return {"largest": largest, "with_summary": summaries}


def _agent(kind: str, client: Any, extra_tools: list[Any]) -> Any:
    model: Any = (
        agents.OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=client)
        if kind == "chat"
        else agents.OpenAIResponsesModel(model="gpt-4o-mini", openai_client=client)
    )
    return agents.Agent(
        name="reviewer",
        instructions=SYSTEM,
        tools=[agents.function_tool(read_file), agents.function_tool(run_tests), *extra_tools],
        model=model,
    )


@pytest.mark.parametrize("kind", ["chat", "responses"])
@pytest.mark.parametrize("wiring", ["filter", "session", "both"])
async def test_thirty_turns_with_parallel_calls_an_error_and_long_outputs(
    kind: str, wiring: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import logging

    caplog.set_level(logging.INFO, logger="windowkeeper.integrations")
    from openai import AsyncOpenAI

    from windowkeeper.integrations.openai_agents import WindowkeeperSession, input_filter

    agents.set_tracing_disabled(True)
    with FakeOpenAIServer(script()) as srv:
        client = AsyncOpenAI(base_url=srv.base_url, api_key="test", max_retries=0)
        session = WindowkeeperSession("acc", str(tmp_path / "s.db"), manager_or_budget=manager())
        if wiring == "filter":
            model_filter = input_filter(manager())
        elif wiring == "both":
            model_filter = session.input_filter
        run_config = agents.RunConfig(call_model_input_filter=model_filter) if wiring != "session" else None
        recall = [model_filter.recall_tool] if wiring != "session" else [session.recall_tool]
        agent = _agent(kind, client, recall)
        history: list[Any] = []
        try:
            for turn in range(TURNS):
                text = f"Turn {turn}: review src/ledger_{turn}.py and run its tests."
                if wiring == "filter":
                    history.append({"role": "user", "content": text})
                    result = await agents.Runner.run(agent, history, run_config=run_config, max_turns=6)
                    history = result.to_input_list()
                else:
                    kwargs: dict[str, Any] = {"run_config": run_config} if run_config is not None else {}
                    result = await agents.Runner.run(agent, text, session=session, max_turns=6, **kwargs)
                assert result.final_output == f"Turn {turn} done: ledger_{turn} reviewed.", turn
        finally:
            await client.close()
            await session.aclose()
        requests = list(srv.requests)
    outputs = [
        str(i.get("output") or i.get("content"))
        for r in requests
        for i in (r.json.get("input") or r.json.get("messages") or [])
        if isinstance(i, dict) and (i.get("type") == "function_call_output" or i.get("role") == "tool")
    ]
    assert any("An error occurred while running the tool" in o for o in outputs)  # the tool error reached the model
    numbers = _check(requests, filtered=wiring != "session")
    # one manager per conversation: the thread is never started over, and with both the filter continues the
    # session's own thread (never a separate one for the run's input)
    assert not [r.getMessage() for r in caplog.records if "starting the thread over" in r.getMessage()]
    if wiring == "both":
        assert list(session.window._threads) == ["acc"]
    print(
        f"{kind}/{wiring}: {len(requests)} requests, largest {numbers['largest']} tokens, "
        f"{numbers['with_summary']} with the summary"
    )
