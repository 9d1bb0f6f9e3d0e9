"""The session generator: determinism, realistic structure, and facts that really are in the messages."""

from __future__ import annotations

import json
import re

import pytest

from windowkeeper import ConfigurationError, Message, ReasoningBlock, ToolCallBlock
from windowkeeper.testing.sessiongen import generate_session, generate_session_for_tokens, iter_steps
from windowkeeper.tokens import ApproxCounter, default_counter
from windowkeeper.units import validate


def _dump(messages: list[Message]) -> str:
    return json.dumps([m.model_dump(mode="json") for m in messages], ensure_ascii=False, sort_keys=True)


def _visible(message: Message) -> str:
    """Everything a summary could quote from a message: text, results, reasoning and call arguments."""
    args = " ".join(json.dumps(c.args, ensure_ascii=False) for c in message.tool_call_blocks())
    return "\n".join((message.text(), message.reasoning_text(), args))


def test_same_seed_is_byte_identical_and_seeds_differ() -> None:
    a = generate_session(60, seed=11)
    b = generate_session(60, seed=11)
    assert _dump(a.messages) == _dump(b.messages)
    assert a.facts == b.facts
    c = generate_session(60, seed=12)
    assert _dump(c.messages) != _dump(a.messages)
    assert {m.message_id for m in a.messages}.isdisjoint({m.message_id for m in c.messages})


def test_longer_session_extends_the_shorter_one() -> None:
    short = generate_session(20, seed=3)
    long = generate_session(35, seed=3)
    assert _dump(long.messages[: len(short.messages)]) == _dump(short.messages)
    assert long.facts[: len(short.facts)] == short.facts
    stream = iter_steps(seed=3)
    for _ in range(21):
        grown = next(stream)
    assert grown.steps == 20
    assert _dump(grown.messages) == _dump(short.messages)


def test_structure_is_a_valid_agent_history() -> None:
    session = generate_session(80, seed=4)
    messages = session.messages
    assert messages[0].role == "system" and messages[1].role == "user"
    assert session.steps == 80
    assert sum(m.role == "assistant" for m in messages) == 80
    assert validate(messages, "openai") == []
    assert validate(messages, "anthropic") == []
    ids = [m.message_id for m in messages]
    assert len(set(ids)) == len(ids)
    timestamps = [m.timestamp for m in messages]
    assert timestamps == sorted(timestamps)
    calls = [m for m in messages if m.tool_call_blocks()]
    assert any(len(m.tool_call_blocks()) >= 2 for m in calls), "parallel calls"
    names = {c.name for m in calls for c in m.tool_call_blocks()}
    assert {"read_file", "grep", "run_tests", "edit_file", "shell"} <= names
    results = [b for m in messages for b in m.tool_result_blocks()]
    assert any(b.status == "error" for b in results)
    assert max(len(str(b.output)) for b in results) > 3000, "large tool outputs"
    texts = "\n".join(str(b.output) for b in results)
    assert "Traceback (most recent call last):" in texts and "test session starts" in texts
    assert any(isinstance(b, ReasoningBlock) for m in messages for b in m.content)
    assert any(m.reasoning for m in messages)
    assert sum(m.role == "user" for m in messages) >= 8, "user turns interleaved"
    # tools_calls mirrors the blocks in OpenAI form
    for m in calls:
        raw = m.tools_calls or []
        assert [r["id"] for r in raw] == [c.id for c in m.content if isinstance(c, ToolCallBlock)]


def test_facts_are_stated_verbatim_where_they_point() -> None:
    session = generate_session(120, seed=8)
    assert {f.kind for f in session.facts} >= {"goal", "file_path", "decision", "error", "number"}
    for fact in session.facts:
        message = session.message_by_id(fact.message_id)
        assert fact.text in _visible(message), fact
    numbers = session.facts_of("number")
    assert all(re.search(r"\d+ (ms|MiB)$", f.text) for f in numbers)
    with pytest.raises(KeyError, match="nope"):
        session.message_by_id("nope")


def test_chinese_variant_writes_chinese_prose() -> None:
    session = generate_session(30, seed=2, language="zh")
    users = [m.text() for m in session.messages if m.role == "user"]
    assert all(re.search(r"[\u4e00-\u9fff]{4}", t) for t in users)
    assert all(re.search(r"[\u4e00-\u9fff]", f.text) for f in session.facts_of("goal"))
    en = generate_session(30, seed=2, language="en")
    assert not any(re.search(r"[\u4e00-\u9fff]", m.text()) for m in en.messages if m.role == "user")
    for fact in session.facts:
        assert fact.text in _visible(session.message_by_id(fact.message_id))


def test_generate_for_tokens_is_the_shortest_session_reaching_the_target() -> None:
    counter = default_counter()
    session = generate_session_for_tokens(20_000, seed=1, counter=counter)
    assert counter.count_messages(session.messages) >= 20_000
    shorter = generate_session(session.steps - 1, seed=1)
    assert counter.count_messages(shorter.messages) < 20_000
    zh = generate_session_for_tokens(20_000, seed=1, language="zh", counter=ApproxCounter())
    assert ApproxCounter().count_messages(zh.messages) >= 20_000


def test_output_scale_and_bad_arguments() -> None:
    small = generate_session(30, seed=9, output_scale=0.2)
    big = generate_session(30, seed=9)
    counter = ApproxCounter()
    assert counter.count_messages(small.messages) < counter.count_messages(big.messages) / 2
    with pytest.raises(ConfigurationError, match="language"):
        generate_session(3, language="fr")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="steps"):
        generate_session(-1)
    with pytest.raises(ConfigurationError, match="target_tokens"):
        generate_session_for_tokens(0)
