"""The two-person chat generator: deterministic, valid as a conversation, and every planted answer stated once."""

from __future__ import annotations

from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from windowkeeper.errors import ConfigurationError
from windowkeeper.testing.dialoguegen import Dialogue, generate_dialogue
from windowkeeper.tokens import default_counter
from windowkeeper.units import validate


def shape(d: Dialogue) -> list[tuple[object, str, str, object]]:
    return [(m.message_id, m.role, m.text(), m.metadata.get("session_date")) for m in d.messages]


def test_the_same_seed_gives_the_same_chat_and_another_seed_another() -> None:
    a, b = generate_dialogue(8_000, seed=3), generate_dialogue(8_000, seed=3)
    assert shape(a) == shape(b) and a.facts == b.facts and a.speakers == b.speakers
    other = generate_dialogue(8_000, seed=4)
    assert [m.text() for m in other.messages[:40]] != [m.text() for m in a.messages[:40]]


def test_it_reaches_the_token_target_in_many_dated_sessions() -> None:
    counter = default_counter()
    d = generate_dialogue(20_000, seed=1, counter=counter)
    assert counter.count_messages(d.messages) >= 20_000
    assert d.sessions >= 20 and len({m.metadata["session_date"][:10] for m in d.messages}) == d.sessions
    dates = [m.metadata["session_date"] for m in d.messages]
    assert dates == sorted(dates)  # sessions move forward in time
    assert max(counter.count_message(m) for m in d.messages) < 60  # short turns


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(min_value=0, max_value=10_000))
def test_every_planted_answer_is_stated_once_in_its_message_and_not_in_its_question(seed: int) -> None:
    d = generate_dialogue(12_000, seed=seed)
    assert validate(d.messages, "anthropic") == []
    roles = [m.role for m in d.messages]
    assert roles[0] == "user" and all(a != b for a, b in pairwise(roles))  # strict alternation
    by_id = {m.message_id: m for m in d.messages}
    assert len(by_id) == len(d.messages)
    assert d.facts
    for fact in d.facts:
        needle = fact.answer.casefold()
        holders = [m.message_id for m in d.messages if needle in m.text().casefold()]
        assert holders == [fact.message_id]
        assert fact.answer in by_id[fact.message_id].text()
        assert by_id[fact.message_id].metadata["name"] == fact.speaker
        assert needle not in fact.question.casefold()
        if fact.kind == "change":
            assert fact.superseded is not None
            first = next(i for i, m in enumerate(d.messages) if fact.superseded.casefold() in m.text().casefold())
            assert first < d.messages.index(by_id[fact.message_id])  # the first plan came before the change


def test_both_people_state_facts_of_every_kind_spread_over_the_chat() -> None:
    dialogues = [generate_dialogue(30_000, seed=seed) for seed in range(5)]
    assert len({d.speakers for d in dialogues}) > 1
    assert {f.kind for d in dialogues for f in d.facts} == {"fact", "date", "plan", "change"}
    for d in dialogues:
        assert {f.speaker for f in d.facts} == set(d.speakers)
        index = {m.message_id: i for i, m in enumerate(d.messages)}
        assert max(index[f.message_id] for f in d.facts) > len(d.messages) // 2  # not bunched at the start
        assert d.fact_by_topic(d.facts[0].topic) == d.facts[0]


def test_a_bad_target_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="target_tokens"):
        generate_dialogue(0)
