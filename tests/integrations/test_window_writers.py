"""Two writers on one thread of one store: two `Window` objects, or two processes (say two gateway workers behind a
load balancer), each serving some of a thread's calls.

Whatever the interleaving, a call must give what one window serving every call in the order they committed gives,
and the store must end as that one window's would: a save made from a stale load neither keeps the other writer's
state from the next call nor overwrites it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import multiprocessing
import re
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from windowkeeper import ConflictError, Window
from windowkeeper.integrations._threads import ThreadStore
from windowkeeper.llm.formats import to_openai_chat
from windowkeeper.storage import open_store
from windowkeeper.storage.url import with_prefix
from windowkeeper.testing.sessiongen import generate_session

from .window_child import BUDGET, conversation

THREAD = "shared-thread"
Lists = list[list[dict[str, Any]]]


@pytest.fixture(params=["sqlite", "postgres", "redis"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh store of each kind (the server ones under a prefix of their own, dropped afterwards)."""
    if request.param == "sqlite":
        yield str(tmp_path / "writers.db")
        return
    server: str = request.getfixturevalue(f"{request.param}_server")
    url = with_prefix(server, f"wkwr_{uuid.uuid4().hex[:10]}")
    yield url
    window = Window(budget=BUDGET, store=url, thread_id=THREAD)
    try:
        window.delete_thread()
    finally:
        window.close()


def _growing() -> Lists:
    """One conversation as its client sends it: the list up to each assistant turn (36 calls)."""
    items, points = conversation()
    return [items[:k] for k in points]


def _diverging() -> Lists:
    """Two conversations sent under one thread id, call by call in turn (each list goes on from its own last)."""
    first = to_openai_chat(generate_session(24, seed=5).messages)
    second = to_openai_chat(generate_session(24, seed=11).messages)
    out: Lists = []
    for k in range(4, min(len(first), len(second)), 3):
        out += [first[:k], second[:k]]
    return out


_STAMP = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC")


def _same(got: tuple[Any, Any], want: tuple[Any, Any]) -> bool:
    """Whether a call answered as the one window did, but for the minute its recall notes say each passage was
    said: a message read from a provider list is dated when a window first reads it, and the reference ran
    earlier than the writers (a run across a minute's turn differed there alone)."""
    return bool(_STAMP.sub("<when>", json.dumps(got)) == _STAMP.sub("<when>", json.dumps(want)))


def _served(window: Window, lists: Lists) -> list[tuple[Any, Any]]:
    return [((r := window.fit(items)).messages, r.summary) for items in lists]


def _log(url: str) -> list[str]:
    async def load() -> list[str]:
        store = open_store(url)
        try:
            return [str(m.message_id) for m in await store.load_messages(THREAD)]
        finally:
            await store.close()

    return asyncio.run(load())


def _reference(tmp_path: Path, lists: Lists) -> tuple[list[tuple[Any, Any]], list[str]]:
    """What one window serving every call (in this order) answers, and the log its store ends with."""
    url = str(tmp_path / f"one-{uuid.uuid4().hex[:6]}.db")
    with Window(budget=BUDGET, store=url, thread_id=THREAD) as one:
        served = _served(one, lists)
    return served, _log(url)


def _head_is_readable(url: str) -> bool:
    """Whether the committed state loads whole (a head whose view records were replaced loads as nothing)."""

    async def load() -> bool:
        store = open_store(url)
        try:
            return await ThreadStore(store).load(THREAD) is not None
        finally:
            await store.close()

    return asyncio.run(load())


@pytest.mark.parametrize("make_lists", [_growing, _diverging], ids=["one-conversation", "two-conversations"])
def test_two_windows_taking_turns_answer_as_one_window(
    store_url: str, tmp_path: Path, make_lists: Callable[[], Lists], caplog: pytest.LogCaptureFixture
) -> None:
    lists = make_lists()
    expected, expected_log = _reference(tmp_path, lists)
    with (
        Window(budget=BUDGET, store=store_url, thread_id=THREAD) as a,
        Window(budget=BUDGET, store=store_url, thread_id=THREAD) as b,
        caplog.at_level(logging.WARNING, logger="windowkeeper"),
    ):
        served = [((r := (a, b)[n % 2].fit(items)).messages, r.summary) for n, items in enumerate(lists)]
    differing = [n for n, (got, want) in enumerate(zip(served, expected, strict=True)) if not _same(got, want)]
    assert differing == [], f"{len(differing)} of {len(lists)} calls differ from one window's: {differing}"
    assert _log(store_url) == expected_log
    assert _head_is_readable(store_url)
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    # a third window opened afterwards goes on from the last call, whoever served it
    with Window(budget=BUDGET, store=store_url, thread_id=THREAD) as c:
        assert c.continues(lists[-1])
        assert c.fit(lists[-1]).summary == expected[-1][1]


