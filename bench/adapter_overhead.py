"""What the adapters cost per call next to the host's own tools, side by side in one process (CPU seconds).

* session: `WindowkeeperSession` vs the OpenAI Agents SDK's ``SQLiteSession``, both on a SQLite file holding a
  generated coding-agent session of 1k and 10k Responses items. A turn is what one run does with its session:
  ``add_items`` with one run's items (a user message, the replies and tool results), then ``get_items`` for the
  next run.
  Ours returns the managed view (budget ``--budget``); the SDK's returns every item. The first ``get_items`` of
  ours (which reads the history once and plans the view) is not timed. Of ours, the CPU inside the context
  manager's ``atrim_context`` (planning, counting the new items, summarizing, recall) is printed apart, so the
  session's own part (its store reads and writes, the conversion and the Window's bookkeeping) shows beside it.
* middleware: in a LangChain ``create_agent`` loop against the local fake OpenAI server, the CPU (of the hook's
  thread: LangGraph saves checkpoints on a thread of its own, see `ThreadClock`) spent inside
  `WindowkeeperMiddleware.wrap_model_call` (without the model call it wraps) vs inside LangChain's own
  ``SummarizationMiddleware.before_model``, per model call, over the same scripted conversation. The fake model
  answers every user turn with a tool call and an answer; the tool output is long, so both middlewares cut.
  Also printed: what tokenizing each message of the run once, exactly, costs per call (the least an exact
  manager spends; the peer estimates, characters / 4), so the part of ours above it is what the middleware adds.
* long threads (``--long-sizes``): the same loop continuing a thread whose checkpointed history already holds 1k
  or 10k messages (a generated coding-agent session), for each budget of ``--long-budgets`` given to both
  middlewares alike (ours as its budget; the peer's ``trigger`` at it, ``keep`` at half). The first turn (which
  hands both the whole history once: ours reads it, the peer summarizes it) is timed apart from the turns after
  it. The peer counts every message of its state on every call, approximately; its own summarizing keeps that
  state under its trigger, so what it counts grows with the budget, not with the history. Ours reads what is new.

The session is measured with a lean manager (no summarizer, no recall: what the session and `Window` cost) and
with the default one (what a user of ``manager_or_budget=<tokens>`` pays, the manager's summarizing included).

    python bench/adapter_overhead.py [--sizes 1000 10000] [--turns 30] [--budget 8000] [--agent-turns 40]
                                     [--managers lean default] [--long-sizes 1000 10000] [--long-turns 10]
                                     [--long-budgets 8000 32000 100000]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from _common import CpuClock, build_history, fresh_counter, print_table, steps_from

from windowkeeper.llm.formats import to_langchain, to_responses_input
from windowkeeper.testing.fake_servers import FakeOpenAIServer, FakeReply, FakeToolCall

RESERVE = 2000
SESSION_TARGET = 1.5
MIDDLEWARE_TARGET = 1.0


async def session_turns(session: Any, steps: Sequence[list[dict[str, Any]]], clock: CpuClock) -> None:
    for step in steps:
        with clock.timing():
            await session.add_items(step)
            await session.get_items()


def session_manager(kind: str, budget: int) -> Any:
    """``default``: a budget in tokens (`Window`'s default manager: extractive summarizer, recall); ``lean``: a
    `TokenBudgetContextManager` without summarizer and recall (what the session itself costs, not the manager)."""
    if kind == "default":
        return budget + RESERVE
    from windowkeeper.context.budget import TokenBudgetContextManager

    return TokenBudgetContextManager(budget + RESERVE, RESERVE, recall=False)


async def measure_session(size: int, turns: int, budget: int, folder: Path, kind: str) -> dict[str, float]:
    from agents import SQLiteSession

    from windowkeeper.integrations.openai_agents import WindowkeeperSession

    _, items = to_responses_input(build_history(size + 40 * turns, seed=11), passthrough=False)
    start = next(i for i in range(size, len(items)) if items[i].get("role") == "user")
    steps = steps_from(items, start, turns, "user")  # one run each: a user message up to the next
    prefill = list(items[:start])

    theirs = SQLiteSession(f"s{size}", str(folder / f"sdk-{kind}-{size}.db"))
    await theirs.add_items(prefill)
    ours = WindowkeeperSession(
        f"s{size}", str(folder / f"wk-{kind}-{size}.db"), manager_or_budget=session_manager(kind, budget)
    )
    await ours.add_items(prefill)
    await ours.get_items()  # reads the history once and plans the first view
    clock_manager = timed_manager(ours.window.manager)
    gc.collect()
    clock_ours, clock_theirs = CpuClock(), CpuClock()
    # interleaved halves, so a busy moment of the shared machine falls on both sides alike
    half = len(steps) // 2
    for part in (steps[:half], steps[half:]):
        await session_turns(theirs, part, clock_theirs)
        await session_turns(ours, part, clock_ours)
    theirs.close()
    await ours.aclose()
    return {
        "items": float(start),
        "ours_ms": 1000 * clock_ours.seconds / clock_ours.calls,
        "manager_ms": 1000 * clock_manager.seconds / clock_ours.calls,
        "theirs_ms": 1000 * clock_theirs.seconds / clock_theirs.calls,
    }


def timed_manager(manager: Any) -> CpuClock:
    """Charge the CPU of ``manager``'s ``atrim_context`` calls to the returned clock (the session's window calls
    it once per ``get_items``), by wrapping the bound method on this instance only."""
    clock = CpuClock()
    trim = manager.atrim_context

    async def atrim_context(state: Any) -> Any:
        with clock.timing():
            return await trim(state)

    manager.atrim_context = atrim_context
    return clock


# -- the middleware in a create_agent loop ---------------------------------------------------------------------


def long_log(target: str) -> str:
    """Run the tests of ``target`` (a long, deterministic log).

    Args:
        target: Test file or directory.
    """
    return "\n".join(f"{target}::test_case_{n} PASSED in 0.{n:02d}s" for n in range(120))


def agent_script(turns: int) -> list[FakeReply]:
    out: list[FakeReply] = []
    for turn in range(turns):
        out.append(FakeReply(tool_calls=(FakeToolCall("long_log", {"target": f"tests/t_{turn}.py"}, id=f"c{turn}"),)))
        out.append(FakeReply(text=f"Turn {turn}: every test of t_{turn} passes."))
    return out


class ThreadClock(CpuClock):
    """`CpuClock` of the calling thread's CPU only (``time.thread_time``). LangGraph saves each step's checkpoint
    on a background thread, and the fake server answers on its own: with a long history in the checkpoint, that
    work (O(history) per step) ran while a hook was being timed, and the process clock charged up to a GIL switch
    interval of it (5 ms) to whichever hook it overlapped."""

    @contextmanager
    def timing(self) -> Iterator[None]:
        started = time.thread_time()
        try:
            yield
        finally:
            self.seconds += time.thread_time() - started
            self.calls += 1


class HookClock:
    """Wraps one middleware hook so that the CPU its thread spends in it, minus the model call it may wrap, is
    charged here."""

    def __init__(self) -> None:
        self.clock = ThreadClock()
        self.excluded = 0.0

    @contextmanager
    def excluding(self) -> Iterator[None]:
        started = time.thread_time()
        try:
            yield
        finally:
            self.excluded += time.thread_time() - started

    @property
    def seconds(self) -> float:
        return self.clock.seconds - self.excluded

    def wrap(self, wrap: Callable[[Any, Callable[[Any], Any]], Any], request: Any, handler: Any) -> Any:
        def inner(req: Any) -> Any:
            with self.excluding():
                return handler(req)

        with self.clock.timing():
            return wrap(request, inner)


def run_agent(
    middleware: Any,
    turns: int,
    entry: str = "sync",
    *,
    prefill: Sequence[Any] = (),
    after_first: Callable[[], None] | None = None,
) -> list[Any]:
    """Run the scripted loop with ``middleware``; the agent's whole history at the end (LangChain messages).

    ``prefill`` (LangChain messages) goes in with the first turn's user message, as a thread that already holds
    that history; ``after_first`` is called when the first turn has run (to time the turns after it apart)."""
    from langchain.agents import create_agent
    from langchain_core.messages import HumanMessage
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from langgraph.checkpoint.memory import InMemorySaver
    from openai import DefaultAsyncHttpxClient, DefaultHttpxClient

    # HTTP clients of the run's own, closed when it ends (langchain_openai's default ones live in a process-wide
    # cache, keeping a connection to every fake server open until exit)
    http, ahttp = DefaultHttpxClient(), DefaultAsyncHttpxClient()
    with FakeOpenAIServer(agent_script(turns)) as srv, http:
        model = ChatOpenAI(
            model="gpt-4o-mini",
            base_url=srv.base_url,
            api_key="test",
            max_retries=0,
            http_client=http,
            http_async_client=ahttp,
        )
        agent = create_agent(
            model,
            tools=[tool(long_log)],
            system_prompt="You run tests.",
            middleware=[middleware],
            checkpointer=InMemorySaver(),
        )
        config: Any = {"configurable": {"thread_id": "bench"}}

        def turn_input(turn: int) -> dict[str, Any]:
            said = HumanMessage(f"Turn {turn}: run tests/t_{turn}.py")
            return {"messages": [*prefill, said] if turn == 0 else [said]}

        async def arun() -> None:
            async with ahttp:
                for turn in range(turns):
                    await agent.ainvoke(turn_input(turn), config)
                    if turn == 0 and after_first is not None:
                        after_first()

        if entry == "async":
            asyncio.run(arun())
        else:
            for turn in range(turns):
                agent.invoke(turn_input(turn), config)
                if turn == 0 and after_first is not None:
                    after_first()
        return list(agent.get_state(config).values["messages"])


def exact_floor(history: Sequence[Any]) -> float:
    """CPU seconds to tokenize every message of ``history`` once, exactly (a fresh counter, no memo): what any
    exact manager spends at least over the run, as `window_cost.py`'s floor."""
    from windowkeeper.llm.formats import from_langchain

    counter = fresh_counter()
    messages = from_langchain(history)
    started = time.process_time()
    for message in messages:
        counter.count_message_uncached(message)
    return time.process_time() - started


