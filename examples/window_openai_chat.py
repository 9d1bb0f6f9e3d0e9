"""A raw OpenAI SDK loop that keeps its own list of message dicts, managed by `windowkeeper.Window`.

The loop appends every reply and tool result to ``history`` and, before each call, asks the window what to send:
the whole list goes in, the managed list comes out (old tool outputs cleared to pointers, old turns summarized
into the leading system message). Runs offline against the local fake OpenAI server.

    python examples/window_openai_chat.py [--turns 8]
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from openai import OpenAI
from openai.types.chat import ChatCompletionToolParam

from windowkeeper import Window
from windowkeeper.context import TokenBudgetContextManager
from windowkeeper.llm.formats import OpenAIChatMessage
from windowkeeper.summarize import ExtractiveSummarizer
from windowkeeper.testing.fake_servers import FakeOpenAIServer, FakeReply, FakeToolCall

TOOLS: list[ChatCompletionToolParam] = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a file.",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
        },
    }
]


def read_file(path: str) -> str:
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
    with FakeOpenAIServer(script(turns)) as srv, OpenAI(base_url=srv.base_url, api_key="test") as client:
        # a 4,000-token context window that keeps only the newest tool output in full (the default keeps three,
        # which at this size leaves no older output in view to clear)
        manager = TokenBudgetContextManager(4000, 900, summarizer=ExtractiveSummarizer(), keep_tool_results=1)
        window = Window(manager)
        history: list[dict[str, Any]] = [{"role": "system", "content": "You are a careful code reviewer."}]
        stable = 0
        pointers: list[OpenAIChatMessage] = []
        for t in range(turns):
            history.append({"role": "user", "content": f"What does src/m{t}.py define?"})
            while True:
                fit = window.fit(history, tools=TOOLS)
                stable += bool(fit.metrics and fit.metrics.prefix_stable)
                pointers += [m for m in fit.messages if m["role"] == "tool" and "cleared" in m["content"]]
                reply = client.chat.completions.create(model="gpt-4o-mini", messages=fit.messages, tools=TOOLS)
                message = reply.choices[0].message.model_dump(exclude_none=True)
                history.append(message)
                if not message.get("tool_calls"):
                    break
                for call in message["tool_calls"]:
                    args = json.loads(call["function"]["arguments"])
                    history.append({"role": "tool", "tool_call_id": call["id"], "content": read_file(**args)})
        calls = len(srv.requests)
        last = srv.requests[-1].json["messages"]
        print(f"model calls: {calls}, history: {len(history)} messages, last request: {len(last)} messages")
        # the caller's own system message leaves unchanged; the summary is a system message of its own after it
        summarized = any("Summary of the earlier" in m["content"] for m in last if m["role"] == "system")
        print(f"summary in the last request's system messages: {summarized}")
        print(f"prefix stable: {stable}/{calls - 1}")
        original = window.restore(pointers[0])  # an old tool output the window replaced with a pointer
        assert not isinstance(original, list) and original["role"] == "tool"  # one tool message in, one out
        text = original["content"]
        assert isinstance(text, str)
        print(f"restored {original['tool_call_id']}: {len(text)} chars, equal to history: {original in history}")


if __name__ == "__main__":
    main()
