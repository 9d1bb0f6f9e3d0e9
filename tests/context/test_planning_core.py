"""A strategy written as one planning core works everywhere: sync, async, in the graph, in `Window`, with recall.

`KeepTurns` below implements only `plan` (and its settings): it yields a `SummaryRequest` for what it drops and
starts the base's recall step. It never writes ``trim_context``/``atrim_context``, a summarizer call, a timeout or
recall wiring; the base provides all of them, as it does for the built-in managers.
"""

from __future__ import annotations

import asyncio
from collections.abc import Generator, Sequence
from typing import Any

import pytest

from recall_chat import FACT, QUESTION, ask_in_graph, turn_text
from windowkeeper import AgentState, Message, Window
from windowkeeper.context import BaseContextManager, SummaryRequest
from windowkeeper.context._recall_step import make_recall
from windowkeeper.graph import END, Agent, InMemoryCheckpointer, StateGraph
from windowkeeper.llm import ScriptedClient
from windowkeeper.prompt import SUMMARY_HEADER, is_recall
from windowkeeper.tools import recall_tool
from windowkeeper.units import validate


class KeepTurns(BaseContextManager[AgentState]):
    """Keep the system messages and the newest ``turns`` user turns; summarize what leaves (when a summarizer is
    given) and recall it (``recall=True``)."""

    def __init__(
        self, turns: int, *, summarizer: Any = None, recall: bool = False, recall_budget: int | None = None
    ) -> None:
        self.turns = turns
        self.summarizer = summarizer
        self.recall = make_recall(recall, None)
        self.recall_budget = recall_budget

    def plan(self, state: AgentState) -> Generator[SummaryRequest, str | None, AgentState]:
        before = self._begin_trim(state)
        step = self.start_recall(state)
        systems = [m for m in state.context if m.role == "system" and not is_recall(m)]
        others = [m for m in state.context if m.role != "system"]
        users = [i for i, m in enumerate(others) if m.role == "user" and not is_recall(m)]
        made = 0
        if len(users) > self.turns:
            cut = users[-self.turns]
            dropped, kept = others[:cut], others[cut:]
            if self.summarizer is not None:
                previous = state.context_summary or None
                text = yield SummaryRequest([m for m in dropped if not is_recall(m)], previous, 200)
                if text is not None:
                    state.context_summary = f"{previous}\n\n{text}" if previous else text
                    made = 1
            state.context = systems + kept
        if step is not None:
            step.finish(state)
        self._finish_trim(before, state, summaries_made=made)
        return state


def count_summary(messages: Sequence[Message], previous_summary: str | None = None) -> str:
    """A sync summarizer callable: names how many messages it was given."""
    return f"{len(messages)} earlier messages"


async def acount_summary(messages: Sequence[Message], previous_summary: str | None = None) -> str:
    return count_summary(messages, previous_summary)


def conversation(turns: int) -> AgentState:
    context = [Message.text_message("You are helpful.", role="system", message_id="sys")]
    for turn in range(turns):
        context.append(Message.text_message(f"question {turn}", message_id=f"u{turn}"))
        context.append(Message.text_message(f"answer {turn}", role="assistant", message_id=f"a{turn}"))
    return AgentState(context=context)


def ids(state: AgentState) -> list[str]:
    return [str(m.message_id) for m in state.context]


EXPECTED = ["sys", "u3", "a3", "u4", "a4"]


@pytest.mark.parametrize("summarizer", [count_summary, acount_summary], ids=["sync-summarizer", "async-summarizer"])
def test_sync_and_async_entry_points_come_from_the_core(summarizer: Any) -> None:
    sync = KeepTurns(2, summarizer=summarizer).trim_context(conversation(5))
    manager = KeepTurns(2, summarizer=summarizer)
    awaited = asyncio.run(manager.atrim_context(conversation(5)))
    for state in (sync, awaited):
        assert ids(state) == EXPECTED
        assert state.context_summary == "6 earlier messages"
    metrics = manager.last_metrics
    assert metrics is not None and metrics.summaries_made == 1 and metrics.messages_after == len(EXPECTED)


def test_a_failing_summarizer_leaves_no_summary_and_the_cut_still_happens() -> None:
    def broken(messages: Sequence[Message], previous_summary: str | None = None) -> str:
        raise RuntimeError("model down")

    state = KeepTurns(2, summarizer=broken).trim_context(conversation(5))
    assert ids(state) == EXPECTED and state.context_summary is None


def test_the_sync_form_inside_a_running_loop_refuses_only_when_it_needs_a_summary() -> None:
    async def inside() -> None:
        untouched = KeepTurns(9, summarizer=count_summary).trim_context(conversation(5))  # no summary needed
        assert len(untouched.context) == 11
        with pytest.raises(RuntimeError, match=r"KeepTurns\.trim_context\(\).*await manager\.atrim_context"):
            KeepTurns(2, summarizer=count_summary).trim_context(conversation(5))

    asyncio.run(inside())


