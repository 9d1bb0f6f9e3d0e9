"""`Window.fit` carries what it works out over the whole prompt from one call to the next (`PromptCarry`): the
assembled prompt, the system lead and its anchors, the recall notes' positions, and which of the written items the
writer's memo may take without comparing the view again. A call whose view only grew looks at the new messages
alone. These tests compare every call's carried answers with the full passes over growth, cuts, pointers (with
and without the recall tool declared), recall notes, the caller's own system and developer messages (leading and
said mid-conversation) and a system prompt that changes; and check that a growing call splits no whole view."""

from __future__ import annotations

from typing import Any

import pytest

from windowkeeper import Window
from windowkeeper.context.budget import TokenBudgetContextManager
from windowkeeper.context.pointers import RESTORE_TOOL
from windowkeeper.integrations import window as window_module
from windowkeeper.integrations._formats import lead_anchors, section_message, system_lead, write_messages
from windowkeeper.llm.formats import _source, to_openai_chat
from windowkeeper.prompt import assemble
from windowkeeper.prompt.recall import is_recall
from windowkeeper.state import AgentState
from windowkeeper.testing.sessiongen import generate_session

from .window_probes import recording_trims, thread_memory

RECALL_TOOL = {
    "type": "function",
    "function": {"name": RESTORE_TOOL, "description": "restore", "parameters": {"type": "object", "properties": {}}},
}


def _same(a: Any, b: Any) -> bool:
    if a is b:
        return True
    return a is not None and b is not None and len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=True))


def _check(window: Window[Any, Any], result: Any, states: list[Any], system: str | None, tools: Any) -> None:
    memory = thread_memory(window)
    carry = memory.carry
    assert carry is not None
    state = states[-1]
    # the context as sent: the manager's, with its pointers rewritten when the request has no recall tool
    sent = memory.rewrite_sent if memory.rewrite_from else list(state.context)
    if memory.rewrite_from:
        assert _same(memory.rewrite_from, state.context)
    full = assemble(
        AgentState(context=sent, context_summary=state.context_summary, scratchpad=state.scratchpad),
        tools=[dict(t) for t in tools] if tools else None,
        counter=window.manager.counter if window.manager is not None else None,
    )
    prompt = result.prompt
    assert _same(prompt.messages, full.messages)
    assert _same(carry.messages, full.messages)
    assert (prompt.system, prompt.system_parts, prompt.summary, prompt.scratchpad, prompt.tools) == (
        full.system,
        full.system_parts,
        full.summary,
        full.scratchpad,
        full.tools,
    )
    assert prompt.input_tokens == full.input_tokens
    head_ids = {section_message(system).message_id} if system else set()
    lead = system_lead(
        sent,
        full.system,
        summary=full.summary,
        scratchpad=full.scratchpad,
        made=head_ids,
        developer=memory.developer,
    )
    assert (lead is None) == (carry.lead is None)
    if lead is not None:
        assert carry.lead == lead
        pairs = zip(carry.lead, lead, strict=True)
        assert all(a is b for a, b in pairs if a.metadata.get("openai_role") != "developer")
    anchors = lead_anchors(sent, carry.lead)
    assert (anchors is None) == (carry.anchors is None)
    if anchors is not None:
        assert anchors.keys() == carry.anchors.keys()
        assert all(anchors[k] is carry.anchors[k] for k in anchors)
    assert carry.notes_at == [i for i, m in enumerate(full.messages) if is_recall(m)]
    # what was written, memo and carry included, is what a write from scratch gives
    fresh, fresh_system = write_messages(
        "openai_chat",
        full.system,
        full.messages,
        developer=memory.developer,
        system_messages=lead,
        system_anchors=lead_anchors(sent, lead),
        system_source=system,
    )
    assert result.messages == fresh
    assert result.system == fresh_system


def _conversation(seed: int, *, said_later: bool = True) -> list[dict[str, Any]]:
    """A generated session in Chat Completions items, the caller's own system message first and (``said_later``)
    a system and a developer message said mid-conversation, before user turns."""
    items = to_openai_chat(generate_session(70, seed=seed).messages, passthrough=False)
    out: list[dict[str, Any]] = []
    users = 0
    for item in items:
        if item.get("role") == "user" and said_later:
            users += 1
            if users == 3:
                out.append({"role": "system", "content": "From now on, answer in short sentences."})
            if users == 5:
                out.append({"role": "developer", "content": "Prefer the staging database for tests."})
        out.append(item)
    return out


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("recall", [False, True])
def test_carried_prompt_matches_the_full_passes(seed: int, recall: bool) -> None:
    items = _conversation(seed)
    manager: TokenBudgetContextManager[AgentState] = TokenBudgetContextManager(
        max_tokens=7000, reserve_tokens=1000, recall=recall
    )
    window: Window[Any, Any] = Window(manager)
    states = recording_trims(manager)
    carried = 0
    for k in range(1, len(items) + 1):
        system = "You are helpful." if (k // 30) % 2 == 0 else ("You are careful." if k % 7 else None)
        tools = [RECALL_TOOL] if (k // 45) % 2 else None
        before = thread_memory(window).carry if k > 1 else None
        result = window.fit(items[:k], system=system, tools=tools)
        _check(window, result, states, system, tools)
        now = thread_memory(window).carry
        if before is not None and before.lead is not None and now.lead is before.lead:
            carried += 1
    assert carried > 20  # most calls took the last call's lead as it was (the carry ran)


def test_a_growing_call_splits_no_whole_view(monkeypatch: pytest.MonkeyPatch) -> None:
    items = _conversation(4, said_later=False)  # system messages said later are put back in place: a pass
    manager: TokenBudgetContextManager[AgentState] = TokenBudgetContextManager(
        max_tokens=200_000, reserve_tokens=1000, recall=False
    )
    window: Window[Any, Any] = Window(manager)
    window.fit(items[:-3], system="You are helpful.")
    seen: list[str] = []

    def counted(name: str, function: Any) -> Any:
        def run(*args: Any, **kwargs: Any) -> Any:
            seen.append(name)
            return function(*args, **kwargs)

        return run

    for name in ("assemble", "system_lead", "lead_anchors"):
        monkeypatch.setattr(window_module, name, counted(name, getattr(window_module, name)))
    compared: list[int] = []
    original = _source.shared_prefix

    def measured(a: Any, b: Any) -> int:
        compared.append(min(len(a), len(b)))
        return original(a, b)

    monkeypatch.setattr(_source, "shared_prefix", measured)
    result = window.fit(items, system="You are helpful.")
    assert seen == []  # the prompt, its system lead and anchors: the last call's, with the new messages
    assert compared == []  # the writer's memo took the last write's run without comparing the view
    assert len(result.messages) == len(items) + 1  # every item, and the system prompt


def test_a_carry_is_not_taken_after_a_failed_call() -> None:
    items = _conversation(5)
    manager: TokenBudgetContextManager[AgentState] = TokenBudgetContextManager(max_tokens=200_000, reserve_tokens=1000)
    window: Window[Any, Any] = Window(manager)
    window.fit(items[:-6])
    with pytest.raises(Exception):  # noqa: B017 - any failure of the read
        window.fit([*items[:-3], {"role": "user", "content": 12}])
    assert thread_memory(window).carry is None
    again = window.fit(items)
    fresh: Window[Any, Any] = Window(TokenBudgetContextManager(max_tokens=200_000, reserve_tokens=1000))
    assert again.messages == fresh.fit(items).messages
