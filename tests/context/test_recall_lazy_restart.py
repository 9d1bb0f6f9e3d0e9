"""Recall costs what is new (a cold call hands over its unread history lazily) and survives a restart (passages
named by message id and part; a file-backed index keeps its word statistics and rebuilds messages byte for byte)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from windowkeeper import AgentState, Message, ToolCallBlock, ToolResultBlock
from windowkeeper.context import TokenBudgetContextManager
from windowkeeper.context.recall import BACKLOG_PER_CALL, Recall, is_recall, recalled_passages
from windowkeeper.context.recall_index import Entry, RecallIndex, passage_spans
from windowkeeper.tools import recall_tool

OLD_FACT = "For the record: the staging database runs on host kestrel-4 at port 55432."
RECENT_FACT = "Decision: the nightly export moves to bucket tangerine-archive-7 from tomorrow."


def filler(n: int) -> str:
    return f"Turn {n}: a short remark about chore number {n} and nothing else of note."


def history(messages: int) -> list[Message]:
    """A long chat: the old fact first, the recent fact shortly before the end, filler elsewhere."""
    out: list[Message] = []
    for i in range(messages):
        text = OLD_FACT if i == 0 else RECENT_FACT if i == messages - 400 else filler(i)
        out.append(Message.text_message(text, role="user" if i % 2 == 0 else "assistant", message_id=f"m{i}"))
    return out


def test_a_cold_call_on_a_long_history_hands_its_unread_part_over_lazily() -> None:
    msgs = history(9000)
    manager: TokenBudgetContextManager[AgentState] = TokenBudgetContextManager(max_tokens=3000, reserve_tokens=500)
    recall = manager.recall
    assert recall is not None
    question = Message.text_message("Which bucket does the nightly export move to?", message_id="q")
    state = manager.trim_context(AgentState(context=[*msgs, question]))
    # the first call indexed at most one slice, newest first; the rest waits, untouched
    assert recall.index.count() <= 2 * BACKLOG_PER_CALL
    assert recall.pending("default") > 7000
    # a search before the backlog is indexed still finds recent dropped text
    placed = [m for m in state.context if is_recall(m)]
    assert len(placed) == 1 and RECENT_FACT in placed[0].text()
    # its label is where the message stood: message #8600 (0-based position), turn 4301
    assert "--- message #8600, turn 4301, user" in placed[0].text()
    # later calls index the backlog a slice at a time until the oldest message is searchable
    for turn in range(40):
        state.context = [
            *state.context,
            Message.text_message(f"Noted {turn}.", role="assistant", message_id=f"r{turn}"),
            Message.text_message(f"Another chore {turn}, nothing more.", message_id=f"u{turn}"),
        ]
        state = manager.trim_context(state)
        if not recall.pending("default"):
            break
    assert recall.pending("default") == 0
    hits = recall.search("default", "staging database host port")
    assert hits and hits[0].passage.message_id == "m0" and hits[0].passage.position == 0
    assert hits[0].passage.turn == 1


def test_passage_keys_and_statistics_survive_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "recall.sqlite"
    index = RecallIndex(path)
    entries = [Entry(f"m{i}", filler(i), i, i // 2 + 1, "user") for i in range(60)]
    entries.append(Entry("fact", OLD_FACT, 60, 31, "assistant", "2024-05-01"))
    index.add_many("t", entries)
    index.add_many("other", [Entry("x", "The staging host of another thread is kestrel-9.", 0, 1, "user")])
    before = index.search("t", "staging host port", limit=3)
    assert before[0].passage.key == "fact#0"
    index.close()

    reopened = RecallIndex(path)
    after = reopened.search("t", "staging host port", limit=3)
    # same passages, same keys, same scores and coverage: the word statistics came back with the file
    assert [(h.passage.key, round(h.score, 9), round(h.coverage, 9)) for h in after] == [
        (h.passage.key, round(h.score, 9), round(h.coverage, 9)) for h in before
    ]
    assert reopened.add_many("t", entries) == 0  # already indexed: nothing is added twice
    assert reopened.add("t", "new", "A new message after the restart.", position=61, turn=32, role="user") == 1
    assert reopened.count("t") == 62 and reopened.count("other") == 1
    assert [h.passage.message_id for h in reopened.search("other", "staging host")] == ["x"]
    reopened.forget("t")
    assert reopened.count("t") == 0 and reopened.search("t", "staging host") == []
    assert reopened.count("other") == 1


def test_a_recall_message_names_its_passages_by_message_and_part() -> None:
    recall = Recall()
    recall.observe("t", [Message.text_message(OLD_FACT, message_id="a")])
    recall.left("t", [Message.text_message(OLD_FACT, message_id="a")])
    user = Message.text_message("Which host and port does the staging database use?", message_id="q")
    built = recall.build("t", user, 2000)
    assert built is not None
    message, _ = built
    assert message.metadata["passages"] == ["a#0"]
    assert recalled_passages([message]) == {"a#0"}
    # once shown, the same passage is not shown again to the next turn
    again = Message.text_message("And the staging database host and port, once more?", message_id="q2")
    assert recall.build("t", again, 2000, exclude=recalled_passages([message])) is None


def test_a_first_layout_index_file_is_converted(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    db = sqlite3.connect(path)
    db.executescript(
        """
        CREATE TABLE recall_passage(
            rowid INTEGER PRIMARY KEY, thread TEXT NOT NULL, message_id TEXT NOT NULL,
            position INTEGER NOT NULL, turn INTEGER NOT NULL, role TEXT NOT NULL, date TEXT,
            part INTEGER NOT NULL, parts INTEGER NOT NULL, body TEXT NOT NULL);
        CREATE INDEX recall_passage_message ON recall_passage(thread, message_id);
        CREATE VIRTUAL TABLE recall_fts USING fts5(body, tkey, content='', tokenize='porter unicode61');
        """
    )
    db.execute(
        "INSERT INTO recall_passage VALUES (7, 't', 'fact', 3, 2, 'user', NULL, 0, 1, ?)",
        (OLD_FACT,),
    )
    db.commit()
    db.close()
    index = RecallIndex(path)
    hits = index.search("t", "staging database host")
    assert [h.passage.key for h in hits] == ["fact#0"] and hits[0].passage.position == 3
    assert index.message_text("t", "fact") == ("fact", OLD_FACT)


@given(st.text(alphabet=st.sampled_from(list("ab .!?\n\t")), max_size=1500), st.integers(min_value=50, max_value=300))
def test_passages_and_the_whitespace_between_them_rebuild_the_text(text: str, limit: int) -> None:
    spans = passage_spans(text, limit)
    rebuilt = ""
    previous = 0
    for start, end in spans:
        assert text[previous:start].strip() == ""
        rebuilt += text[previous:end]
        previous = end
    if spans:
        rebuilt += text[previous:]
        assert rebuilt == text
    else:
        assert text.strip() == ""


def test_the_recall_tool_restores_a_cleared_output_after_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "recall.sqlite"
    output = "line one\n\n   indented line two   \n" + "x" * 1500 + "\n\ttrailing tab line\n"
    call = Message(role="assistant", content=[ToolCallBlock(id="call-7", name="cat", args={"path": "a.txt"})])
    result = Message.tool_message([ToolResultBlock(call_id="call-7", output=output)])
    first = Recall(path=path)
    first.observe("t", [call, result])
    first.left("t", [call, result])
    first.flush("t")
    first.index.close()

    restarted: TokenBudgetContextManager[AgentState] = TokenBudgetContextManager(
        max_tokens=4000, reserve_tokens=500, recall=Recall(path=path)
    )
    tool = recall_tool(restarted, thread_id="t")
    assert tool.invoke({"pointer_id": "call-7"}) == output
    assert "indented line two" in tool.invoke({"query": "indented line"})
