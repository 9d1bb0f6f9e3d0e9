"""The store a long-running gateway keeps is bounded: a thread's data goes with the last index record leading to it.

Through the Anthropic SDK against the fake upstream, over real sockets. When the recognizer evicts the last head
record that lists a thread (its links), the thread can no longer be recognized, and its stored data (message log,
committed window state, view records, originals, links) is deleted, counted in
``windowkeeper_threads_deleted_total``; a thread still in use in the process keeps its data; a client that pins a
deleted thread with ``X-Windowkeeper-Thread`` starts it anew. ``windowkeeper store prune`` deletes what a gateway
left before it deleted anything.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

import anthropic
import pytest
from typer.testing import CliRunner

from windowkeeper.cli.app import app
from windowkeeper.serve.identity import INDEX_NAMESPACE, LINK_NAMESPACE, is_head_key
from windowkeeper.serve.threads import THREAD_NAMESPACES
from windowkeeper.storage import open_store

from .probes import RouteSender, Sent, gemini_server, metric, route_sender

__all__ = ["gemini_server", "route_sender"]  # fixtures


def _stored_threads(url: str) -> set[str]:
    """The gateway threads (store ids) the SQLite store at ``url`` holds any data of (read with the gateway
    stopped): a message log, or a record of any per-thread namespace."""

    async def read() -> set[str]:
        store = open_store(url)
        try:
            found: set[str] = set()
            for row in await store.raw_rows():
                if row.kind in ("message", "state"):
                    found.add(row.scope[0])
                elif row.kind == "record" and row.scope[0] in THREAD_NAMESPACES:
                    found.add(row.scope[1])
            return {thread for thread in found if thread.startswith("wk-")}
        finally:
            await store.close()

    return asyncio.run(read())


def _of(threads: set[str], name: str | None) -> bool:
    return any(thread.endswith(f"-{name}") for thread in threads)


def test_a_long_running_gateway_keeps_the_data_of_a_bounded_number_of_threads(
    route_sender: RouteSender, tmp_path: Path
) -> None:
    """Bound 6, 20 new conversations and one in use between them: the store's thread count stays at most what the
    index can lead to, and the conversation in use keeps its data (and its window) across a restart."""
    store = f"sqlite:///{tmp_path / 'bounded.sqlite3'}"
    send, _, gw = route_sender("messages", store=store, max_index_entries=6, max_threads=2, budget=4000)
    kept = ["the conversation in use", "reply"]
    kept_thread = send("sys", [*kept, "q"]).thread
    kept = [*kept, "q", "reply"]
    others = []
    for n in range(20):
        others.append(send("sys", [f"conversation {n}", "reply", "question"]).thread)
        assert send("sys", [*kept, f"q{n}"]).thread == kept_thread
        kept = [*kept, f"q{n}", "reply"]
    deleted = metric(gw.url, "windowkeeper_threads_deleted_total")
    assert deleted >= 15, deleted
    gw.stop()
    threads = _stored_threads(store)
    assert len(threads) <= 6, sorted(threads)  # each needs a head record of the 6 the index keeps
    assert _of(threads, kept_thread)
    assert not any(_of(threads, name) for name in others[:15])
    send, _, gw = route_sender("messages", store=store, max_index_entries=6, max_threads=2, budget=4000)
    again = send("sys", [*kept, "after the restart"])
    assert again.thread == kept_thread


def test_a_thread_in_use_here_keeps_its_data_though_its_index_records_went(
    route_sender: RouteSender, tmp_path: Path
) -> None:
    """A thread whose window this process keeps is in use: its index records may go (the bound is small), but
    its client goes on with it (this process's hints place it) and it is listed again; the orphans whose windows
    were kept are deleted when the process stops."""
    store = f"sqlite:///{tmp_path / 'in_use.sqlite3'}"
    send, _, gw = route_sender("messages", store=store, max_index_entries=4, budget=4000)
    history = ["a conversation that pauses", "reply", "q"]
    first = send("sys", history).thread
    for n in range(6):
        send("sys", [f"conversation {n}", "reply", "question"])
    assert metric(gw.url, "windowkeeper_threads_deleted_total") == 0  # all still in memory here
    history = [*history, "reply", "and it goes on"]
    assert send("sys", history).thread == first
    gw.stop()
    threads = _stored_threads(store)
    assert _of(threads, first)
    assert len(threads) <= 3, sorted(threads)  # the others were deleted at shutdown


def test_a_pinned_thread_whose_data_was_deleted_starts_anew(
    route_sender: RouteSender, tmp_path: Path, closing: ExitStack
) -> None:
    store = f"sqlite:///{tmp_path / 'pinned.sqlite3'}"
    send, _, gw = route_sender("messages", store=store, max_index_entries=4, max_threads=1, budget=4000)
    client = closing.enter_context(anthropic.Anthropic(base_url=gw.url, api_key="sk-probe", max_retries=0))

    def pinned(name: str, turns: list[str]) -> Sent:
        items = [{"role": ("user", "assistant")[i % 2], "content": t} for i, t in enumerate(turns)]
        raw = client.messages.with_raw_response.create(
            model="c", max_tokens=5, system="sys", messages=items, extra_headers={"x-windowkeeper-thread": name}
        )
        tokens = raw.headers.get("x-windowkeeper-tokens-before")
        return Sent(raw.headers.get("x-windowkeeper-thread"), int(tokens) if tokens else None, None)

    history = ["a conversation its client will pin", "reply", "q"]
    name = send("sys", history).thread
    assert name is not None
    for n in range(6):
        send("sys", [f"conversation {n}", "reply", "question"])
    assert metric(gw.url, "windowkeeper_threads_deleted_total") >= 1
    history = [*history, "reply", "pinned now"]
    fresh = pinned(name, history)
    assert fresh.thread == name  # served, on the name it asked for, as a new conversation
    assert pinned(name, [*history, "reply", "and on"]).thread == name
    gw.stop()
    assert _of(_stored_threads(store), name)


def _drop_index_heads_and_links(url: str, keep: Callable[[str], bool]) -> None:
    """What a gateway without thread deletion left: head records evicted, the threads' data still there."""

    async def run() -> None:
        store = open_store(url)
        try:
            for row in await store.raw_rows():
                if row.kind != "record":
                    continue
                namespace, session = row.scope
                if namespace == INDEX_NAMESPACE and is_head_key(session, row.key):
                    threads = json.loads(row.body)["threads"]  # type: ignore[arg-type]
                    if not any(keep(name) for name in threads):
                        await store.delete_record(namespace, session, row.key)
                elif namespace == LINK_NAMESPACE:
                    await store.delete_record(namespace, session, row.key)
        finally:
            await store.close()

    asyncio.run(run())


def test_store_prune_deletes_what_a_gateway_left_before(route_sender: RouteSender, tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'grown.sqlite3'}"
    send, _, gw = route_sender("messages", store=store, budget=4000)
    names = [send("sys", [f"conversation {n}", "reply", "question"]).thread for n in range(5)]
    gw.stop()
    kept = set(names[:2])
    _drop_index_heads_and_links(store, lambda name: name in kept)
    assert len(_stored_threads(store)) == 5

    listed = CliRunner().invoke(app, ["store", "prune", store, "--json"])
    assert listed.exit_code == 1
    doc = json.loads(listed.stdout)
    assert sorted(t["name"] for t in doc["threads"]) == sorted(names[2:])
    assert all(t["bytes"] > 0 and t["rows"] > 0 for t in doc["threads"])
    assert len(_stored_threads(store)) == 5  # a dry run deletes nothing

    removed = CliRunner().invoke(app, ["store", "prune", store, "--remove"])
    assert removed.exit_code == 0, removed.output
    threads = _stored_threads(store)
    assert len(threads) == 2 and all(_of(threads, name) for name in kept)

    send, _, gw = route_sender("messages", store=store, budget=4000)
    for n in range(2):
        assert send("sys", [f"conversation {n}", "reply", "question", "reply", "more"]).thread == names[n]


@pytest.mark.parametrize("max_threads", [1])
def test_the_deleted_counter_is_on_metrics(route_sender: RouteSender, max_threads: int) -> None:
    send, _, gw = route_sender("messages", max_index_entries=2, max_threads=max_threads, budget=4000)
    assert metric(gw.url, "windowkeeper_threads_deleted_total") == 0
    for n in range(3):
        send("sys", [f"conversation {n}", "reply", "question"])
    assert metric(gw.url, "windowkeeper_threads_deleted_total") >= 1


def test_a_call_whose_head_record_was_evicted_under_it_records_its_thread_again() -> None:
    """A call read its head record, and another call's eviction deleted that record before this call wrote it:
    the write re-reads the record and adds it again (it raised `RecordNotFoundError` into the call before), and
    the thread is linked to the head again."""
    from windowkeeper.serve.identity import Recognizer, internal_id
    from windowkeeper.serve.projection import project
    from windowkeeper.storage import InMemoryStore

    async def run() -> None:
        store = InMemoryStore()
        recognizer = Recognizer(store, 100)
        items = project("anthropic", [{"role": "user", "content": "hello"}], None)
        match = Recognizer.choose(await recognizer.candidates("s.-", "h1"), items)
        await recognizer.remember(match, items)
        later = await recognizer.candidates("s.-", "h1")
        Recognizer.choose(later, items)
        assert later.name == match.name and later.version == 1
        await store.delete_record(INDEX_NAMESPACE, "s.-", "h1")
        await store.delete_session(LINK_NAMESPACE, internal_id("s", match.name))
        recognizer._linked.drop()
        await recognizer.remember(later, items)
        record = await store.get_record(INDEX_NAMESPACE, "s.-", "h1")
        assert record is not None and match.name in record.doc["threads"]
        assert await recognizer.linked(internal_id("s", match.name))

    asyncio.run(run())


def test_a_thread_trimmed_out_of_its_last_head_is_orphaned() -> None:
    """A head lists at most `MAX_THREADS_PER_HEAD` threads; one trimmed out of its only head leads nowhere."""
    from windowkeeper.serve.identity import MAX_THREADS_PER_HEAD, Recognizer
    from windowkeeper.serve.projection import project
    from windowkeeper.storage import InMemoryStore

    orphaned: list[str] = []

    async def note(thread: str, name: str) -> None:
        orphaned.append(name)

    async def run() -> list[str]:
        store = InMemoryStore()
        recognizer = Recognizer(store, 1000, note)
        names = []
        for n in range(MAX_THREADS_PER_HEAD + 2):
            items = project(
                "anthropic",
                [{"role": "user", "content": "same opening"}, {"role": "assistant", "content": str(n)}],
                None,
            )
            match = await recognizer.candidates("s.-", "h1")
            match.name, match.how = Recognizer.new_name(), "new"
            await recognizer.remember(match, items)
            names.append(match.name)
        return names

    names = asyncio.run(run())
    assert orphaned == names[:2]


def test_a_thread_deleted_while_its_call_runs_is_managed_anew_not_failed() -> None:
    """Another process deleted the thread's data after this call read its version: the commit finds no state to
    update, and the call is redone on what the store holds (nothing: the thread starts anew) instead of raising."""
    from windowkeeper.serve import ServeConfig
    from windowkeeper.serve.projection import project
    from windowkeeper.serve.threads import Threads, delete_thread_data
    from windowkeeper.storage import InMemoryStore

    async def run() -> None:
        threads = Threads(ServeConfig(budget=4000), InMemoryStore())
        try:
            items = [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}]
            await threads.fit("wk-s-t1", "anthropic", project("anthropic", items, None).plains, None, None)
            stale = await threads.store.version("wk-s-t1")
            assert stale > 0
            await delete_thread_data(threads.store.inner, "wk-s-t1")
            read = threads.store.version
            calls = 0

            async def version_read_before_the_delete(thread_id: str) -> int:
                nonlocal calls
                calls += 1
                return stale if calls == 1 else await read(thread_id)

            threads.store.version = version_read_before_the_delete  # type: ignore[method-assign]
            more = [*items, {"role": "user", "content": "and on"}]
            _, result = await threads.fit("wk-s-t1", "anthropic", project("anthropic", more, None).plains, None, None)
            assert len(result.messages) == 3
            assert threads.conflicts == 1
            assert await threads.store.count_messages("wk-s-t1") == 3
        finally:
            await threads.close()

    asyncio.run(run())