def test_a_window_whose_thread_keeps_moving_says_which_thread_and_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A save that keeps losing (another writer commits before every one of its attempts) ends in `ConflictError`
    naming the thread and the way out, and leaves the other writer's state as it was."""
    from windowkeeper.integrations import window as window_module

    url = str(tmp_path / "busy.db")
    lists = _growing()
    with (
        Window(budget=BUDGET, store=url, thread_id=THREAD) as a,
        Window(budget=BUDGET, store=url, thread_id=THREAD) as b,
    ):
        a.fit(lists[0])
        b.fit(lists[1])
        original = ThreadStore.save
        calls = 0

        async def save_after_another_writer(self: ThreadStore, *args: Any, **kwargs: Any) -> None:
            nonlocal calls
            if self is a._store:
                calls += 1
                await b.afit(lists[1 + calls])  # the other window commits first, every time
            await original(self, *args, **kwargs)

        monkeypatch.setattr(ThreadStore, "save", save_after_another_writer)
        with pytest.raises(ConflictError) as raised:
            a.fit(lists[2])
        monkeypatch.undo()
        message = str(raised.value)
        assert repr(THREAD) in message and "one window" in message
        assert calls == window_module.SAVE_ATTEMPTS
        last = lists[1 + calls]
    with Window(budget=BUDGET, store=url, thread_id=THREAD) as c:
        # the other window's last call is what the thread holds (a shorter list would not go on from it)
        assert c.continues(last) and not c.continues(lists[2])
    assert _head_is_readable(url)


# -- two processes ----------------------------------------------------------------------------------------------


def _worker(url: str, me: int, turn: Any, cond: Any, lists: Lists, out: Any) -> None:
    """Serve every other call of ``lists`` through a window of this process's own, waiting for its turn."""
    served: list[tuple[int, Any, Any]] = []
    warnings: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if record.levelno >= logging.WARNING:
                warnings.append(record.getMessage())

    logging.getLogger("windowkeeper").addHandler(Keep())
    with Window(budget=BUDGET, store=url, thread_id=THREAD) as window:
        for n in range(me, len(lists), 2):
            with cond:
                cond.wait_for(lambda n=n: turn.value == n, timeout=120)
            result = window.fit(lists[n])
            served.append((n, result.messages, result.summary))
            with cond:
                turn.value = n + 1
                cond.notify_all()
    out.put((me, served, warnings))


def _racer(url: str, me: int, start: Any, lists: Lists, out: Any) -> None:
    """Serve every call of ``lists`` at once with the other process (each call twice, by whoever is first)."""
    errors: list[str] = []
    with Window(budget=BUDGET, store=url, thread_id=THREAD) as window:
        start.wait(60)
        for items in lists:
            try:
                window.fit(items)
            except Exception as exc:
                errors.append(f"{type(exc).__name__}: {exc}")
    out.put((me, errors))


def test_two_processes_taking_turns_answer_as_one_window(store_url: str, tmp_path: Path) -> None:
    lists = _growing()
    expected, expected_log = _reference(tmp_path, lists)
    ctx = multiprocessing.get_context("spawn")
    turn, cond, out = ctx.Value("i", 0), ctx.Condition(), ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(store_url, me, turn, cond, lists, out)) for me in (0, 1)]
    for p in procs:
        p.start()
    results = [out.get(timeout=240) for _ in procs]
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    served = {n: (messages, summary) for _, calls, _ in results for n, messages, summary in calls}
    differing = [n for n in range(len(lists)) if not _same(served[n], expected[n])]
    assert differing == [], f"{len(differing)} of {len(lists)} calls differ from one window's: {differing}"
    assert [w for _, _, warnings in results for w in warnings] == []
    assert _log(store_url) == expected_log
    assert _head_is_readable(store_url)


def test_two_processes_racing_on_one_thread_keep_it_whole(store_url: str) -> None:
    lists = _growing()[:16]
    ctx = multiprocessing.get_context("spawn")
    start, out = ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=_racer, args=(store_url, me, start, lists, out)) for me in (0, 1)]
    for p in procs:
        p.start()
    start.set()
    results = [out.get(timeout=240) for _ in procs]
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    assert [e for _, errors in results for e in errors] == []
    items, _ = conversation()
    # every message sent once, in order, and a committed state that loads whole
    assert _log(store_url) == [f"{i}" for i in _log_ids(items[: len(lists[-1])])]
    assert _head_is_readable(store_url)
    with Window(budget=BUDGET, store=store_url, thread_id=THREAD) as c:
        c.fit(lists[-1])


def _log_ids(items: list[dict[str, Any]]) -> list[str]:
    from windowkeeper.integrations._formats import read_messages

    return [str(m.message_id) for m in read_messages("openai_chat", items)]
