"""What one `Window.fit` call costs on a continuing thread, as the history grows: 1k, 10k and 100k messages.

The caller keeps its conversation as a list of Chat Completions dicts and hands the whole list to ``fit`` before
every model call, appending the model's reply and the tool results after it (as every SDK user does). A generated
coding-agent session is used; the first call on each size (which reads the whole history once) is not timed, the
next ``--calls`` calls are, each with what one model call adds (an assistant message and its tool results).

The floor is the least any manager must do per call: tokenize each new message once (a fresh exact counter, no
memo), on the same new messages. Printed: mean CPU ms per call, the ratio to the floor, and the growth from the
smallest size (a call that costs what is new shows the same numbers at every size).

The manager's own share (its ``atrim_context``) is printed apart from the Window's (reading the list,
recognizing the managed prefix, writing the result); ``--manager lean`` runs a manager without summarizer and
recall, the configuration the floor comparison of ``overhead_vs_trim_messages.py`` uses. ``--store memory`` or
``--store sqlite`` gives the window a store (in memory, or a SQLite file in a temporary folder), so each call also
writes what it changed: the new log messages, the view's new messages and the thread's head (issue 19: a delta,
not a snapshot of the view).

    python bench/window_cost.py [--sizes 1000 10000 100000] [--calls 40] [--budget 8000] [--manager default|lean]
                                [--entry fit|afit] [--store none|memory|sqlite]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from _common import CpuClock, build_history, fresh_counter, print_table, steps_from

from windowkeeper import Window
from windowkeeper.context.budget import TokenBudgetContextManager
from windowkeeper.llm.formats import from_openai_chat, to_openai_chat

RESERVE = 2000
GROWTH_TARGET = 1.5
FLOOR_TARGET = 3.0


class TimedManager:
    """Wraps a manager's ``atrim_context`` to charge its CPU to a clock of its own (the rest is the Window's)."""

    def __init__(self, manager: Any, clock: CpuClock) -> None:
        self.manager, self.clock = manager, clock
        self.original = manager.atrim_context

    async def __call__(self, state: Any) -> Any:
        with self.clock.timing():
            return await self.original(state)


def build_window(kind: str, budget: int, store: str | None = None) -> Window[Any, Any]:
    if kind == "default":
        window: Window[Any, Any] = Window(budget=budget + RESERVE, store=store)
        window.fit([{"role": "user", "content": "warm up"}], thread_id="warm-up")
        return window
    lean = TokenBudgetContextManager(budget + RESERVE, RESERVE, counter=fresh_counter(), recall=False)
    return Window(lean, store=store)


def store_url(store: str, folder: str, size: int) -> str | None:
    if store == "memory":
        return "memory://"
    if store == "sqlite":
        return str(Path(folder) / f"window-{size}.db")
    return None


def measure(size: int, calls: int, budget: int, kind: str, entry: str, store: str = "none") -> dict[str, float]:
    with tempfile.TemporaryDirectory() as folder:
        return _measure(size, calls, budget, kind, entry, store_url(store, folder, size))


def _measure(size: int, calls: int, budget: int, kind: str, entry: str, store: str | None) -> dict[str, float]:
    history = build_history(size + 40 * calls, seed=7)
    items = to_openai_chat(history, passthrough=False)
    # start the timed calls at an assistant message after ``size`` items, so every step is one model call
    start = next(i for i in range(size, len(items)) if items[i].get("role") == "assistant")
    steps = steps_from(items, start, calls, "assistant")  # one model call each: a reply and its results
    window = build_window(kind, budget, store)
    caller: list[dict[str, Any]] = list(items[:start])
    window.fit(caller)  # the first call reads the whole list once
    manager = window.manager
    assert manager is not None
    ours, inside, floor = CpuClock(), CpuClock(), CpuClock()
    manager.atrim_context = TimedManager(manager, inside)  # type: ignore[method-assign]
    counter = fresh_counter()
    new_messages = [from_openai_chat(step) for step in steps]
    gc.collect()
    loop = asyncio.new_event_loop()
    try:
        for step, messages in zip(steps, new_messages, strict=True):
            caller.extend(step)
            with ours.timing():
                if entry == "fit":
                    window.fit(caller)
                else:
                    loop.run_until_complete(window.afit(caller))
            with floor.timing():
                for message in messages:
                    counter.count_message_uncached(message)
    finally:
        loop.close()
        window.close()
    return {
        "messages": float(start),
        "ours_ms": 1000 * ours.seconds / ours.calls,
        "manager_ms": 1000 * inside.seconds / max(inside.calls, 1),
        "floor_ms": 1000 * floor.seconds / floor.calls,
    }


def main(argv: Sequence[str] | None = None) -> dict[int, dict[str, float]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    parser.add_argument("--calls", type=int, default=40)
    parser.add_argument("--budget", type=int, default=8000)
    parser.add_argument(
        "--manager",
        choices=["default", "lean"],
        default="default",
        help="default: Window(budget=...) (extractive summarizer, recall); lean: no summarizer, no recall",
    )
    parser.add_argument("--entry", choices=["fit", "afit"], default="fit")
    parser.add_argument("--store", choices=["none", "memory", "sqlite"], default="none")
    args = parser.parse_args(argv)
    results = {
        size: measure(size, args.calls, args.budget, args.manager, args.entry, args.store) for size in args.sizes
    }
    base = results[args.sizes[0]]["ours_ms"]
    rows = [
        [
            f"{int(r['messages']):,} messages",
            r["ours_ms"],
            r["manager_ms"],
            r["ours_ms"] - r["manager_ms"],
            r["floor_ms"],
            r["ours_ms"] / r["floor_ms"] if r["floor_ms"] else float("inf"),
            r["ours_ms"] / base if base else float("inf"),
        ]
        for r in results.values()
    ]
    print_table(
        ["history", f"Window.{args.entry} ms", "of it manager", "of it Window", "floor ms", "ours / floor", "growth"],
        rows,
        title=f"Window.{args.entry} on a continuing thread, budget {args.budget:,}, {args.manager} manager, "
        f"store {args.store} (CPU per call, mean of {args.calls} calls)",
    )
    last = results[args.sizes[-1]]
    growth = last["ours_ms"] / base if base else float("inf")
    over_floor = last["ours_ms"] / last["floor_ms"] if last["floor_ms"] else float("inf")
    print(
        f"growth {args.sizes[0]:,} -> {args.sizes[-1]:,}: {growth:.2f}x (target <= {GROWTH_TARGET}x: "
        f"{'met' if growth <= GROWTH_TARGET else 'MISSED'})"
    )
    print(
        f"ours / floor at {args.sizes[-1]:,}: {over_floor:.2f}x (target <= {FLOOR_TARGET:.0f}x: "
        f"{'met' if over_floor <= FLOOR_TARGET else 'MISSED'})"
    )
    return results


if __name__ == "__main__":
    main()
