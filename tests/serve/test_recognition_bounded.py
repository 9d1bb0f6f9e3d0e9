"""The recognition index across processes and over time, through each route's SDK against the fake upstreams.

A conversation whose system text changes keeps its thread when another gateway process on the same store (or the
same one after a restart) serves the changed call: the thread's entry in the index carries the digest of its items
after the system text. And the index a long-running gateway keeps in the store is bounded: the least recently used
records go past ``max_index_entries`` (counted in ``windowkeeper_index_evictions_total``) while the conversations
still in use keep their threads."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

pytest.importorskip("google.genai")

from windowkeeper.serve.identity import INDEX_NAMESPACE, LEDGER_SESSION
from windowkeeper.storage import open_store

from .probes import ROUTES, RouteSender, gemini_server, metric, route_sender, turns

__all__ = ["gemini_server", "route_sender"]  # fixtures


def _index_records(url: str) -> int:
    """How many recognition index records the SQLite store at ``url`` holds (read after the gateway stopped)."""

    async def count() -> int:
        store = open_store(url)
        try:
            rows = await store.raw_rows()
            return sum(
                1
                for row in rows
                if row.kind == "record" and row.scope[0] == INDEX_NAMESPACE and row.scope[1] != LEDGER_SESSION
            )
        finally:
            await store.close()

    return asyncio.run(count())


@pytest.mark.parametrize("route", ROUTES)
def test_a_changed_system_text_after_a_restart_keeps_the_thread(
    route: str, route_sender: RouteSender, tmp_path: Path
) -> None:
    store = f"sqlite:///{tmp_path / 'kept.sqlite3'}"
    send, sent_system, gw = route_sender(route, store=store)
    history = turns(15)
    first = send("You are terse. Today is day 1.", history).thread
    history = [*history, "reply", "go on"]
    assert send("You are terse. Today is day 1.", history).thread == first
    gw.stop()
    send, sent_system, gw = route_sender(route, store=store)
    history = [*history, "reply", "after the restart"]
    after = send("You are terse. Today is day 2.", history)
    assert after.thread == first
    assert "day 2" in str(sent_system())
    assert after.after is not None and after.after < 2000
    # and it goes on there under the new system text
    assert send("You are terse. Today is day 2.", [*history, "reply", "more"]).thread == first


@pytest.mark.parametrize("route", ["chat", "messages"])
def test_two_processes_on_one_store_keep_a_changed_system_text_on_its_thread(
    route: str, route_sender: RouteSender, tmp_path: Path
) -> None:
    """Two gateways running at once behind one balancer: the changed call lands on the other process."""
    store = f"sqlite:///{tmp_path / 'shared.sqlite3'}"
    send_a, _, _ = route_sender(route, store=store)
    send_b, _, _ = route_sender(route, store=store)
    history = turns(6)
    first = send_a("Memory: nothing yet.", history).thread
    history = [*history, "reply", "next"]
    assert send_b("Memory: the user likes tea.", history).thread == first
    # two conversations that only open alike under two prompts still stay apart across processes
    assert send_b("Another agent entirely.", turns(1)).thread != first


def test_the_index_is_bounded_least_recently_used_first(route_sender: RouteSender, tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'bounded.sqlite3'}"
    send, _, gw = route_sender("messages", store=store, max_index_entries=6, budget=4000)
    kept = ["the conversation in use", "reply"]
    kept_thread = send("sys", [*kept, "q"]).thread
    kept = [*kept, "q", "reply"]
    for n in range(12):
        # a new conversation each time (one head and one opener record each), the first one used in between
        send("sys", [f"conversation {n}", "reply", "question"])
        assert send("sys", [*kept, f"q{n}"]).thread == kept_thread
        kept = [*kept, f"q{n}", "reply"]
    assert metric(gw.url, "windowkeeper_index_entries") == 6
    evicted = metric(gw.url, "windowkeeper_index_evictions_total")
    assert evicted >= 20  # 26 records written, 6 kept
    gw.stop()
    assert _index_records(store) <= 6
    # after the restart the conversation in use is still recognized; an evicted one starts over
    send, _, gw = route_sender("messages", store=store, max_index_entries=6, budget=4000)
    assert send("sys", [*kept, "q again"]).thread == kept_thread


def test_the_bound_holds_across_restarts(route_sender: RouteSender, tmp_path: Path) -> None:
    """Records an earlier process wrote are evicted in their turn by the next one (the ledger a process leaves at
    shutdown), not kept for ever because no process reads them again."""
    store = f"sqlite:///{tmp_path / 'restarts.sqlite3'}"
    for run in range(3):
        send, _, gw = route_sender("messages", store=store, max_index_entries=6, budget=4000)
        for n in range(4):
            send("sys", [f"run {run} conversation {n}", "reply", "question"])
        assert metric(gw.url, "windowkeeper_index_entries") == 6
        gw.stop()
        assert _index_records(store) <= 6, run


def test_the_default_bound_is_in_the_config_and_checked() -> None:
    from windowkeeper.errors import ConfigurationError
    from windowkeeper.serve import ServeConfig

    assert ServeConfig().max_index_entries == 100_000
    with pytest.raises(ConfigurationError, match="max_index_entries"):
        ServeConfig(max_index_entries=0)


def test_the_tail_digest_carried_from_call_to_call_is_the_digest_of_the_whole_tail() -> None:
    """`ItemCache.tail_digest` hashes only what is new when the last list's running hash is carried over; the
    result must be the one a process that never saw the earlier lists computes."""
    from windowkeeper.serve.projection import project

    items = [{"role": "system", "content": "s"}] + [
        {"role": ("user", "assistant")[i % 2], "content": f"m{i}"} for i in range(9)
    ]
    cache = project("openai_chat", items[:5], None)
    cache.tail_digest(1, 5)
    for end in (7, 10):
        cache = project("openai_chat", items[:end], cache)
        fresh = project("openai_chat", items[:end], None)
        assert cache.tail_digest(1, end) == fresh.tail_digest(1, end)
        assert cache.tail_digest(1, 4) == fresh.tail_digest(1, 4)  # a shorter one, from scratch
    assert cache.tail_digest(1, 10) != cache.tail_digest(0, 10)
    edited = project("openai_chat", [*items[:9], {"role": "user", "content": "other"}], cache)
    assert edited.tail_digest(1, 10) != cache.tail_digest(1, 10)


@pytest.mark.parametrize("route", ["chat", "messages"])
def test_after_a_restart_a_branch_off_an_older_system_texts_list_is_a_thread_of_its_own(
    route: str, route_sender: RouteSender, tmp_path: Path
) -> None:
    """The thread went on under a second system text; a list under a third that continues its list as it was
    under the first, then parts from what the thread went on with, is a branch, not the thread's next turn."""
    store = f"sqlite:///{tmp_path / 'branch.sqlite3'}"
    send, _, gw = route_sender(route, store=store)
    history = turns(6)
    first = send("Day 1.", history).thread
    went_on = [*history, "reply", "the conversation went on"]
    assert send("Day 2.", went_on).thread == first
    gw.stop()
    send, _, gw = route_sender(route, store=store)
    branch = [*history, "reply", "an edited question instead"]
    assert send("Day 3.", branch).thread != first
    assert send("Day 3.", [*went_on, "reply", "and on"]).thread == first
