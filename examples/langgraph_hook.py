"""windowkeeper in LangGraph's prebuilt ReAct agent: ``create_react_agent(..., pre_model_hook=pre_model_hook(budget))``.

The hook returns ``llm_input_messages``: the state's messages stay complete (the checkpointer keeps them all),
and only what the model receives is managed, per ``thread_id``. Runs offline against the local fake OpenAI server
(needs ``pip install "windowkeeper[langgraph]" langchain-openai``).

    python examples/langgraph_hook.py [--turns 8]
"""

from __future__ import annotations

import argparse
import warnings

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import InMemorySaver

from windowkeeper.integrations.langgraph import pre_model_hook
from windowkeeper.testing.fake_servers import FakeOpenAIServer, FakeReply, FakeToolCall

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # create_react_agent is deprecated in favour of langchain's create_agent
    from langgraph.prebuilt import create_react_agent


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
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            agent = create_react_agent(
                model, [read_file], pre_model_hook=pre_model_hook(6000), checkpointer=InMemorySaver()
            )
        config: RunnableConfig = {"configurable": {"thread_id": "review-1"}}
        system = SystemMessage("You are a careful code reviewer.")
        for t in range(turns):
            new = [HumanMessage(f"What does src/m{t}.py define?")]
            state = agent.invoke({"messages": [system, *new] if t == 0 else new}, config)
        last = srv.requests[-1].json["messages"]
        print(f"model calls: {len(srv.requests)}, state: {len(state['messages'])} messages, "
              f"last request: {len(last)} messages")
        print(f"summary in the last request's system message: {'Summary of the earlier' in last[0]['content']}")


if __name__ == "__main__":
    main()
