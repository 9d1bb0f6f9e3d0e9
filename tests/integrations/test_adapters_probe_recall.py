"""Probing `Window.recall_tool()` as a raw-SDK user with the synchronous client would: the docs say to answer the
model's ``recall`` call with the tool, and sync code had only ``await tool.ainvoke(...)`` (an ``asyncio.run`` that
raises inside a running loop, such as a notebook's). ``tool.invoke(arguments)`` is the sync form."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from windowkeeper import ExtractiveSummarizer, TokenBudgetContextManager, Window
from windowkeeper.testing.fake_servers import FakeOpenAIServer, FakeReply, FakeToolCall

TURNS = 4


def read_file(path: str) -> str:
    return "\n".join(f"{path}:{n}: value_{n} = {n * n}  # computed by step {n}" for n in range(60))


def script() -> list[FakeReply]:
    out: list[FakeReply] = []
    for t in range(TURNS):
        out.append(FakeReply(tool_calls=(FakeToolCall("read_file", {"path": f"src/m{t}.py"}, id=f"call_{t}"),)))
        out.append(FakeReply(text=f"Module m{t} read."))
    out.append(FakeReply(tool_calls=(FakeToolCall("recall", {"pointer_id": "call_1"}, id="call_recall"),)))
    out.append(FakeReply(text="m1 defines value_59 = 3481."))
    return out


def test_a_sync_loop_answers_the_recall_call_with_invoke() -> None:
    from openai import OpenAI

    manager = TokenBudgetContextManager(
        4500, reserve_tokens=900, summarizer=ExtractiveSummarizer(), keep_tool_results=1
    )
    window: Window[Any, Any] = Window(manager)
    recall = window.recall_tool()
    read_spec = {"name": "read_file", "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}
    tools: list[Any] = [{"type": "function", "function": read_spec}, recall.definition("openai_chat")]
    history: list[Any] = []
    with FakeOpenAIServer(script()) as srv, OpenAI(base_url=srv.base_url, api_key="test", max_retries=0) as client:
        for turn in range(TURNS + 1):
            history.append({"role": "user", "content": f"Turn {turn}: go on."})
            while True:
                fit = window.fit(history, tools=tools)
                reply = client.chat.completions.create(model="gpt-4o-mini", messages=fit.messages, tools=tools)
                message = reply.choices[0].message.model_dump(exclude_none=True)
                history.append(message)
                if not message.get("tool_calls"):
                    break
                for call in message["tool_calls"]:
                    args = json.loads(call["function"]["arguments"])
                    is_recall = call["function"]["name"] == "recall"
                    output = recall.invoke(call["function"]["arguments"]) if is_recall else read_file(**args)
                    history.append({"role": "tool", "tool_call_id": call["id"], "content": output})
        last = srv.requests[-1].json["messages"]
    # the pointer was shown to the model, and its call got the original back
    assert any('recall(pointer_id=\\"call_1\\")' in json.dumps(m) for r in srv.requests for m in r.json["messages"])
    assert {m["tool_call_id"]: m["content"] for m in last if m["role"] == "tool"}["call_recall"] == read_file(
        "src/m1.py"
    )


def test_invoke_works_inside_a_running_event_loop() -> None:
    window: Window[Any, Any] = Window(budget=8000)
    recall = window.recall_tool()

    async def inside() -> str:
        return recall.invoke({"pointer_id": "nope"})

    assert "No cleared content with id 'nope'" in asyncio.run(inside())
