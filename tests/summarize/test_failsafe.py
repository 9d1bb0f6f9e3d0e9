"""The one fail-safe summarizer call: never raises, real timeouts for sync and async summarizers, finite timeouts.

Issue 12 item 4: a synchronous summarizer that hangs used to be waited for forever (it ran on the event loop, where
``asyncio.wait_for`` cannot interrupt it), and ``timeout=nan`` was accepted and then silently disabled summaries.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import math
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from windowkeeper import AgentState, ConfigurationError, Message
from windowkeeper.context import SummaryContextManager, TokenBudgetContextManager
from windowkeeper.summarize.failsafe import (
    FAILURE_LOG,
    SummarizerTimeoutError,
    call_summarizer,
    check_timeout,
    guarded_call,
)
from windowkeeper.tokens import default_counter

TIMEOUT = 0.2
SLACK = 3.0  # generous (shared cores, cold imports), yet far below "hung": the hanging summarizers wait 60 s


@pytest.fixture(autouse=True)
def _warm_tokenizer() -> None:
    """Managers count tokens for their metrics; the first count loads the encoding, which is not what is timed."""
    default_counter().count_text("warm up")


@pytest.fixture
def gate() -> Iterator[threading.Event]:
    """What a hanging summarizer waits on; released after the test so no thread outlives it for long."""
    event = threading.Event()
    yield event
    event.set()


def _turns(n: int) -> list[Message]:
    out: list[Message] = []
    for i in range(n):
        out += [
            Message.text_message(f"question {i}", message_id=f"u{i}"),
            Message.text_message(f"answer {i}", role="assistant", message_id=f"a{i}"),
        ]
    return out


# -- timeouts are finite and positive --------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, 0, -1, True, "5", None])
def test_check_timeout_rejects_what_is_not_a_finite_positive_number(bad: object) -> None:
    with pytest.raises(ConfigurationError, match=r"timeout must be a finite number of seconds > 0, got"):
        check_timeout("timeout", bad)


def test_check_timeout_accepts_positive_numbers() -> None:
    assert check_timeout("timeout", 2) == 2.0 and check_timeout("timeout", 0.05) == 0.05


@pytest.mark.parametrize("bad", [math.nan, math.inf, 0])
def test_summary_manager_rejects_a_timeout_that_would_disable_summaries(bad: float) -> None:
    with pytest.raises(ConfigurationError, match=r"timeout must be a finite number"):
        SummaryContextManager(summarizer="extractive", timeout=bad)


async def test_call_summarizer_rejects_nan_instead_of_never_summarizing() -> None:
    with pytest.raises(ConfigurationError, match=r"nan"):
        await call_summarizer(lambda messages: "x", [], timeout=math.nan)


# -- a real timeout for synchronous summarizers ------------------------------------------------------------------


async def test_a_hanging_sync_summarizer_is_timed_out(gate: threading.Event, caplog: pytest.LogCaptureFixture) -> None:
    def hangs(messages: Sequence[Message]) -> str:
        gate.wait(60)
        return "too late"

    started = time.perf_counter()
    with caplog.at_level(logging.ERROR):
        text = await call_summarizer(hangs, _turns(2), timeout=TIMEOUT)
    elapsed = time.perf_counter() - started
    assert text is None
    assert elapsed < TIMEOUT + SLACK, f"a hung sync summarizer held the call for {elapsed:.2f}s"
    failures = [r for r in caplog.records if r.getMessage() == FAILURE_LOG]
    assert len(failures) == 1 and failures[0].exc_info is not None
    assert isinstance(failures[0].exc_info[1], SummarizerTimeoutError)


async def test_a_hanging_sync_summarize_method_is_timed_out_and_the_loop_stays_free(gate: threading.Event) -> None:
    class Blocking:
        def summarize(self, messages: Sequence[Message], **kwargs: Any) -> str:
            gate.wait(60)
            return "too late"

    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    task = asyncio.create_task(ticker())
    try:
        text = await call_summarizer(Blocking(), _turns(1), timeout=TIMEOUT)
    finally:
        task.cancel()
    assert text is None
    assert ticks >= 5, "the event loop was blocked while the sync summarizer ran"


async def test_summary_manager_with_a_hanging_sync_summarizer_returns_within_its_timeout(
    gate: threading.Event,
) -> None:
    def hangs(messages: Sequence[Message], previous_summary: str | None) -> str:
        gate.wait(60)
        return "too late"

    manager: SummaryContextManager[AgentState] = SummaryContextManager(
        summarizer=hangs, max_messages=2, keep_recent=2, timeout=TIMEOUT
    )
    state = AgentState(context=_turns(4))
    before = list(state.context)
    started = time.perf_counter()
    await manager.atrim_context(state)
    assert time.perf_counter() - started < TIMEOUT + SLACK
    assert state.context == before and state.context_summary is None


def test_sync_trim_with_a_hanging_sync_summarizer_returns_too(gate: threading.Event) -> None:
    """``asyncio.run`` waits for its executor's threads at shutdown; the summarizer's daemon thread is not one."""

    def hangs(messages: Sequence[Message], previous_summary: str | None) -> str:
        gate.wait(60)
        return "too late"

    manager: SummaryContextManager[AgentState] = SummaryContextManager(
        summarizer=hangs, max_messages=2, keep_recent=2, timeout=TIMEOUT
    )
    started = time.perf_counter()
    state = manager.trim_context(AgentState(context=_turns(4)))
    assert time.perf_counter() - started < TIMEOUT + SLACK
    assert state.context_summary is None and len(state.context) == 8


async def test_budget_manager_with_a_hanging_sync_summarizer_returns_within_its_timeout(
    gate: threading.Event,
) -> None:
    def hangs(messages: Sequence[Message], previous_summary: str | None) -> str:
        gate.wait(60)
        return "too late"

    manager: TokenBudgetContextManager[AgentState] = TokenBudgetContextManager(
        max_tokens=400, reserve_tokens=0, summarizer=hangs, summary_timeout=TIMEOUT
    )
    long_turns = [
        Message.text_message(f"question {i}: " + "words " * 40, role="user" if i % 2 == 0 else "assistant")
        for i in range(12)
    ]
    started = time.perf_counter()
    await manager.atrim_context(AgentState(context=long_turns))
    assert time.perf_counter() - started < TIMEOUT + SLACK


# -- never raises, and sync code keeps the caller's context -------------------------------------------------------


async def test_guarded_call_reports_errors_instead_of_raising(caplog: pytest.LogCaptureFixture) -> None:
    async def boom() -> str:
        raise ValueError("bad reply")

    log = logging.getLogger("windowkeeper.memory.base")
    with caplog.at_level(logging.ERROR):
        attempt = await guarded_call(boom, timeout=1.0, log=log)
    assert not attempt.ok and attempt.value is None and attempt.error == "ValueError: bad reply"
    [record] = [r for r in caplog.records if r.getMessage() == FAILURE_LOG]
    assert record.name == "windowkeeper.memory.base"


async def test_guarded_call_runs_sync_code_in_a_worker_with_the_callers_context() -> None:
    tenant: contextvars.ContextVar[str] = contextvars.ContextVar("tenant", default="none")
    tenant.set("acme")
    loop_thread = threading.get_ident()

    def where(prefix: str, *, suffix: str) -> tuple[str, int]:
        return f"{prefix}{tenant.get()}{suffix}", threading.get_ident()

    attempt = await guarded_call(where, "<", suffix=">", timeout=1.0)
    assert attempt.ok
    assert attempt.value is not None
    value, thread = attempt.value
    assert value == "<acme>" and thread != loop_thread


async def test_guarded_call_awaits_what_a_sync_function_returns_within_the_deadline() -> None:
    async def late() -> str:
        await asyncio.sleep(5)
        return "late"

    def returns_coroutine() -> Any:
        return late()

    started = time.perf_counter()
    attempt = await guarded_call(returns_coroutine, timeout=TIMEOUT)
    assert not attempt.ok and attempt.error is not None and attempt.error.startswith("SummarizerTimeoutError")
    assert time.perf_counter() - started < TIMEOUT + SLACK


@pytest.mark.parametrize("reply", [None, "", "  \n ", 42])
async def test_call_summarizer_turns_unusable_replies_into_none(reply: object) -> None:
    async def answer(messages: Sequence[Message]) -> object:
        return reply

    assert await call_summarizer(answer, _turns(1), timeout=1.0) is None


async def test_call_summarizer_strips_and_passes_every_argument() -> None:
    seen: dict[str, Any] = {}

    def summarize(
        messages: Sequence[Message], previous_summary: str | None, *, max_tokens: int, instructions: str | None
    ) -> str:
        seen.update(ids=[m.message_id for m in messages], previous=previous_summary, max=max_tokens, how=instructions)
        return "  the summary \n"

    text = await call_summarizer(
        summarize, _turns(1), timeout=1.0, previous_summary="before", max_tokens=77, instructions="be brief"
    )
    assert text == "the summary"
    assert seen == {"ids": ["u0", "a0"], "previous": "before", "max": 77, "how": "be brief"}


async def test_a_summarizer_that_cannot_be_adapted_is_a_logged_failure(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR):
        assert await call_summarizer(object(), _turns(1), timeout=1.0) is None
    assert FAILURE_LOG in [r.getMessage() for r in caplog.records]


# -- the memory's summarizer call goes through the same fail-safe call -------------------------------------------


def _memory_event(i: int) -> dict[str, Any]:
    text = f"step {i}: retry the flaky payment webhook with a longer timeout of {i} s"
    return {"message": {"id": f"m{i}", "role": "user", "content": text, "timestamp": 1_718_000_000 + i}, "state": {}}


async def test_memory_add_with_a_hanging_sync_summarizer_returns_within_the_timeout(
    gate: threading.Event, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 12 item 4: ``add()`` used to hang (> 25 s) on a summarizer that never answered."""
    from windowkeeper.memory import InMemoryMemory

    def hangs(events: list[dict[str, Any]]) -> dict[str, Any]:
        gate.wait(60)
        return {"user_goal": "too late"}

    memory = InMemoryMemory(
        summarizer=hangs,
        summary_timeout=TIMEOUT,
        thresholds={"pre_rot_threshold": 150, "keep_recent_count": 2},
    )
    memory.counter.count_text("warm the tokenizer up, so only the summarizer's time is measured")
    reports = []
    with caplog.at_level(logging.ERROR, logger="windowkeeper.memory.base"):
        for i in range(20):
            started = time.perf_counter()
            reports.append(await memory.add(_memory_event(i)))
            assert time.perf_counter() - started < TIMEOUT + SLACK, f"add #{i} waited on the hung summarizer"
    failed = [r for r in reports if r is not None and r.failure]
    assert failed and all("SummarizerTimeoutError" in (r.failure or "") for r in failed)
    assert FAILURE_LOG in [r.getMessage() for r in caplog.records if r.name == "windowkeeper.memory.base"]
    assert len(await memory.history()) == 20  # nothing the user added was lost


def test_memory_rejects_a_nan_summary_timeout() -> None:
    from windowkeeper.memory import InMemoryMemory

    with pytest.raises(ConfigurationError, match="summary_timeout"):
        InMemoryMemory(summary_timeout=math.nan)


def test_memory_add_under_asyncio_run_is_not_held_by_the_abandoned_thread(gate: threading.Event) -> None:
    """``asyncio.run`` joins its default executor at shutdown; a hung summarizer must not be running in it."""
    from windowkeeper.memory import InMemoryMemory

    def hangs(events: list[dict[str, Any]]) -> dict[str, Any]:
        gate.wait(60)
        return {"user_goal": "too late"}

    async def session() -> None:
        memory = InMemoryMemory(
            summarizer=hangs, summary_timeout=TIMEOUT, thresholds={"pre_rot_threshold": 150, "keep_recent_count": 2}
        )
        for i in range(12):
            await memory.add(_memory_event(i))

    started = time.perf_counter()
    asyncio.run(session())
    assert time.perf_counter() - started < 12 * (TIMEOUT + SLACK)
