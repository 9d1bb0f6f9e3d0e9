"""A conversation whose system text changes between calls (an agent that puts the date, its working directory or
a memory block in its system prompt) is still one conversation: it stays on its thread, whose summary and view
carry on, on every route and through each provider's SDK. Two conversations that open with the same message under
different system prompts stay apart."""

from __future__ import annotations

import logging

import pytest

pytest.importorskip("google.genai")

from .probes import ROUTES, RouteSender, gemini_server, metric, route_sender
from .probes import turns as _turns

__all__ = ["gemini_server", "route_sender"]  # fixtures

BUDGET = 2000


@pytest.mark.parametrize("route", ROUTES)
def test_a_system_text_that_changes_every_call_keeps_the_thread(
    route: str,
    route_sender: RouteSender,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="windowkeeper")
    send, sent_system, gw = route_sender(route)
    url = gw.url
    turns = _turns(15)
    names = set()
    for call in range(4):
        system = f"You are terse. Today is day {call} of the project."
        sent = send(system, turns)
        names.add(sent.thread)
        assert sent.after is not None and sent.after < BUDGET
        assert f"day {call} of" in str(sent_system())  # the client's system text of this call goes up
        turns = [*turns, f"reply {call}", f"question {call} " + "more words " * 30]
    assert len(names) == 1, names
    # the thread's window carried on (its summary kept), not started over from the whole list
    assert not [r for r in caplog.records if "starting the thread over" in r.getMessage()]
    assert metric(url, "windowkeeper_threads_in_memory") == 1
    assert metric(url, "windowkeeper_managed_requests_total") == 4


@pytest.mark.parametrize("route", ["chat", "messages"])
def test_the_same_opening_under_two_system_prompts_is_two_conversations(route: str, route_sender: RouteSender) -> None:
    send, _, _ = route_sender(route)
    opening = _turns(1)
    first_a = send("You are agent A.", opening).thread
    first_b = send("You are agent B.", opening).thread
    assert first_a != first_b
    a = [*opening, "reply", "a goes on"]
    b = [*opening, "reply", "b goes on"]
    for _ in range(2):
        assert send("You are agent A.", a).thread == first_a
        assert send("You are agent B.", b).thread == first_b
        a, b = [*a, "reply", "a again"], [*b, "reply", "b again"]


@pytest.mark.parametrize("route", ["chat", "responses"])
def test_two_conversations_alike_but_for_their_system_prompts_part_once_and_stay_apart(
    route: str,
    route_sender: RouteSender,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """B opens with A's whole list under another system prompt, so B is taken for A under a new system text and
    continues A's thread. When A goes on, the two part: A gets a thread of its own, and from then on each keeps
    its thread, neither starting the other's window over call after call."""
    caplog.set_level(logging.INFO, logger="windowkeeper")
    send, _, _ = route_sender(route)
    shared = _turns(15)
    first = send("Prompt variant A.", shared).thread
    assert send("Prompt variant B.", [*shared, "reply", "b goes on"]).thread == first
    a, b = [*shared, "reply", "a goes on"], [*shared, "reply", "b goes on", "reply", "b again"]
    a_thread = send("Prompt variant A.", a).thread
    assert a_thread != first
    caplog.clear()
    for turn in range(3):
        a, b = [*a, "reply", f"a {turn}"], [*b, "reply", f"b {turn}"]
        assert send("Prompt variant A.", a).thread == a_thread
        assert send("Prompt variant B.", b).thread == first
    assert not [r for r in caplog.records if "starting the thread over" in r.getMessage()]