def test_in_the_graph() -> None:
    client = ScriptedClient([f"reply {i}" for i in range(5)])
    graph = StateGraph(context_manager=KeepTurns(2, summarizer=count_summary))
    graph.add_node("MAIN", Agent(client=client, trim_context=True))
    graph.add_edge("MAIN", END)
    graph.set_entry_point("MAIN")
    app = graph.compile(checkpointer=InMemoryCheckpointer())
    for turn in range(5):
        app.invoke({"messages": [Message.text_message(f"q{turn}", message_id=f"u{turn}")]}, {"thread_id": "t"})
    last = client.requests[-1]
    assert [m.message_id for m in last.messages if m.role == "user"] == ["u3", "u4"]
    assert last.system is not None and SUMMARY_HEADER in last.system and "earlier messages" in last.system
    for request in client.requests:
        assert validate(request.messages, "anthropic") == []


def test_in_window() -> None:
    window = Window(KeepTurns(2, summarizer=count_summary))
    chat: list[dict[str, Any]] = []
    for turn in range(5):
        chat.append({"role": "user", "content": f"question {turn}"})
        fitted = window.fit(chat, system="You are helpful.")
        chat.append({"role": "assistant", "content": f"answer {turn}"})
    users = [m["content"] for m in fitted.messages if m["role"] == "user"]
    assert users == ["question 3", "question 4"]
    assert fitted.summary is not None and "earlier messages" in fitted.summary
    assert fitted.metrics is not None and fitted.metrics.messages_after == 4  # the system prompt and 3 turns


def test_with_recall() -> None:
    manager = KeepTurns(3, recall=True, recall_budget=1500)
    state = AgentState(context=[Message.text_message("You are helpful.", role="system", message_id="sys")])
    for turn in range(30):
        state.context = [*state.context, Message.text_message(turn_text(turn), message_id=f"u{turn}")]
        state = manager.trim_context(state)
        state.context = [*state.context, Message.text_message(f"Answer {turn}.", role="assistant")]
    assert not any(FACT in m.text() for m in state.context)
    state.context = [*state.context, Message.text_message(QUESTION, message_id="q")]
    state = manager.trim_context(state)
    assert is_recall(state.context[-2]) and FACT in state.context[-2].text()
    assert state.context[-1].message_id == "q"
    for provider in ("openai", "anthropic", "gemini"):
        assert validate(state.context, provider) == []
    # the recall tool searches the same index
    found = asyncio.run(recall_tool(manager, thread_id="default")(query="staging host port"))
    assert "kestrel-4" in found


def test_with_recall_in_the_graph() -> None:
    client = asyncio.run(ask_in_graph(KeepTurns(3, recall=True, recall_budget=1500), 30))
    last = client.requests[-1].messages
    assert is_recall(last[-2]) and FACT in last[-2].text() and last[-1].text() == QUESTION


def _recall_chat(window: Window[Any, Any], turns: range, chat: list[dict[str, Any]]) -> None:
    for turn in turns:
        chat.append({"role": "user", "content": turn_text(turn)})
        window.fit(chat, system="You are helpful.")
        chat.append({"role": "assistant", "content": f"Answer {turn}."})


def _recalled(fitted: Any) -> str:
    """The text of the request's last user message: the question, with the recall message placed before it
    merged in (consecutive user messages are one Chat Completions message)."""
    last = fitted.messages[-1]
    assert last["role"] == "user"
    parts = last["content"] if isinstance(last["content"], list) else [{"text": last["content"]}]
    texts = [part["text"] for part in parts]
    assert texts[-1] == QUESTION
    return "\n".join(texts[:-1])


def test_with_recall_in_window() -> None:
    """The front door: `Window` drives the core, and the base's recall step places the recall message."""
    window = Window(KeepTurns(3, recall=True, recall_budget=1500))
    chat: list[dict[str, Any]] = []
    _recall_chat(window, range(30), chat)
    assert not any(FACT in str(m["content"]) for m in window.fit(chat, system="You are helpful.").messages)
    chat.append({"role": "user", "content": QUESTION})
    assert FACT in _recalled(window.fit(chat, system="You are helpful."))


def test_with_recall_in_window_after_a_restart(tmp_path: Any) -> None:
    """A new `Window` (a new process) on the same store: the base seeds the strategy's recall from the stored
    history (`import_thread`), so the fact said before the restart is recalled after it."""
    store = str(tmp_path / "window.db")
    chat: list[dict[str, Any]] = []
    first = Window(KeepTurns(3, recall=True, recall_budget=1500), store=store, thread_id="t")
    try:
        _recall_chat(first, range(30), chat)
    finally:
        first.close()
    second = Window(KeepTurns(3, recall=True, recall_budget=1500), store=store, thread_id="t")
    try:
        chat.append({"role": "user", "content": QUESTION})
        assert FACT in _recalled(second.fit(chat, system="You are helpful."))
    finally:
        second.close()
