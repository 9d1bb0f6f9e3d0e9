"""Run in a child process by test_window_store: one part of a thread's calls through a `Window` with a store.

``python -m tests.integrations.window_child STORE FIRST LAST [POINTERS_JSON]`` makes the calls ``FIRST..LAST-1``
of `conversation()` (each with the list up to that call point) and prints, as JSON, each result's messages and
summary, plus ``restore`` of every pointer given (done before the first call, so it reads only the store).
"""

from __future__ import annotations

import json
import sys
from typing import Any

from windowkeeper.integrations import Window
from windowkeeper.llm.formats import to_openai_chat
from windowkeeper.testing.sessiongen import generate_session

BUDGET = 6000


def conversation() -> tuple[list[dict[str, Any]], list[int]]:
    items = to_openai_chat(generate_session(36, seed=5).messages)
    points = [k for k, m in enumerate(items) if m["role"] == "assistant"]
    return items, points


def run(store: str | None, first: int, last: int, pointers: list[Any]) -> dict[str, Any]:
    items, points = conversation()
    window = Window(budget=BUDGET, store=store, thread_id="t-restart")
    try:
        restored = [window.restore(p) for p in pointers]
        calls = []
        for k in points[first:last]:
            result = window.fit(items[:k])
            stable = result.metrics.prefix_stable if result.metrics else None
            calls.append({"messages": result.messages, "summary": result.summary, "stable": stable})
        return {"restored": restored, "calls": calls}
    finally:
        window.close()


def main(argv: list[str]) -> None:
    store, first, last = argv[0], int(argv[1]), int(argv[2])
    pointers = json.loads(argv[3]) if len(argv) > 3 else []
    json.dump(run(store, first, last, pointers), sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1:])
