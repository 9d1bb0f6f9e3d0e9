"""A raw Anthropic SDK loop managed by ``Window(format="anthropic")``, with prompt-cache breakpoints.

``fit.system`` carries the system prompt and the running summary (with a ``cache_control`` marker), and the
messages carry markers at the end of the part unchanged since the previous call and on the newest message: at most
three in all (Anthropic allows four), so the stable prefix is read from Anthropic's prompt cache. Runs offline
against the local fake Anthropic server.

    python examples/window_anthropic.py [--turns 8]
"""

from __future__ import annotations

import argparse
from typing import Any

from anthropic import Anthropic, omit
from anthropic.types import ToolParam

from windowkeeper import Window
from windowkeeper.testing.fake_servers import FakeAnthropicServer, FakeReply, FakeToolCall

TOOLS: list[ToolParam] = [{"name": "read_file", "description": "Read a file.",
          "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}]


def read_file(path: str) -> str:
    return "\n".join(f"{path}:{n}: value_{n} = {n * n}  # computed by step {n}" for n in range(60))


def script(turns: int) -> list[FakeReply]:
    out = []
    for t in range(turns):
        out.append(FakeReply(tool_calls=(FakeToolCall("read_file", {"path": f"src/m{t}.py"}, id=f"toolu_{t}"),)))
        out.append(FakeReply(text=f"Module m{t} defines 60 values; the largest is value_59 = 3481."))
    return out


def cache_marks(body: dict[str, Any]) -> int:
    """The ``cache_control`` markers of one request: on the system blocks and on the messages' content blocks."""
    marks = sum("cache_control" in b for m in body["messages"] for b in m["content"] if isinstance(b, dict))
    return marks + sum("cache_control" in b for b in body["system"])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=8)
    turns = parser.parse_args().turns
    with FakeAnthropicServer(script(turns)) as srv, Anthropic(base_url=srv.base_url, api_key="test") as client:
        window = Window(budget=6000, format="anthropic")
        history: list[dict[str, Any]] = []
        for t in range(turns):
            history.append({"role": "user", "content": f"What does src/m{t}.py define?"})
            while True:
                fit = window.fit(history, system="You are a careful code reviewer.", tools=TOOLS)
                reply = client.messages.create(
                    model="claude-haiku-4-5", max_tokens=512, system=fit.system or omit, messages=fit.messages,
                    tools=TOOLS,
                )
                content = [block.model_dump(exclude_none=True) for block in reply.content]
                history.append({"role": "assistant", "content": content})
                calls = [b for b in content if b["type"] == "tool_use"]
                if not calls:
                    break
                history.append({"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": c["id"], "content": read_file(**c["input"])} for c in calls
                ]})
        body = srv.requests[-1].json
        marks = [cache_marks(request.json) for request in srv.requests]
        print(f"model calls: {len(srv.requests)}, history: {len(history)} messages, "
              f"last request: {len(body['messages'])} messages")
        summarized = "Summary of the earlier" in body["system"][0]["text"]
        print(f"summary in system: {summarized}, cache breakpoints: {max(marks)} at most per request "
              f"({marks[-1]} in the last)")


if __name__ == "__main__":
    main()
