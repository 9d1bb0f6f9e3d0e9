"""Requests sent upstream before their window runs (`Gateway.passes_through`), one behind the other: the window of
an earlier one, running late, must not put the thread back to that earlier list.

Driven on the `Gateway` itself, so that the order of events is the one a busy process meets by chance (the
window of a call still running when the client's next call, and the one after it, arrive): a conversation's
retried opening, its next turn sent early, then another conversation with the same opening."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import orjson

from windowkeeper.serve import ServeConfig
from windowkeeper.serve.gateway import Gateway
from windowkeeper.serve.protocols import PROTOCOLS
from windowkeeper.storage import open_store

CHAT = PROTOCOLS["/v1/chat/completions"]
HEADERS = {"authorization": "Bearer sk-early"}


def _request(texts: list[str]) -> tuple[dict[str, Any], list[Any], bytes]:
    messages = [{"role": ("user", "assistant")[i % 2], "content": t} for i, t in enumerate(texts)]
    body = {"model": "m", "messages": messages}
    return body, messages, orjson.dumps(body)


def test_a_late_window_does_not_put_its_thread_back_to_an_earlier_list(tmp_path: Path) -> None:
    async def run() -> None:
        url = f"sqlite:///{tmp_path / 'early.sqlite3'}"
        gateway = Gateway(ServeConfig(budget=128_000, store=url), open_store(url))
        try:
            opening = ["hello, can you help me?"]
            first = await gateway.plan(CHAT, HEADERS, *_request(opening))
            # the same opening again (a retry, or a second conversation): sent at once, its window behind it
            again = await gateway.place(CHAT, HEADERS, *_request(opening))
            tokens = gateway.passes_through(again)
            assert again.name == first.name and tokens is not None
            late = gateway.behind(again, tokens)
            # the conversation's next turn, sent at once too, while that window has not run yet
            a = [*opening, "sure", "fix my printer"]
            turn = await gateway.place(CHAT, HEADERS, *_request(a))
            tokens = gateway.passes_through(turn)
            assert turn.name == first.name and tokens is not None
            behind = gateway.behind(turn, tokens)
            late.release()
            await late.task  # the earlier window runs now, after the next turn was placed
            # another conversation with the same opening parts from the first at its second item
            b = [*opening, "sure", "plan my trip"]
            other = await gateway.place(CHAT, HEADERS, *_request(b))
            assert other.name != first.name
            behind.release()
            await behind.task
            plan = await gateway.manage(other)
            assert plan.name != first.name
            a = [*a, "ok", "go on"]
            assert (await gateway.plan(CHAT, HEADERS, *_request(a))).name == first.name
        finally:
            await gateway.close()

    asyncio.run(run())
