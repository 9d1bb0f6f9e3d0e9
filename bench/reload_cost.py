"""What a checkpointer reload costs the budget manager per turn, the way the graph runtime runs it.

The graph loads the thread's state from its checkpointer at the start of every ``invoke`` and stores it at the
end. Three ways to run the same turns through `TokenBudgetContextManager` with a SQLite checkpointer:

* ``live``: the manager is handed the same state object every turn (no reload at all, the floor);
* ``reload``: every turn loads the state from the checkpointer that wrote it, as ``CompiledGraph`` does;
* ``new process``: every turn loads it through a fresh checkpointer on the same file, so no object survives
  (what a process restart pays on its first turn, paid on every turn);
* ``caller json``: every turn the state goes through the caller's own JSON (``model_dump_json`` then
  ``model_validate_json``, as a user's own database hands it back): equal messages, new objects, and no
  fingerprints stored with them.

Only the manager's trim is timed (CPU seconds); loading and storing are timed separately and reported beside it.
The acceptance ratios are ``reload / live`` and ``new process / live`` for the trim (at most 1.5x) and
``caller json / live`` (at most 1.3x), at 8k and at 32k. In the
``new process`` mode the manager survives (its knowledge of the view is what a long-lived worker keeps) while every
message object is read back; the fingerprints stored with the messages let it recognise the view without hashing.

    python bench/reload_cost.py [--turns 400] [--budgets 8000 32000] [--source generated|tau] [--repeats N]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from _common import CpuClock, call_chunks, chained, fresh_counter, print_table

from windowkeeper.context.budget import TokenBudgetContextManager
from windowkeeper.graph import SQLiteCheckpointer
from windowkeeper.messages import Message
from windowkeeper.state import AgentState, ExecMeta
from windowkeeper.testing.sessiongen import generate_session

RESERVE = 2000
TARGET = 1.5
TARGETS = {"reload": TARGET, "new process": TARGET, "caller json": 1.3}


def session_chunks(source: str, turns: int) -> list[list[Message]]:
    if source == "tau":
        return call_chunks(chained("tau", turns), turns)
    return call_chunks(generate_session(turns + 1, seed=11).messages, turns)


async def run(chunks: Sequence[Sequence[Message]], budget: int, mode: str, workdir: Path) -> dict[str, float]:
    path = workdir / f"{mode}-{budget}.db"
    manager: TokenBudgetContextManager[AgentState] = TokenBudgetContextManager(
        budget + RESERVE, RESERVE, counter=fresh_counter()
    )
    saver = SQLiteCheckpointer(path)
    trim, io = CpuClock(), CpuClock()
    state = AgentState(execution_meta=ExecMeta(thread_id="t"))
    for chunk in chunks:
        with io.timing():
            if mode == "reload":
                state = await saver.aget_state("t") or state
            elif mode == "new process":
                await saver.aclose()
                saver = SQLiteCheckpointer(path)
                state = await saver.aget_state("t") or state
            elif mode == "caller json":
                state = AgentState.model_validate_json(state.model_dump_json())
        state.context = [*state.context, *chunk]
        with trim.timing():
            state = await manager.atrim_context(state)
        with io.timing():
            await saver.aput("t", state, list(chunk))
    await saver.aclose()
    return {"trim_ms": 1000 * trim.seconds / len(chunks), "io_ms": 1000 * io.seconds / len(chunks)}


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=400)
    parser.add_argument("--budgets", type=int, nargs="+", default=[8000, 32000])
    parser.add_argument("--source", choices=("generated", "tau"), default="generated")
    parser.add_argument(
        "--repeats",
        type=int,
        default=1,
        help="run every mode this many times, the modes in turn, and keep each one's fastest (a shared machine)",
    )
    parser.add_argument(
        "--modes",
        nargs="+",
        choices=tuple(TARGETS),
        default=list(TARGETS),
        help="the modes measured beside the live one (default: all)",
    )
    args = parser.parse_args(argv)
    chunks = session_chunks(args.source, args.turns)
    results: dict[str, Any] = {}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for budget in args.budgets:
            measured: dict[str, dict[str, float]] = {}
            for repeat in range(max(1, args.repeats)):
                for mode in ("live", *args.modes):
                    fresh = Path(tmp) / f"run-{budget}-{repeat}"  # a store of its own for every run
                    fresh.mkdir(exist_ok=True)
                    m = asyncio.run(run(chunks, budget, mode, fresh))
                    if mode not in measured or m["trim_ms"] < measured[mode]["trim_ms"]:
                        measured[mode] = m
            live = measured["live"]["trim_ms"]
            for mode, m in measured.items():
                rows.append((f"{budget:,} {mode}", m["trim_ms"], m["trim_ms"] / live, m["io_ms"]))
            results[str(budget)] = measured
    print_table(
        ("budget / turn", "trim ms/turn", "x live", "load+store ms/turn"),
        rows,
        title=f"{len(chunks)} turns ({args.source}), TokenBudgetContextManager, SQLite checkpointer, CPU time",
    )
    names = {"reload": "worst_ratio", "new process": "worst_new_process_ratio", "caller json": "worst_json_ratio"}
    for mode in args.modes:
        target = TARGETS[mode]
        worst = max(results[str(b)][mode]["trim_ms"] / results[str(b)]["live"]["trim_ms"] for b in args.budgets)
        verdict = "met" if worst <= target else "MISSED"
        print(f"{mode} / live, worst budget: {worst:.2f}x (target <= {target}x: {verdict})")
        results[names[mode]] = worst
    return results


if __name__ == "__main__":
    main()
