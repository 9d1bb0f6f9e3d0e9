"""Thread identity as clients really behave, on every route through its SDK: a retry of the same body, a
regenerate (the last user message edited), a branch from an earlier point, a conversation sent again after the
gateway restarted on its store, and two conversations that open with the same message. Every request upstream is
under the budget, each lands on the right thread, and the metrics count each call once."""

from __future__ import annotations

import sqlite3
from contextlib import ExitStack
from pathlib import Path

import httpx
import openai
import pytest

pytest.importorskip("google.genai")

from windowkeeper.testing.fake_servers import FakeOpenAIServer

from .conftest import GatewayFactory
from .probes import ROUTES, RouteSender, gemini_server, metric, route_sender, turns

__all__ = ["gemini_server", "route_sender"]  # fixtures

BUDGET = 2000
SYSTEM = "You are terse."


def _log_rows(gw_store: str) -> int:
    """Messages in the threads' logs of a SQLite store (every thread together)."""
    with sqlite3.connect(gw_store.removeprefix("sqlite:///")) as db:
        return int(db.execute("SELECT count(*) FROM wk_messages").fetchone()[0])


@pytest.mark.parametrize("route", ROUTES)
def test_a_retried_body_is_one_turn(route: str, route_sender: RouteSender) -> None:
    send, _, gw = route_sender(route)
    history = turns(15)
    first = send(SYSTEM, history)
    rows = _log_rows(gw.config.store_url)
    again = send(SYSTEM, history)
    assert again.thread == first.thread
    assert (again.before, again.after) == (first.before, first.after)
    assert first.after is not None and first.before is not None and first.after < first.before
    assert _log_rows(gw.config.store_url) == rows  # nothing appended twice
    assert metric(gw.url, "windowkeeper_managed_requests_total") == 2
    assert metric(gw.url, "windowkeeper_threads_in_memory") == 1
    following = send(SYSTEM, [*history, "reply", "and then"])
    assert following.thread == first.thread


@pytest.mark.parametrize("route", ROUTES)
def test_a_regenerate_and_a_branch_each_go_their_own_way(route: str, route_sender: RouteSender) -> None:
    """An edited last user message parts the list there: the edited conversation is a thread of its own (the
    original can still be continued on its own), and so is a branch from an earlier point."""
    send, _, gw = route_sender(route)
    history = turns(15)
    original = send(SYSTEM, history)
    edited = [*history[:-1], history[-1] + " (edited)"]
    regenerated = send(SYSTEM, edited)
    assert regenerated.thread != original.thread
    branch = send(SYSTEM, [*history[:9], "a different question at turn 9"])
    assert branch.thread not in (original.thread, regenerated.thread)
    for sent in (regenerated, branch):
        assert sent.after is not None and sent.after < BUDGET
    edited = [*edited, "reply", "the edited one goes on"]
    history = [*history, "reply", "the original goes on"]
    assert send(SYSTEM, edited).thread == regenerated.thread
    assert send(SYSTEM, history).thread == original.thread
    assert send(SYSTEM, [*history, "reply", "on"]).thread == original.thread
    assert metric(gw.url, "windowkeeper_managed_requests_total") == 6


@pytest.mark.parametrize("route", ROUTES)
def test_a_conversation_sent_after_a_restart_continues_its_thread(
    route: str, route_sender: RouteSender, tmp_path: Path
) -> None:
    store = f"sqlite:///{tmp_path / 'kept.sqlite3'}"
    send, sent_system, gw = route_sender(route, store=store)
    history = turns(15)
    before = send(SYSTEM, history)
    history = [*history, "reply", "go on"]
    send(SYSTEM, history)
    summary = str(sent_system())
    gw.stop()
    send, sent_system, gw = route_sender(route, store=store)
    history = [*history, "reply", "after the restart"]
    after = send(SYSTEM, history)
    assert after.thread == before.thread
    assert after.after is not None and after.after < BUDGET
    assert str(sent_system()) == summary  # the same summary: the prompt's prefix holds across the restart
    assert metric(gw.url, "windowkeeper_managed_requests_total") == 1


@pytest.mark.parametrize("route", ROUTES)
def test_two_conversations_with_the_same_opening_part_at_their_first_difference(
    route: str, route_sender: RouteSender
) -> None:
    """The same first message twice is the same list: both calls are placed on one thread (there is nothing to
    tell them apart, and nothing differs to keep apart). From the first different item on, each has its own."""
    send, _, _ = route_sender(route)
    opening = ["hello, can you help me?"]
    a0, b0 = send(SYSTEM, opening), send(SYSTEM, opening)
    assert a0.thread == b0.thread
    a, b = [*opening, "sure", "fix my printer"], [*opening, "sure", "plan my trip"]
    a1, b1 = send(SYSTEM, a), send(SYSTEM, b)
    assert a1.thread == a0.thread and b1.thread != a1.thread
    for turn in range(2):
        a, b = [*a, "ok", f"a {turn}"], [*b, "ok", f"b {turn}"]
        assert send(SYSTEM, a).thread == a1.thread
        assert send(SYSTEM, b).thread == b1.thread


def test_a_responses_call_on_a_stored_response_is_relayed_and_touches_no_thread(
    make_gateway: GatewayFactory, openai_server: FakeOpenAIServer, closing: ExitStack
) -> None:
    """``previous_response_id``: the provider holds the conversation (as the gateway last sent it), the request
    only the new input. It goes up as the client's bytes with no thread, and the thread of the conversation the
    client sent in full goes on as before."""
    gw = make_gateway(budget=BUDGET)
    client = closing.enter_context(openai.OpenAI(base_url=gw.url + "/v1", api_key="sk-prev", max_retries=0))
    items = [{"role": ("user", "assistant")[i % 2], "content": t} for i, t in enumerate(turns(15))]
    full = client.responses.with_raw_response.create(model="m", input=items)
    thread = full.headers["x-windowkeeper-thread"]
    first = full.parse()
    stored = client.responses.with_raw_response.create(
        model="m", previous_response_id=first.id, input=[{"role": "user", "content": "and now?"}]
    )
    assert "x-windowkeeper-thread" not in stored.headers
    assert openai_server.last_request.json == {
        "model": "m",
        "previous_response_id": first.id,
        "input": [{"role": "user", "content": "and now?"}],
    }
    items = [*items, {"role": "assistant", "content": "ok"}, {"role": "user", "content": "go on"}]
    again = client.responses.with_raw_response.create(model="m", input=items)
    assert again.headers["x-windowkeeper-thread"] == thread
    assert metric(gw.url, "windowkeeper_managed_requests_total") == 2
    assert metric(gw.url, "windowkeeper_requests_total") == 3
    assert httpx.get(gw.url + "/healthz").status_code == 200


@pytest.mark.parametrize("route", ["chat", "messages"])
def test_a_dropped_last_message_then_another_is_one_new_thread(route: str, route_sender: RouteSender) -> None:
    """The client drops its last user message and sends the list without it, then with another in its place: both
    calls are one branch (a thread of its own), each under the budget, and the original thread is left as it was."""
    send, _, gw = route_sender(route)
    history = turns(15)
    original = send(SYSTEM, history)
    dropped = send(SYSTEM, history[:-1])
    assert dropped.thread != original.thread
    replaced = send(SYSTEM, [*history[:-1], "another question instead"])
    assert replaced.thread == dropped.thread
    for sent in (original, dropped, replaced):
        assert sent.after is not None and sent.after < BUDGET
    assert send(SYSTEM, [*history, "reply", "on"]).thread == original.thread
    assert metric(gw.url, "windowkeeper_managed_requests_total") == 4
