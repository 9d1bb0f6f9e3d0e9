"""Query-aware recall: the index, and the recall message the budget manager places before a new user message."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from windowkeeper import AgentState, Message, ToolCallBlock, ToolResultBlock
from windowkeeper.context import TokenBudgetContextManager
from windowkeeper.context.recall import RECALL_HEADER, Recall, is_recall
from windowkeeper.context.recall_index import Entry, RecallIndex, split_passages
from windowkeeper.graph import END, Agent, StateGraph, ToolNode
from windowkeeper.graph.checkpointer import SQLiteCheckpointer
from windowkeeper.llm import ScriptedClient
from windowkeeper.summarize import ExtractiveSummarizer
from windowkeeper.units import validate

FACT = "For the record: the staging database runs on host kestrel-4 at port 55432."


# -- the index ---------------------------------------------------------------------------------------------------


@given(st.text(alphabet=st.sampled_from(list("ab .!?\n")), max_size=2000), st.integers(min_value=50, max_value=400))
def test_passages_are_verbatim_slices_within_the_limit(text: str, limit: int) -> None:
    pieces = split_passages(text, limit)
    assert all(0 < len(p) <= limit for p in pieces)
    assert all(p in text for p in pieces)
    assert "".join("".join(p.split()) for p in pieces) == "".join(text.split())


def test_search_ranks_by_bm25_and_keeps_threads_apart(tmp_path: Path) -> None:
    index = RecallIndex(tmp_path / "recall.sqlite")
    index.add_many(
        "a",
        [
            Entry("m1", "The API server listens on port 8080.", 1, 1, "assistant", "2024-05-01"),
            Entry("m2", "We had pasta for dinner.", 2, 2, "user"),
            Entry("m3", "The port of Lisbon is busy.", 3, 3, "user"),
        ],
    )
    index.add("b", "m1", "The API server of thread b listens on port 9090.", position=1, turn=1, role="user")
    hits = index.search("a", "which port does the API server listen on?")
    assert [h.passage.message_id for h in hits] == ["m1", "m3"]
    assert hits[0].score > hits[1].score and hits[0].coverage > hits[1].coverage
    assert hits[0].passage.date == "2024-05-01" and hits[0].passage.position == 1
    assert [h.passage.text for h in index.search("b", "API server port")] == [
        "The API server of thread b listens on port 9090."
    ]
    assert index.search("a", "zeppelin") == []
    assert index.add("a", "m1", "again", position=9, turn=9, role="user") == 0  # indexed once
    index.forget("a")
    assert index.count("a") == 0 and index.count("b") == 1
    index.close()
    reopened = RecallIndex(tmp_path / "recall.sqlite")
    assert reopened.count() == 1


def test_a_kept_answer_lasts_until_the_next_write_to_any_thread(tmp_path: Path) -> None:
    index = RecallIndex()
    index.add("a", "m1", "The API server listens on port 8080.", position=1, turn=1, role="assistant")
    first = index.search("a", "API server port")
    assert index.search("a", "API server port")[0] is first[0]  # the kept answer
    # a write to another thread changes the table's BM25 statistics: the answer is worked out again
    index.add("b", "n1", "Nothing about servers here, only a port.", position=1, turn=1, role="user")
    again = index.search("a", "API server port")
    assert again == first and again[0] is not first[0]
    index.add("a", "m2", "The API server moved to port 9090 on the new API host.", position=2, turn=2, role="user")
    assert {h.passage.message_id for h in index.search("a", "API server port")} == {"m1", "m2"}
    assert index.add("a", "m2", "again", position=9, turn=9, role="user") == 0  # this process knows it is indexed
    index.forget("a")
    assert index.search("a", "API server port") == []
    # a thread read back from a file looks its indexed messages up in the file
    path = tmp_path / "kept.sqlite"
    writer = RecallIndex(path)
    writer.add("a", "m1", "The API server listens on port 8080.", position=1, turn=1, role="assistant")
    writer.close()
    reader = RecallIndex(path)
    assert reader.add("a", "m1", "again", position=9, turn=9, role="user") == 0
    assert reader.add("a", "m3", "A new passage about the port.", position=3, turn=3, role="user") == 1


# -- the budget manager ----------------------------------------------------------------------------------------------


def turn_text(turn: int) -> str:
    return FACT if turn == 0 else f"Turn {turn}: let us talk about topic {turn} and its many unremarkable details."


def chat(manager: TokenBudgetContextManager[AgentState], turns: int) -> list[AgentState]:
    """Drive a chat the way an agent does: trim with the new user message, then append the reply."""
    state = AgentState()
    state.context = [Message.text_message("You are helpful.", role="system", message_id="sys")]
    views = []
    for turn in range(turns):
        state.context = [*state.context, Message.text_message(turn_text(turn), message_id=f"u{turn}")]
        state = manager.trim_context(state)
        views.append(state.model_copy(update={"context": list(state.context)}))
        reply = Message.text_message(f"Answer {turn}: noted, topic {turn} is clear.", role="assistant")
        state.context = [*state.context, reply.model_copy(update={"message_id": f"a{turn}"})]
    return views


def test_recall_brings_an_old_fact_back_verbatim_before_the_question() -> None:
    manager: TokenBudgetContextManager[AgentState] = TokenBudgetContextManager(max_tokens=2500, reserve_tokens=500)
    views = chat(manager, 120)
    assert not any(FACT in m.text() for m in views[-1].context)
    state = views[-1]
    state.context = [*state.context, Message.text_message("Which host and port does staging use?", message_id="q")]
    state = manager.trim_context(state)
    recall = state.context[-2]
    assert is_recall(recall) and recall.role == "user" and recall.message_id == "recall:q"
    assert recall.metadata["serves"] == "q"
    text = recall.text()
    assert text.startswith(RECALL_HEADER)
    assert "--- message #1, turn 1, user, " in text and FACT in text
    assert state.context[-1].message_id == "q"
    for provider in ("openai", "anthropic", "gemini"):
        assert validate(state.context, provider) == []
    metrics = manager.last_metrics
    assert metrics is not None and metrics.zones is not None and metrics.zones["recall"] > 0
    assert metrics.tokens_after <= manager.budget


def test_a_recalled_line_says_who_said_it_when_the_caller_named_the_speakers() -> None:
    """In a chat among named people (Chat Completions' ``name``) the model read who said each line; a recalled
    line says it too, and a question that names the speaker finds it by that name."""
    manager: TokenBudgetContextManager[AgentState] = TokenBudgetContextManager(max_tokens=2500, reserve_tokens=500)
    state = AgentState()
    for turn in range(120):
        text = FACT if turn == 0 else turn_text(turn)
        said = Message.text_message(text, message_id=f"u{turn}", metadata={"name": "Priya"})
        state.context = [*state.context, said]
        state = manager.trim_context(state)
        reply = Message.text_message(f"Noted {turn}.", role="assistant", message_id=f"a{turn}")
        state.context = [*state.context, reply.model_copy(update={"metadata": {"name": "Tom"}})]
    assert not any(FACT in m.text() for m in state.context)
    state.context = [*state.context, Message.text_message("Priya, which staging host and port?", message_id="q")]
    state = manager.trim_context(state)
    recall = state.context[-2]
    assert is_recall(recall) and f"Priya: {FACT}" in recall.text()
    assert state.context[-1].message_id == "q"


def test_recall_is_computed_once_and_stays_byte_identical_through_tool_steps() -> None:
    manager: TokenBudgetContextManager[AgentState] = TokenBudgetContextManager(max_tokens=3000, reserve_tokens=500)
    state = chat(manager, 100)[-1]
    state.context = [*state.context, Message.text_message("Remind me: staging host kestrel-4 port?", message_id="q")]
    state = manager.trim_context(state)
    first = next(m for m in state.context if m.message_id == "recall:q")
    for step in range(4):
        call = Message(role="assistant", content=[ToolCallBlock(id=f"c{step}", name="ping", args={"n": step})])
        result = Message.tool_message([ToolResultBlock(call_id=f"c{step}", output=f"pong {step}")])
        state.context = [*state.context, call, result]
        state = manager.trim_context(state)
        again = next(m for m in state.context if m.message_id == "recall:q")
        assert again is first  # the same object: byte for byte the same text, whatever else happened
        metrics = manager.last_metrics
        assert metrics is not None
        if metrics.tokens_after >= metrics.tokens_before:  # no compaction: the whole prefix is unchanged
            assert metrics.prefix_stable
    assert sum(is_recall(m) for m in state.context) >= 1


def test_a_turn_that_does_not_refer_back_gets_no_recall_and_recall_can_be_turned_off() -> None:
    manager: TokenBudgetContextManager[AgentState] = TokenBudgetContextManager(max_tokens=2500, reserve_tokens=500)
    views = chat(manager, 60)
    state = views[-1]
    state.context = [*state.context, Message.text_message("What is a good zeppelin museum?", message_id="z")]
    assert not any(m.message_id == "recall:z" for m in manager.trim_context(state).context)
    off: TokenBudgetContextManager[AgentState] = TokenBudgetContextManager(
        max_tokens=2500, reserve_tokens=500, recall=False
    )
    assert off.recall is None
    assert not any(is_recall(m) for view in chat(off, 120) for m in view.context)


def test_recall_messages_are_never_summarized_or_indexed() -> None:
    recall = Recall()
    manager: TokenBudgetContextManager[AgentState] = TokenBudgetContextManager(
        max_tokens=2500, reserve_tokens=500, summarizer=ExtractiveSummarizer(), recall=recall
    )
    for view in chat(manager, 150):
        assert RECALL_HEADER not in (view.context_summary or "")
    recall.flush("default", None)
    hits = recall.index.search("default", "recalled context added by the context manager", limit=50)
    assert not any(RECALL_HEADER[:40] in h.passage.text for h in hits)


def fact_script(request: object) -> Message:
    return Message.text_message("noted", role="assistant")


def test_the_graph_never_logs_a_recall_message_as_history(tmp_path: Path) -> None:
    manager: TokenBudgetContextManager[AgentState] = TokenBudgetContextManager(max_tokens=2500, reserve_tokens=500)
    client = ScriptedClient(default=fact_script)
    tools = ToolNode([])
    agent = Agent(client=client, trim_context=True)
    graph = StateGraph(context_manager=manager)
    graph.add_node("MAIN", agent)
    graph.add_edge("MAIN", END)
    graph.set_entry_point("MAIN")
    checkpointer = SQLiteCheckpointer(tmp_path / "cp.sqlite")
    app = graph.compile(checkpointer=checkpointer)
    config = {"thread_id": "t"}
    for turn in range(80):
        app.invoke({"messages": [Message.text_message(turn_text(turn), message_id=f"u{turn}")]}, config=config)
    app.invoke({"messages": [Message.text_message("Which port does staging use?", message_id="q")]}, config=config)
    sent = client.requests[-1].messages
    assert any(is_recall(m) and FACT in m.text() for m in sent)
    log = checkpointer.get_messages("t")
    assert not any(is_recall(m) for m in log)
    assert [m.message_id for m in log if m.role == "user"] == [*(f"u{t}" for t in range(80)), "q"]
    assert tools.tool_names == []


def test_recall_keeps_a_bounded_set_of_originals_and_rebuilds_older_text_from_the_index() -> None:
    """An agent that runs for days hands recall its whole history: the originals it holds are bounded by bytes, the
    positions of indexed messages are dropped, and an evicted message's text still comes back byte for byte."""
    recall = Recall(original_cache_bytes=20_000)
    messages: list[Message] = []
    for i in range(300):
        call = Message(
            role="assistant",
            content=[ToolCallBlock(id=f"call{i}", name="read", args={"n": i})],
            message_id=f"c{i}",
        )
        body = f"line one of output {i}\n" + f"value {i} " * 30
        result = Message.tool_message([ToolResultBlock(call_id=f"call{i}", output=body)], message_id=f"r{i}")
        messages += [Message.text_message(f"step {i}", message_id=f"u{i}"), call, result]
    recall.observe("t", messages)
    recall.left("t", messages)
    assert recall.flush("t", None, None) == len(messages)
    state = recall._threads["t"]
    assert not state.positions and len(state.indexed) == len(messages)
    assert recall._originals.bytes <= 20_000 and len(recall._originals) < len(messages)
    assert recall.original("t", "r0") is None  # evicted: the oldest went first
    assert recall.original_text("t", "r0") == messages[2].text()  # rebuilt from the index
    newest = recall.original("t", "call299")  # by the call id it answers
    assert newest is messages[-1] and recall.original("t", "r299") is newest
    recall.forget("t")
    assert len(recall._originals) == 0


def test_a_thread_searched_before_anything_left_it_finds_what_is_indexed_later(tmp_path: Path) -> None:
    index = RecallIndex(tmp_path / "recall.sqlite")
    assert index.search("t", "which port does the staging database use") == []  # nothing indexed: no query
    index.add_many("t", [Entry("m1", "The staging database listens on port 6543.", 0, 1, "assistant")])
    hits = index.search("t", "which port does the staging database use")
    assert [h.passage.message_id for h in hits] == ["m1"]
    index.forget("t")
    assert index.search("t", "staging database port") == []
    index.add_many("t", [Entry("m2", "Staging moved to port 7654.", 1, 2, "assistant")])
    assert [h.passage.message_id for h in index.search("t", "staging port")] == ["m2"]
    index.close()
