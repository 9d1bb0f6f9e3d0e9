"""windowkeeper in a LangChain v1 agent: ``create_agent(..., middleware=[WindowkeeperMiddleware(budget)])``.

The agent's state (and its checkpointer) keeps the whole conversation; the middleware manages every model call:
old tool outputs become restorable pointers, old turns are summarized into the system message. Runs offline
against the local fake OpenAI server (needs ``pip install "windowkeeper[langchain]" langchain-openai``).

    python examples/langchain_middleware.py [--turns 8]
"""

from __future__ import annotations

import argparse

from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import InMemorySaver

from windowkeeper.integrations.langchain import WindowkeeperMiddleware
from windowkeeper.testing.fake_servers import FakeOpenAIServer, FakeReply, FakeToolCall


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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=8)
    turns = parser.parse_args().turns
    with FakeOpenAIServer(script(turns)) as srv:
        model = ChatOpenAI(model="gpt-4o-mini", base_url=srv.base_url, api_key="test")
        agent = create_agent(
            model,
            tools=[read_file],
            system_prompt="You are a careful code reviewer.",
            middleware=[WindowkeeperMiddleware(6000)],  # the model's context window, in tokens
            checkpointer=InMemorySaver(),
        )
        config: RunnableConfig = {"configurable": {"thread_id": "review-1"}}
        for t in range(turns):
            state = agent.invoke({"messages": [HumanMessage(f"What does src/m{t}.py define?")]}, config)
        last = srv.requests[-1].json["messages"]
        print(f"model calls: {len(srv.requests)}, state: {len(state['messages'])} messages, "
              f"last request: {len(last)} messages")
        print(f"summary in the last request's system message: {'Summary of the earlier' in last[0]['content']}")


if __name__ == "__main__":
    main()
