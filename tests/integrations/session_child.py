"""Run in a child process by test_concurrency: one writer adding numbered items to a shared session.

``python -m tests.integrations.session_child STORE SESSION WRITER COUNT`` adds ``COUNT`` batches of two items
(``WRITER-k-a``, ``WRITER-k-b``) to ``SESSION``, one `add_items` call per batch, through its own session object.
"""

from __future__ import annotations

import asyncio
import sys

from windowkeeper.integrations.openai_agents import WindowkeeperSession


def batch(writer: str, k: int) -> list[dict[str, str]]:
    return [{"role": "user", "content": f"{writer}-{k}-{part}"} for part in ("a", "b")]


async def write(store: str, session_id: str, writer: str, count: int) -> None:
    session = WindowkeeperSession(session_id, store, manager_or_budget=4000)
    try:
        for k in range(count):
            await session.add_items(batch(writer, k))
    finally:
        await session.aclose()


if __name__ == "__main__":
    asyncio.run(write(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])))
