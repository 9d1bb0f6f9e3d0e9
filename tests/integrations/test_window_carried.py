"""`Window.fit` carries its per-call passes over the view (the view's pointers, their rewrites for a request
without the recall tool, the prompt's recall notes) from one call to the next: a call whose view only grew at the
end looks at the new part alone. These tests compare every call's carried answers with the full passes, over
growth, cuts, pointers, recall notes and a system prompt that changes, and check a growing call's pointer pass
reads only its new messages."""

from __future__ import annotations

from typing import Any

import pytest

from windowkeeper import Window
from windowkeeper.context.budget import TokenBudgetContextManager
from windowkeeper.context.pointers import offloaded
from windowkeeper.integrations import window as window_module
from windowkeeper.integrations._formats import section_message
from windowkeeper.integrations._recall import without_restore_tool
from windowkeeper.integrations.window import joined_recall
from windowkeeper.llm.formats import to_openai_chat
from windowkeeper.prompt.recall import is_recall
from windowkeeper.state import AgentState
from windowkeeper.testing.sessiongen import generate_session

from .window_probes import recording_trims, thread_memory

RECALLED_FACT = "Remember: the staging database lives on host db-staging-7 at port 6543."


def _check_carried(window: Window[Any, Any], result: Any, contexts: list[Any], system: str) -> None:
    memory = thread_memory(window)
    head_id = section_message(system).message_id
    full_view = [m for m in contexts[-1].context if m.message_id != head_id]
    assert len(memory.view) == len(full_view)
    assert all(a is b for a, b in zip(memory.view, full_view, strict=True))
    full_pointers = offloaded(memory.view)
    assert len(memory.pointers) == len(full_pointers)
    assert all(a is b for a, b in zip(memory.pointers, full_pointers, strict=True))
    if memory.rewrite_from:
        again = without_restore_tool(memory.rewrite_from, dict(memory.rewritten))
        assert len(again) == len(memory.rewrite_sent)
        assert all(a is b for a, b in zip(again, memory.rewrite_sent, strict=True))
    messages = result.prompt.messages
    assert result._joined == joined_recall("openai_chat", messages, result.prompt.counter)
    if memory.notes_from:
        assert memory.notes_at == [i for i, m in enumerate(memory.notes_from) if is_recall(m)]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_carried_passes_match_the_full_passes_over_growth_cuts_and_system_changes(seed: int) -> None:
    items = to_openai_chat(generate_session(60, seed=seed).messages[1:], passthrough=False)
    manager: TokenBudgetContextManager[AgentState] = TokenBudgetContextManager(max_tokens=6000, reserve_tokens=1000)
    window: Window[Any, Any] = Window(manager)
    contexts = recording_trims(manager)
    pointers_seen = 0
    for k in range(1, len(items) + 1):
        system = "You are helpful." if (k // 25) % 2 == 0 else "You are careful."
        result = window.fit(items[:k], system=system)
        _check_carried(window, result, contexts, system)
        pointers_seen = max(pointers_seen, len(thread_memory(window).pointers))
    assert pointers_seen > 0  # the budget cut tool outputs to pointers: the rewrite carry was exercised


def test_carried_recall_notes_give_the_joined_count_of_the_full_pass() -> None:
    manager: TokenBudgetContextManager[AgentState] = TokenBudgetContextManager(max_tokens=2500, reserve_tokens=500)
    window: Window[Any, Any] = Window(manager)
    contexts = recording_trims(manager)
    items: list[dict[str, Any]] = []
    notes = 0
    for turn in range(120):
        text = RECALLED_FACT if turn == 0 else f"Turn {turn}: let us talk about topic {turn} and its many details."
        items.append({"role": "user", "content": text})
        result = window.fit(items, system="You are helpful.")
        _check_carried(window, result, contexts, "You are helpful.")
        items.append({"role": "assistant", "content": f"Answer {turn}: noted, topic {turn} is clear."})
    items.append({"role": "user", "content": "Which host and port does staging use?"})
    result = window.fit(items, system="You are helpful.")
    _check_carried(window, result, contexts, "You are helpful.")
    notes = sum(is_recall(m) for m in result.prompt.messages)
    assert notes >= 1


def test_a_call_whose_view_only_grew_looks_for_pointers_in_its_new_messages_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    items = to_openai_chat(generate_session(40, seed=5).messages[1:], passthrough=False)
    manager: TokenBudgetContextManager[AgentState] = TokenBudgetContextManager(
        max_tokens=200_000, reserve_tokens=1000, recall=False
    )
    window: Window[Any, Any] = Window(manager)
    window.fit(items[:-3])
    seen: list[int] = []

    def counted(messages: Any) -> list[Any]:
        seen.append(len(messages))
        return offloaded(messages)

    monkeypatch.setattr(window_module, "offloaded", counted)
    window.fit(items)
    assert seen and max(seen) <= 3, seen  # the view holds every item; only the three new were looked at
