"""One reader for every conversation-file format: detection, the --format override, every problem listed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from windowkeeper.io import ConversationFileError, detect_format, read_conversation, read_conversations
from windowkeeper.llm.formats import to_openai_chat
from windowkeeper.testing.conversation_files import BUILDERS, TOOL_SCHEMA, session, write_sample
from windowkeeper.units import validate


@pytest.mark.parametrize("case", sorted(BUILDERS))
def test_every_format_is_detected_and_read(tmp_path: Path, case: str) -> None:
    messages = session()
    path, fmt = write_sample(tmp_path, case, messages)
    conversations = read_conversations(path)
    assert conversations, case
    for conversation in conversations:
        assert conversation.format in (fmt, "tau-bench", "swe-agent")
        assert conversation.format == fmt or case.startswith("jsonl")
        assert conversation.messages
        assert validate(conversation.messages, "openai") == []
    if case not in ("swe-agent-thought-action",):
        texts = [m.text() for m in messages if m.role == "user"]
        assert [m.text() for m in conversations[0].messages if m.role == "user"] == texts


def test_counts_match_the_number_of_conversations(tmp_path: Path) -> None:
    assert len(read_conversations(write_sample(tmp_path, "tau-bench")[0])) == 3
    assert [c.name for c in read_conversations(write_sample(tmp_path, "tau-bench")[0])] == [
        "tau#0.0",
        "tau#1.0",
        "tau#2.0",
    ]
    assert len(read_conversations(write_sample(tmp_path, "jsonl-conversations")[0])) == 2
    assert len(read_conversations(write_sample(tmp_path, "jsonl-messages")[0])) == 1


def test_request_bodies_keep_their_tool_schemas(tmp_path: Path) -> None:
    for case in ("openai-request", "responses"):
        conversation = read_conversation(write_sample(tmp_path, case)[0])
        assert len(conversation.tools) == 1
        assert "read_file" in json.dumps(conversation.tools)
    assert read_conversation(write_sample(tmp_path, "openai-list")[0]).tools == []
    assert TOOL_SCHEMA["type"] == "function"


def test_swe_agent_function_calling_pairs_calls_and_results(tmp_path: Path) -> None:
    conversation = read_conversation(write_sample(tmp_path, "swe-agent-function-calling")[0])
    calls = [b.id for m in conversation.messages for b in m.tool_call_blocks()]
    results = [b.call_id for m in conversation.messages for b in m.tool_result_blocks()]
    assert calls and calls == results


def test_swe_agent_thought_action_style(tmp_path: Path) -> None:
    conversation = read_conversation(write_sample(tmp_path, "swe-agent-thought-action")[0])
    assert [m.role for m in conversation.messages] == ["system", "user"] + ["assistant", "user"] * 3
    assert "open calc.py 20" in conversation.messages[-2].text()


def test_saved_state_keeps_summary(tmp_path: Path) -> None:
    conversation = read_conversation(write_sample(tmp_path, "windowkeeper")[0])
    assert conversation.summary == "Earlier: the user asked for a fix."
    assert conversation.state().context_summary == conversation.summary


def test_format_override_wins_over_detection(tmp_path: Path) -> None:
    path, _ = write_sample(tmp_path, "openai-list")
    assert read_conversation(path, fmt="openai").format == "openai"
    with pytest.raises(ConversationFileError) as info:
        read_conversation(path, fmt="gemini")
    assert info.value.problems[0].startswith("message 0")


def test_every_bad_message_is_listed_with_its_index(tmp_path: Path) -> None:
    chat = to_openai_chat(session())
    chat[1] = {"role": "user", "content": {"nested": True}}  # an unknown role is read (kept), a bad content not
    chat[3] = {"content": "no role"}
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(chat))
    with pytest.raises(ConversationFileError) as info:
        read_conversation(path)
    problems = info.value.problems
    assert len(problems) == 2
    assert problems[0].startswith("message 1: ") and "content" in problems[0]
    assert problems[1].startswith("message 3: ")
    assert "bad.json" in str(info.value) and "2 problems" in str(info.value)


def test_bad_tau_bench_trajectories_are_all_listed(tmp_path: Path) -> None:
    traj = to_openai_chat(session())
    bad = [*traj[:2], {"role": "assistant", "tool_calls": 5}]
    data = [{"task_id": 0, "traj": traj}, {"task_id": 1, "traj": bad}, {"task_id": 2, "traj": "nope"}]
    path = tmp_path / "tau.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ConversationFileError) as info:
        read_conversations(path)
    assert [p.split(":")[0] for p in info.value.problems] == ["trajectory 1", "trajectory 2"]


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        (42, "top level is a number"),
        ("text", "top level is a string"),
        (None, "top level is null"),
        (True, "top level is a boolean"),
        ([], "empty list"),
        ([1, 2], "list of numbers"),
        ([[]], "list of lists"),
        ({"foo": 1}, "keys 'foo'"),
        ([{"x": 1}], "not messages"),
    ],
)
def test_odd_top_level_shapes_are_named(data: object, needle: str) -> None:
    with pytest.raises(ConversationFileError, match=needle):
        detect_format(data)


def test_orphan_tool_result_reads_and_validate_reports_it(tmp_path: Path) -> None:
    chat = [
        {"role": "user", "content": "hi"},
        {"role": "tool", "tool_call_id": "call_1", "content": "orphan"},
        {"role": "assistant", "content": "ok"},
        {"role": "tool", "tool_call_id": "call_2", "content": "orphan too"},
    ]
    path = tmp_path / "orphan.json"
    path.write_text(json.dumps(chat))
    problems = validate(read_conversation(path).messages, "openai")
    assert [(p.index, p.code) for p in problems] == [(1, "orphan_tool_result"), (3, "orphan_tool_result")]


@pytest.mark.data
def test_shared_data_files_read(tmp_path: Path) -> None:
    from windowkeeper.evaluation.datasets import data_dir

    root = data_dir()
    if not root.exists():
        pytest.skip(f"shared data not found at {root}")
    tau = read_conversations(root / "tau_bench" / "gpt-4o-airline.json")
    assert len(tau) == 200 and {c.format for c in tau} == {"tau-bench"}
    for traj in sorted((root / "swe_agent").glob("*.traj")):
        (conversation,) = read_conversations(traj)
        assert conversation.format == "swe-agent" and conversation.messages


def test_langchain_serialized_form_builds_only_messages(tmp_path: Path) -> None:
    pytest.importorskip("langchain_core")
    from langchain_core.load import dumpd
    from langchain_core.messages import AIMessage, HumanMessage

    path = tmp_path / "lc.json"
    path.write_text(json.dumps([dumpd(HumanMessage("hi")), dumpd(AIMessage("hello"))]))
    conversation = read_conversation(path)
    assert conversation.format == "langchain"
    assert [(m.role, m.text()) for m in conversation.messages] == [("user", "hi"), ("assistant", "hello")]
    other = {"lc": 1, "type": "constructor", "id": ["langchain", "schema", "document", "Document"], "kwargs": {}}
    path.write_text(json.dumps([dumpd(HumanMessage("hi")), other]))
    with pytest.raises(ConversationFileError, match="message 1"):
        read_conversation(path)


def test_unhashable_values_where_a_name_is_expected_are_rejected_not_crashed_on() -> None:
    from windowkeeper.io import parse_conversations

    for data in ([{"type": []}], [{"role": {}}], [{"role": "user", "content": [{"type": ["x"]}]}]):
        with pytest.raises(ConversationFileError):
            parse_conversations(data)
