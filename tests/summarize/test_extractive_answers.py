"""A short reply to the other speaker's question is kept for the question's worth (`ANSWER_BONUS`).

In a chat between two people a fact is often an answer: "Who are you seeing in August?" / "Hollow Parade!". The
question scored as a question (2.0) and its answer only as a name (1.5), so a summary kept the question and
dropped what it asked for (session 25: a two-person chat's planted fact left the budget manager's view at 32k).
"""

from __future__ import annotations

from windowkeeper.messages import Message
from windowkeeper.summarize import ExtractiveSummarizer


def _chat(lines: list[tuple[str, str]]) -> list[Message]:
    return [Message.text_message(text, role=role, message_id=f"m{i}") for i, (role, text) in enumerate(lines)]


def _filler(n: int) -> list[tuple[str, str]]:
    # one speaker's small talk that names someone: each scores a little above the answer's own score (a name)
    names = [f"{first} {last}" for first in _FIRST for last in _LAST][:n]
    return [("assistant", f"Ha, classic {name}.") for name in names]


_FIRST = ["Maya", "Tomas", "Ingrid", "Ravi", "Beatriz", "Elodie", "Zainab", "Signe"]
_LAST = ["Okafor", "Lindqvist", "Moreau", "Haddad", "Kowalski", "Tanaka"]


def test_a_short_answer_to_a_question_outranks_small_talk_of_its_own_score() -> None:
    summarizer = ExtractiveSummarizer()
    lines = [("user", "Who are you seeing in August?"), ("assistant", "Hollow Parade!"), *_filler(40)]
    summary = summarizer.extract(_chat(lines), max_tokens=60)
    assert "Who are you seeing in August?" in summary
    assert "Hollow Parade!" in summary


def test_only_a_short_reply_by_the_other_speaker_is_taken_for_the_answer() -> None:
    from windowkeeper.summarize.extractive import SHORT_REPLY_CHARS

    summarizer = ExtractiveSummarizer()
    long_reply = "Hollow Parade, " + "and then a long story about the venue " * 4 + "there."
    assert len(long_reply) > SHORT_REPLY_CHARS
    lines = [("user", "Who are you seeing in August?"), ("assistant", long_reply), *_filler(40)]
    assert "Hollow Parade" not in summarizer.extract(_chat(lines), max_tokens=60)
    # the same speaker going on after their own question is not an answer either
    lines = [("assistant", "Who are you seeing in August?"), ("assistant", "Hollow Parade!"), *_filler(40)]
    assert "Hollow Parade!" not in summarizer.extract(_chat(lines), max_tokens=60)
