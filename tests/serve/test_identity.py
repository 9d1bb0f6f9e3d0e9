"""Which thread a request lands on: explicit header, recognition by content, scoping by credential."""

from __future__ import annotations

from typing import Any

import httpx

from windowkeeper.serve.identity import internal_id, scope_of
from windowkeeper.serve.projection import PLAIN

from .harness import Gateway

SYSTEM = {"role": "system", "content": "You are a helpful assistant."}


def chat(gw: Gateway, messages: list[dict[str, Any]], key: str = "sk-1", **headers: str) -> str:
    response = httpx.post(
        gw.url + "/v1/chat/completions",
        json={"model": "m", "messages": messages},
        headers={"authorization": f"Bearer {key}", **headers},
    )
    assert response.status_code == 200, response.text
    return response.headers["x-windowkeeper-thread"]


def messages_call(gw: Gateway, messages: list[dict[str, Any]], system: Any = "S", **extra: Any) -> str:
    body = {"model": "c", "max_tokens": 10, "system": system, "messages": messages, **extra}
    response = httpx.post(gw.url + "/v1/messages", json=body, headers={"x-api-key": "sk-a"})
    assert response.status_code == 200, response.text
    return response.headers["x-windowkeeper-thread"]


def test_a_continued_list_keeps_its_thread_and_another_conversation_with_the_same_system_prompt_does_not(
    gateway: Gateway,
) -> None:
    a1 = [SYSTEM, {"role": "user", "content": "plan a trip to Lisbon"}]
    b1 = [SYSTEM, {"role": "user", "content": "fix my bicycle"}]
    ta = chat(gateway, a1)
    tb = chat(gateway, b1)
    assert ta != tb
    a2 = [*a1, {"role": "assistant", "content": "ok"}, {"role": "user", "content": "in May"}]
    b2 = [*b1, {"role": "assistant", "content": "ok"}, {"role": "user", "content": "the chain"}]
    assert chat(gateway, a2) == ta
    assert chat(gateway, b2) == tb
    assert chat(gateway, [*a2, {"role": "assistant", "content": "done"}, {"role": "user", "content": "thanks"}]) == ta


def test_the_same_opening_twice_then_diverging_makes_two_threads(gateway: Gateway) -> None:
    opening = [SYSTEM, {"role": "user", "content": "write a haiku"}]
    first = chat(gateway, opening)
    one = [*opening, {"role": "assistant", "content": "old pond"}, {"role": "user", "content": "another"}]
    assert chat(gateway, one) == first
    # a second run of the same task: its list is shorter than the thread's, so it is not a continuation
    second = chat(gateway, opening)
    assert second != first
    two = [*opening, {"role": "assistant", "content": "autumn moon"}, {"role": "user", "content": "shorter"}]
    assert chat(gateway, two) == second
    assert chat(gateway, [*one, {"role": "assistant", "content": "x"}, {"role": "user", "content": "y"}]) == first


def test_an_edited_list_starts_a_new_thread(gateway: Gateway) -> None:
    base = [SYSTEM, {"role": "user", "content": "count to three"}, {"role": "assistant", "content": "1 2 3"}]
    thread = chat(gateway, [*base, {"role": "user", "content": "again"}])
    edited = [SYSTEM, {"role": "user", "content": "count to three"}, {"role": "assistant", "content": "one two"}]
    assert chat(gateway, [*edited, {"role": "user", "content": "again"}]) != thread


def test_moved_cache_marks_and_string_vs_block_do_not_break_recognition(gateway: Gateway) -> None:
    mark = {"type": "ephemeral"}
    m1 = [{"role": "user", "content": [{"type": "text", "text": "hello", "cache_control": mark}]}]
    thread = messages_call(gateway, m1, system=[{"type": "text", "text": "S", "cache_control": mark}])
    m2 = [
        {"role": "user", "content": "hello"},
        {"role": "assistant", "content": [{"type": "text", "text": "hi"}]},
        {"role": "user", "content": [{"type": "text", "text": "news?", "cache_control": mark}]},
    ]
    assert messages_call(gateway, m2, system="S") == thread


def test_the_thread_header_names_the_thread_within_the_clients_credential(gateway: Gateway) -> None:
    messages = [SYSTEM, {"role": "user", "content": "hi"}]
    assert chat(gateway, messages, "sk-1", **{"X-Windowkeeper-Thread": "job-42"}) == "job-42"
    assert (
        chat(gateway, [SYSTEM, {"role": "user", "content": "other"}], "sk-2", **{"X-Windowkeeper-Thread": "job-42"})
        == "job-42"
    )
    one = gateway.gateway.threads.local(internal_id(scope_of({"authorization": "Bearer sk-1"}), "job-42"))
    two = gateway.gateway.threads.local(internal_id(scope_of({"authorization": "Bearer sk-2"}), "job-42"))
    assert one is not None and two is not None and one is not two
    assert one.items is not None and one.items.plains == [PLAIN["openai_chat"](m) for m in messages]
    # a client that copies another's recognized name gets its own empty thread, never the other's state
    name = chat(gateway, [SYSTEM, {"role": "user", "content": "secret plan"}], "sk-1")
    chat(gateway, [SYSTEM, {"role": "user", "content": "mine"}], "sk-3", **{"X-Windowkeeper-Thread": name})
    theirs = gateway.gateway.threads.local(internal_id(scope_of({"authorization": "Bearer sk-3"}), name))
    assert theirs is not None and theirs.items is not None and theirs.items.plains[1]["content"] == "mine"


def test_a_session_id_narrows_recognition(gateway: Gateway) -> None:
    messages = [{"role": "user", "content": "same task"}]
    one = messages_call(gateway, messages, metadata={"user_id": "user_1_session_aaa"})
    two = messages_call(gateway, messages, metadata={"user_id": "user_1_session_bbb"})
    assert one != two
    longer = [*messages, {"role": "assistant", "content": "ok"}, {"role": "user", "content": "go"}]
    assert messages_call(gateway, longer, metadata={"user_id": "user_1_session_bbb"}) == two


def test_a_bad_thread_header_is_refused_in_the_providers_shape(gateway: Gateway) -> None:
    response = httpx.post(
        gateway.url + "/v1/chat/completions",
        json={"model": "m", "messages": [{"role": "user", "content": "x"}]},
        headers={"X-Windowkeeper-Thread": "x" * 300},
    )
    assert response.status_code == 400
    assert "x-windowkeeper-thread must be 1-200 printable characters" in response.json()["error"]["message"]