def test_thread_data_stays_bounded_across_restarts(route_sender: RouteSender, tmp_path: Path) -> None:
    """The records an earlier process left in the ledger are evicted by the next one in their turn, and the data
    of the threads they led to goes with them; the orphans a process kept in memory go at its shutdown."""
    store = f"sqlite:///{tmp_path / 'restarts.sqlite3'}"
    for run in range(3):
        send, _, gw = route_sender("messages", store=store, max_index_entries=6, budget=4000)
        for n in range(4):
            send("sys", [f"run {run} conversation {n}", "reply", "question"])
        gw.stop()
        threads = _stored_threads(store)
        assert len(threads) <= 3, (run, sorted(threads))  # a head and an opener record per conversation


def test_a_thread_another_process_serves_keeps_its_data(route_sender: RouteSender, tmp_path: Path) -> None:
    """Two gateways on one store: the one that opened a conversation evicts its records in its own order, but the
    conversation went on in the other process (its records were written since), so they stay, and so does its
    data; the first process's own new conversations go."""
    store = f"sqlite:///{tmp_path / 'two.sqlite3'}"
    send_a, _, gw_a = route_sender("messages", store=store, max_index_entries=6, max_threads=2, budget=4000)
    send_b, _, gw_b = route_sender("messages", store=store, max_index_entries=6, max_threads=2, budget=4000)
    history = ["a conversation that moves to the other process", "reply", "q"]
    kept = send_a("sys", history).thread
    history = [*history, "reply", "on the other process"]
    assert send_b("sys", history).thread == kept
    for n in range(12):
        send_a("sys", [f"conversation {n}", "reply", "question"])
    assert metric(gw_a.url, "windowkeeper_threads_deleted_total") >= 8
    history = [*history, "reply", "still there"]
    assert send_b("sys", history).thread == kept
    gw_a.stop()
    gw_b.stop()
    assert _of(_stored_threads(store), kept)


def test_the_prune_cost_bench_runs(capsys: pytest.CaptureFixture[str]) -> None:
    """bench/gateway_prune_cost.py at a tiny size: the bounded gateway stores fewer threads than the unbounded."""
    import importlib
    import sys

    bench = Path(__file__).resolve().parents[2] / "bench"
    sys.path.insert(0, str(bench))
    try:
        module = importlib.import_module("gateway_prune_cost")
    finally:
        sys.path.remove(str(bench))
    assert module.main(["--conversations", "12", "--bound", "6", "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    stored = {
        line.split(":")[0].split()[-1]: int(line.split("threads stored ")[1].split(",")[0]) for line in out.splitlines()
    }
    assert stored["unbounded"] == 13 and stored["bounded"] < 13, out
