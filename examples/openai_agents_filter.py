"""windowkeeper in the OpenAI Agents SDK: ``RunConfig(call_model_input_filter=input_filter(budget))``, and
``WindowkeeperSession`` to keep the history of a conversation in a windowkeeper store across runs.

The filter manages the Responses input of every model call (the summary goes into ``instructions``); the session
keeps every item and serves the managed view. Runs offline against the local fake OpenAI server (needs
``pip install "windowkeeper[openai-agents]"``).

    python examples/openai_agents_filter.py [--turns 8] [--db session.db]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
from typing import Any

from agents import Agent, OpenAIResponsesModel, RunConfig, Runner, function_tool, set_tracing_disabled
from openai import AsyncOpenAI

from windowkeeper.integrations.openai_agents import WindowkeeperSession, input_filter
from windowkeeper.testing.fake_servers import FakeOpenAIServer, FakeReply, FakeToolCall


@function_tool
def read_file(path: str) -> str:
    """Read a file of the repository.

    Args:
        path: Path of the file.
    """
    return "\n".join(f"{path}:{n}: value_{n} = {n * n}  # computed by step {n}" for n in range(60))


def script(turns: int) -> list[FakeReply]:
    out = []
    for t in range(turns):
        out.append(FakeReply(tool_calls=(FakeToolCall("read_file", {"path": f"src/m{t}.py"}, id=f"call_{t}"),)))
        out.append(FakeReply(text=f"Module m{t} defines 60 values; the largest is value_59 = 3481."))
    return out


async def main(turns: int, db: str) -> None:
    set_tracing_disabled(True)
    with FakeOpenAIServer(script(2 * turns)) as srv:
        client = AsyncOpenAI(base_url=srv.base_url, api_key="test")
        model = OpenAIResponsesModel(model="gpt-4o-mini", openai_client=client)
        agent = Agent(name="reviewer", instructions="You are a careful code reviewer.", tools=[read_file], model=model)

        # 1. the filter: the caller keeps the history, every model call gets the managed input
        config = RunConfig(call_model_input_filter=input_filter(6000))
        history: list[Any] = []
        for t in range(turns):
            history.append({"role": "user", "content": f"What does src/m{t}.py define?"})
            result = await Runner.run(agent, history, run_config=config)
            history = result.to_input_list()
        body = srv.requests[-1].json
        summarized = "Summary of the earlier" in body["instructions"]
        print(f"filter: {len(srv.requests)} model calls, history {len(history)} items, last request "
              f"{len(body['input'])} items, summary in instructions: {summarized}")

        # 2. the session: the store keeps every item, get_items() is the managed view
        session = WindowkeeperSession("review-1", db, manager_or_budget=6000)
        for t in range(turns):
            await Runner.run(agent, f"What does src/m{t}.py define?", session=session)
        everything, view = await session.all_items(), await session.get_items()
        print(f"session: {len(everything)} items stored, managed view {len(view)} items, "
              f"opens with the summary: {view[0].get('role') == 'system'}")
        await session.aclose()
        await client.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=8)
    parser.add_argument("--db", default=os.path.join(tempfile.mkdtemp(), "session.db"))
    args = parser.parse_args()
    asyncio.run(main(args.turns, args.db))
