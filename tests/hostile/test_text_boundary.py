"""Issue 12, item 1: a lone surrogate is replaced by U+FFFD at the model boundary, so nothing crashes on it.

Before the fix, ``Message.fingerprint`` (and so every manager), ``memory.add``, every store and the CLI raised
`UnicodeEncodeError`, and a graph run persisted nothing of the run.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest

from windowkeeper import Message
from windowkeeper.blocks import DocumentBlock, ReasoningBlock, TextBlock, ToolCallBlock, ToolResultBlock
from windowkeeper.boundary import REPLACEMENT_CHARACTER, clean_json, clean_text
from windowkeeper.context.budget import TokenBudgetContextManager
from windowkeeper.context.message import MessageContextManager
from windowkeeper.context.summary import SummaryContextManager
from windowkeeper.state import AgentState
from windowkeeper.storage import InMemoryStore, SQLiteStore
from windowkeeper.summarize.extractive import ExtractiveSummarizer
from windowkeeper.tokens import default_counter
from windowkeeper.units import validate

HALF_EMOJI = "\ud83d"
LISTDIR_NAME = b"caf\xe9.txt".decode("utf-8", "surrogateescape")  # what os.listdir returns for a Latin-1 name


def test_clean_text_replaces_lone_surrogates_and_joins_pairs() -> None:
    assert clean_text(f"a{HALF_EMOJI}b") == f"a{REPLACEMENT_CHARACTER}b"
    assert clean_text(LISTDIR_NAME) == f"caf{REPLACEMENT_CHARACTER}.txt"
    assert clean_text("\ud83d\ude00") == "\U0001f600"  # a valid pair becomes the emoji it encodes
    clean = "plain ascii"
    assert clean_text(clean) is clean
    unicode_text = "déjà vu 😀"
    assert clean_text(unicode_text) is unicode_text


def test_clean_json_cleans_keys_and_nested_values_without_copying_clean_data() -> None:
    value = {"k": [1, {"x": "ok"}], "bad\udc80": ("\udcff",)}
    cleaned = clean_json(value)
    assert cleaned == {"k": [1, {"x": "ok"}], "bad\ufffd": ("\ufffd",)}
    assert cleaned["k"] is value["k"]  # untouched branches are shared, not copied
    clean = {"a": [1, 2, {"b": "c"}]}
    assert clean_json(clean) is clean


def test_every_model_constructor_sanitizes() -> None:
    msg = Message(
        role="assistant",
        message_id=f"id{HALF_EMOJI}",
        content=[
            TextBlock(text=f"hello {HALF_EMOJI}"),
            ReasoningBlock(text=HALF_EMOJI),
            ToolCallBlock(id="c1", name="open", args={"path": LISTDIR_NAME, HALF_EMOJI: [HALF_EMOJI]}),
            DocumentBlock(text=HALF_EMOJI),
        ],
        reasoning=HALF_EMOJI,
        metadata={"file": LISTDIR_NAME},
        raw={"x": [HALF_EMOJI]},
        tools_calls=[{"id": "c1", "function": {"name": "open", "arguments": HALF_EMOJI}}],
    )
    dumped = msg.model_dump_json()  # raised UnicodeEncodeError before
    assert HALF_EMOJI not in dumped and dumped.count("\ufffd") == 10
    assert msg.message_id == "id\\ud83d"  # ids keep distinct surrogates apart with an escape
    assert msg.content[0].text == "hello \ufffd"  # type: ignore[union-attr]
    assert msg.content[2].args == {"path": "caf\ufffd.txt", "\ufffd": ["\ufffd"]}  # type: ignore[union-attr]
    assert msg.metadata == {"file": "caf\ufffd.txt"}
    assert msg.fingerprint()
    result = ToolResultBlock(call_id="c1", output={"lines": [HALF_EMOJI]})
    assert result.output == {"lines": ["\ufffd"]}
    # appended after construction: validated the same way
    msg.content.append({"type": "text", "text": HALF_EMOJI})  # type: ignore[arg-type]
    assert msg.content[-1] == TextBlock(text="\ufffd")


def test_ids_stay_distinct_and_store_addresses_are_refused_not_rewritten() -> None:
    first = Message.text_message("a", message_id="x\udc80")
    second = Message.text_message("b", message_id="x\udc81")
    assert first.message_id != second.message_id
    call = ToolCallBlock(id="c\udc80", name="f")
    result = ToolResultBlock(call_id="c\udc80", output="ok")
    assert call.id == result.call_id == "c\\udc80"


async def test_store_addresses_with_a_lone_surrogate_are_a_configuration_error(tmp_path: Path) -> None:
    from windowkeeper.errors import ConfigurationError

    store = SQLiteStore(tmp_path / "ids.db")
    with pytest.raises(ConfigurationError, match="lone surrogate"):
        await store.append_messages(f"t{HALF_EMOJI}", [Message.text_message("x")])
    with pytest.raises(ConfigurationError, match="lone surrogate"):
        await store.add_record("ns", LISTDIR_NAME, "k", {})
    # a NUL is refused by every store alike (SQLite took it, PostgreSQL failed with a driver error naming nothing)
    with pytest.raises(ConfigurationError, match="thread_id 'a\\\\x00b' holds a NUL character"):
        await store.append_messages("a\x00b", [Message.text_message("x")])
    await store.close()


def _conversation() -> list[Message]:
    out: list[Message] = []
    for i in range(30):
        out.append(Message.text_message(f"question {i} {HALF_EMOJI} " * 20, message_id=f"u{i}"))
        out.append(Message.text_message(f"answer {i} {LISTDIR_NAME} " * 20, role="assistant", message_id=f"a{i}"))
    return out


def test_every_manager_handles_a_lone_surrogate() -> None:
    for manager in (
        TokenBudgetContextManager(max_tokens=1_500, reserve_tokens=0),
        MessageContextManager(max_messages=3),
        SummaryContextManager(max_messages=10, keep_recent=4, summarizer=ExtractiveSummarizer()),
    ):
        state = manager.trim_context(AgentState(context=_conversation()))
        assert validate(state.context) == [], type(manager).__name__
        assert len(state.context) < 60


async def test_every_local_store_keeps_the_text_with_the_replacement(tmp_path: Path) -> None:
    for store in (InMemoryStore(), SQLiteStore(tmp_path / "s.db")):
        msg = Message.text_message(f"hi {HALF_EMOJI}", message_id="m1")
        assert await store.append_messages("t", [msg]) == 1
        assert [m.text() for m in await store.load_messages("t")] == ["hi \ufffd"]
        # raw documents (records, states) that never went through a model are cleaned by the codec
        await store.add_record("ns", "s", "k", {"note": f"x{HALF_EMOJI}", LISTDIR_NAME: 1})
        record = await store.get_record("ns", "s", "k")
        assert record is not None and record.doc == {"note": "x\ufffd", "caf\ufffd.txt": 1}
        await store.put_state("t", {"summary": HALF_EMOJI})
        assert await store.get_state("t") == {"summary": "\ufffd"}
        await store.close()


async def test_memory_add_keeps_a_lone_surrogate_turn() -> None:
    from windowkeeper.memory import InMemoryMemory

    memory = InMemoryMemory()
    await memory.add(Message.text_message(f"my file is {LISTDIR_NAME}", message_id="u1"), session_id="s1")
    await memory.add(
        {"message": {"id": f"e{HALF_EMOJI}", "role": "user", "content": f"dict {HALF_EMOJI}"}}, session_id="s1"
    )
    view = await memory.messages("s1")
    assert [m.text() for m in view] == ["my file is caf\ufffd.txt", "dict \ufffd"]


def test_a_graph_run_persists_the_users_input(tmp_path: Path) -> None:
    from windowkeeper.graph import END, START, StateGraph
    from windowkeeper.graph.checkpointer import Checkpointer

    def reply(state: AgentState) -> dict[str, list[Message]]:
        return {"context": [Message.text_message(f"echo {state.context[-1].text()}", role="assistant")]}

    graph = StateGraph(AgentState)
    graph.add_node("reply", reply)
    graph.add_edge(START, "reply")
    graph.add_edge("reply", END)
    checkpointer = Checkpointer(SQLiteStore(tmp_path / "g.db"))
    app = graph.compile(checkpointer=checkpointer)
    config = {"thread_id": "t1"}
    app.invoke({"context": [Message.text_message(f"look at {HALF_EMOJI}", message_id="u1")]}, config=config)
    stored = asyncio.run(checkpointer.aget_messages("t1"))
    assert [m.text() for m in stored] == ["look at \ufffd", "echo look at \ufffd"]
    checkpointer.close()


def test_fingerprint_never_raises_even_for_unvalidated_text() -> None:
    msg = Message.model_construct(role="user", content=[TextBlock.model_construct(text=HALF_EMOJI)])
    assert len(msg.fingerprint()) == 32


@pytest.mark.skipif(os.name != "posix", reason="surrogateescape file names are a POSIX thing")
def test_a_listdir_name_reaches_the_token_counter(tmp_path: Path) -> None:
    (tmp_path / os.fsdecode(b"caf\xe9.txt")).write_text("x")
    names = os.listdir(tmp_path)
    msg = Message.text_message(json.dumps(names, ensure_ascii=False))
    assert default_counter().count_message(msg) > 0
