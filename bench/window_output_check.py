"""What `Window.fit` writes over a long managed run, call by call, as one JSON line per call: for comparing two
versions of the code (a cost change must not change a single written item).

Each line holds the call's written ``messages`` and ``system`` in the window's format (LangChain messages as
``message_to_dict``), the summary, the input tokens, and for every written item whether it is the caller's own
object (its index in the caller's list) or one windowkeeper made (-1): pass-through is by identity, so a change
that handed out an equal copy instead would show here. Run it under both versions and compare the files:

    PYTHONPATH=/path/to/base/src python bench/window_output_check.py --out /tmp/base.jsonl
    PYTHONPATH=src python bench/window_output_check.py --out /tmp/mine.jsonl
    cmp /tmp/base.jsonl /tmp/mine.jsonl

The run covers the five formats with the lean manager (no summarizer, no recall) and Chat Completions with the
default one (extractive summary, recall), a continuing thread of a generated coding-agent session at an 8k budget,
with and without the recall tool declared (pointers rewritten for the application, or naming the tool), and a
memory store for two formats (the saved delta read back by a second window at the end). The time a recall note
quotes for each passage (when its message was read) is masked.
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Sequence
from typing import Any

from _common import build_history, fresh_counter, steps_from

from windowkeeper import Window
from windowkeeper.context.budget import TokenBudgetContextManager
from windowkeeper.llm.formats import to_anthropic, to_gemini, to_langchain, to_openai_chat, to_responses_input

BUDGET = 8000
RESERVE = 2000
WHEN = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC")
"""A recall note quotes when each passage was said: the time a message was read, which differs run to run."""
RECALL_TOOL = {"type": "function", "function": {"name": "recall", "description": "restore", "parameters": {}}}


def items_in(fmt: str, size: int, seed: int) -> tuple[list[Any], str | None]:
    history = build_history(size, seed=seed)
    if fmt == "openai_chat":
        return to_openai_chat(history), None
    if fmt == "openai_responses":
        system, items = to_responses_input(history)
        return items, system
    if fmt == "anthropic":
        system, items = to_anthropic(history)
        return items, system
    if fmt == "gemini":
        system, items = to_gemini(history)
        return items, system
    return list(to_langchain(history)), None


def plain(fmt: str, value: Any) -> Any:
    if fmt == "langchain":
        from langchain_core.messages import message_to_dict

        return [message_to_dict(m) for m in value]
    return value


def run(fmt: str, kind: str, calls: int, tools: bool, store: str | None, out: Any) -> None:
    items, system = items_in(fmt, 400 + 40 * calls, seed=5)
    role = "assistant" if fmt not in ("gemini",) else "model"
    start = next(i for i in range(300, len(items)) if _role(fmt, items[i]) == role)
    steps = steps_from_any(fmt, items, start, calls, role)
    if kind == "default":
        window: Window[Any, Any] = Window(budget=BUDGET + RESERVE, format=fmt, store=store)
    else:
        manager = TokenBudgetContextManager(BUDGET + RESERVE, RESERVE, counter=fresh_counter(), recall=False)
        window = Window(manager, format=fmt, store=store)
    caller: list[Any] = list(items[:start])
    declared = [RECALL_TOOL] if tools else None
    for n in range(len(steps) + 1):
        if n:
            caller.extend(steps[n - 1])
        result = window.fit(caller, system=system, tools=declared)
        mine = {id(item): k for k, item in enumerate(caller)}
        record = {
            "case": f"{fmt}/{kind}/tools={tools}/store={bool(store)}",
            "call": n,
            "messages": plain(fmt, result.messages),
            "system": result.system,
            "own": [mine.get(id(item), -1) for item in result.messages],
            "summary": result.summary,
            "input_tokens": result.input_tokens,
        }
        out.write(WHEN.sub("<when>", json.dumps(record, sort_keys=True, default=repr)) + "\n")
    if store is not None:
        again: Window[Any, Any] = Window(
            TokenBudgetContextManager(BUDGET + RESERVE, RESERVE, counter=fresh_counter(), recall=False),
            format=fmt,
            store=window.store,
        )
        result = again.fit(caller, system=system, tools=declared)
        out.write(json.dumps({"case": "reloaded", "messages": plain(fmt, result.messages)}, default=repr) + "\n")
    window.close()


def _role(fmt: str, item: Any) -> str | None:
    if fmt == "langchain":
        return {"ai": "assistant", "human": "user", "tool": "tool", "system": "system"}.get(item.type)
    if fmt == "gemini":
        return item.get("role")
    return item.get("role") if isinstance(item, dict) else None


def steps_from_any(fmt: str, items: Sequence[Any], start: int, count: int, role: str) -> list[list[Any]]:
    if fmt in ("openai_chat",):
        return steps_from(items, start, count, role)
    steps: list[list[Any]] = []
    i = start
    while len(steps) < count and i < len(items):
        j = i + 1
        while j < len(items) and _role(fmt, items[j]) != role:
            j += 1
        steps.append(list(items[i:j]))
        i = j
    return steps


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--calls", type=int, default=150)
    args = parser.parse_args(argv)
    with open(args.out, "w", encoding="utf-8") as out:
        for fmt in ("openai_chat", "openai_responses", "anthropic", "gemini", "langchain"):
            for tools in (False, True):
                run(fmt, "lean", args.calls, tools, None, out)
        run("openai_chat", "default", args.calls // 2, False, None, out)
        run("openai_chat", "lean", args.calls, False, "memory://", out)
        run("anthropic", "lean", args.calls // 2, True, "memory://", out)


if __name__ == "__main__":
    main()