def timed_middlewares(budget: int, kind: str) -> tuple[Any, HookClock, Any, HookClock]:
    """``(ours, our clock, theirs, their clock)``: `WindowkeeperMiddleware` (manager ``kind``, ``budget``) and
    LangChain's ``SummarizationMiddleware`` (trigger at ``budget`` tokens, keeping half), each charging the CPU of
    its hook (the model call it wraps excluded) to its clock."""
    from langchain.agents.middleware import SummarizationMiddleware
    from langchain_core.language_models.fake_chat_models import FakeListChatModel

    from windowkeeper.integrations.langchain import WindowkeeperMiddleware

    ours_clock, theirs_clock = HookClock(), HookClock()

    class TimedWindowkeeper(WindowkeeperMiddleware):
        def wrap_model_call(self, request: Any, handler: Any) -> Any:
            return ours_clock.wrap(super().wrap_model_call, request, handler)

        async def awrap_model_call(self, request: Any, handler: Any) -> Any:
            async def inner(req: Any) -> Any:
                started = time.thread_time()
                try:
                    return await handler(req)
                finally:
                    ours_clock.excluded += time.thread_time() - started

            with ours_clock.clock.timing():
                return await super().awrap_model_call(request, inner)

    class TimedSummarization(SummarizationMiddleware):
        def before_model(self, state: Any, runtime: Any) -> Any:
            with theirs_clock.clock.timing():
                return super().before_model(state, runtime)

        async def abefore_model(self, state: Any, runtime: Any) -> Any:
            with theirs_clock.clock.timing():
                return await super().abefore_model(state, runtime)

    summarizer = FakeListChatModel(responses=["The user ran the tests of earlier turns; all passed."] * 1000)
    theirs = TimedSummarization(summarizer, trigger=("tokens", budget), keep=("tokens", budget // 2))
    ours = TimedWindowkeeper(session_manager(kind, budget))
    return ours, ours_clock, theirs, theirs_clock


def measure_middleware(turns: int, budget: int, kind: str, entry: str) -> dict[str, float]:
    ours, ours_clock, theirs, theirs_clock = timed_middlewares(budget, kind)
    fresh_counter()  # loads the o200k_base encoding once, outside every timed region
    gc.collect()
    run_agent(theirs, turns, entry)
    history = run_agent(ours, turns, entry)
    calls = 2 * turns
    return {
        "calls": float(calls),
        "messages": float(len(history)),
        "ours_ms": 1000 * ours_clock.seconds / calls,
        "theirs_ms": 1000 * theirs_clock.seconds / calls,
        "floor_ms": 1000 * min(exact_floor(history) for _ in range(3)) / calls,
    }


def measure_long_thread(size: int, turns: int, budget: int, kind: str, entry: str) -> dict[str, float]:
    """Both middlewares on a thread whose history holds ``size`` messages before the loop's first turn: CPU per
    model call in the first turn (both see the whole history once) and, apart, in the ``turns - 1`` after it."""
    prefill = to_langchain(build_history(size, seed=13), passthrough=False)
    ours, ours_clock, theirs, theirs_clock = timed_middlewares(budget, kind)
    first: dict[str, float] = {}

    def after_first(name: str, clock: HookClock) -> Callable[[], None]:
        def mark() -> None:
            first[name] = clock.seconds

        return mark

    fresh_counter()
    gc.collect()
    run_agent(theirs, turns, entry, prefill=prefill, after_first=after_first("theirs", theirs_clock))
    gc.collect()
    history = run_agent(ours, turns, entry, prefill=prefill, after_first=after_first("ours", ours_clock))
    later = 2 * (turns - 1)  # two model calls a turn
    return {
        "size": float(size),
        "budget": float(budget),
        "messages": float(len(history)),
        "ours_first_ms": 1000 * first["ours"] / 2,
        "theirs_first_ms": 1000 * first["theirs"] / 2,
        "ours_ms": 1000 * (ours_clock.seconds - first["ours"]) / later,
        "theirs_ms": 1000 * (theirs_clock.seconds - first["theirs"]) / later,
    }


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--turns", type=int, default=30)
    parser.add_argument("--budget", type=int, default=8000)
    parser.add_argument("--agent-turns", type=int, default=40, help="turns of the middleware loop (0: session only)")
    parser.add_argument("--managers", nargs="+", choices=["lean", "default"], default=["lean", "default"])
    parser.add_argument(
        "--agent-entry", choices=["sync", "async"], default="sync", help="agent.invoke (sync hooks) or ainvoke"
    )
    parser.add_argument(
        "--long-sizes", type=int, nargs="*", default=[], help="histories the loop continues (e.g. 1000 10000)"
    )
    parser.add_argument("--long-turns", type=int, default=10, help="turns of each long-thread loop (>= 2)")
    parser.add_argument("--long-budgets", type=int, nargs="+", default=[8000, 32000, 100000])
    args = parser.parse_args(argv)

    sessions: dict[str, dict[int, dict[str, float]]] = {}
    with tempfile.TemporaryDirectory() as folder:
        for kind in args.managers:
            sessions[kind] = {
                size: asyncio.run(measure_session(size, args.turns, args.budget, Path(folder), kind))
                for size in args.sizes
            }
    print_table(
        [
            "manager, history",
            "WindowkeeperSession ms",
            "of it the manager ms",
            "SQLiteSession ms",
            "ours / theirs",
            "without the manager / theirs",
        ],
        [
            [
                f"{kind}, {int(r['items']):,} items",
                r["ours_ms"],
                r["manager_ms"],
                r["theirs_ms"],
                r["ours_ms"] / r["theirs_ms"],
                (r["ours_ms"] - r["manager_ms"]) / r["theirs_ms"],
            ]
            for kind, by_size in sessions.items()
            for r in by_size.values()
        ],
        title=f"session add_items + get_items per turn (CPU, mean of {args.turns} turns, budget {args.budget:,})",
    )
    for kind, by_size in sessions.items():
        worst = max(r["ours_ms"] / r["theirs_ms"] for r in by_size.values())
        verdict = "met" if worst <= SESSION_TARGET else "MISSED"
        print(f"{kind} manager: worst ratio {worst:.2f}x (target <= {SESSION_TARGET}x: {verdict})")
    print()
    if args.agent_turns <= 0 and not args.long_sizes:  # the session part alone
        return {"sessions": sessions, "middleware": {}}
    long = long_threads(args) if args.long_sizes else []
    if args.agent_turns <= 0:
        return {"sessions": sessions, "middleware": {}, "long": long}

    middleware = {
        kind: measure_middleware(args.agent_turns, args.budget, kind, args.agent_entry) for kind in args.managers
    }
    print_table(
        ["middleware", "ms per model call", "ours / theirs"],
        [
            row
            for kind, m in middleware.items()
            for row in (
                [f"WindowkeeperMiddleware.wrap_model_call ({kind})", m["ours_ms"], m["ours_ms"] / m["theirs_ms"]],
                ["  of it at least: exact tokens of the new messages", m["floor_ms"], m["floor_ms"] / m["theirs_ms"]],
                ["SummarizationMiddleware.before_model", m["theirs_ms"], "-"],
            )
        ],
        title=f"create_agent loop ({args.agent_entry}), {2 * args.agent_turns} model calls, "
        f"{int(next(iter(middleware.values()))['messages'])} messages at the end (CPU in the hook, model call "
        "excluded)",
    )
    for kind, m in middleware.items():
        ratio = m["ours_ms"] / m["theirs_ms"]
        print(
            f"{kind} manager: ours / theirs {ratio:.2f}x (target <= {MIDDLEWARE_TARGET}x: "
            f"{'met' if ratio <= MIDDLEWARE_TARGET else 'MISSED'})"
        )
    return {"sessions": sessions, "middleware": middleware, "long": long}


def long_threads(args: argparse.Namespace) -> list[dict[str, float]]:
    """Measure and print the long-thread loops (every size, budget and manager asked for)."""
    if args.long_turns < 2:
        raise SystemExit(f"--long-turns must be at least 2 (the first turn is timed apart), got {args.long_turns}")
    rows: list[dict[str, float]] = []
    for kind in args.managers:
        for size in args.long_sizes:
            for budget in args.long_budgets:
                r = measure_long_thread(size, args.long_turns, budget, kind, args.agent_entry)
                r["kind"] = kind  # type: ignore[assignment]
                rows.append(r)
    print_table(
        [
            "manager, history, budget",
            "ours ms",
            "theirs ms",
            "ours / theirs",
            "first turn: ours ms",
            "theirs ms",
        ],
        [
            [
                f"{r['kind']}, {int(r['size']):,} msgs, {int(r['budget']):,} tokens",
                r["ours_ms"],
                r["theirs_ms"],
                r["ours_ms"] / r["theirs_ms"],
                r["ours_first_ms"],
                r["theirs_first_ms"],
            ]
            for r in rows
        ],
        title=f"create_agent loop ({args.agent_entry}) continuing a long thread: CPU per model call in the "
        f"{2 * (args.long_turns - 1)} calls after the first turn (first turn apart; both middlewares at the budget)",
    )
    print()
    return rows


if __name__ == "__main__":
    main()
