"""Answer-in-view scoring: a short answer counts only as words of its own, never inside a machine time stamp."""

from __future__ import annotations

from windowkeeper.evaluation.replay import answer_shown


def test_a_number_inside_a_time_stamp_or_a_longer_number_is_not_the_answer() -> None:
    header = "[Summary of 25 earlier events, 2026-12-04T18:33:05.519356+00:00 to 2026-12-04T18:39:41Z]"
    assert not answer_shown("33", header)
    assert not answer_shown("2", header)
    assert not answer_shown("33", "the order holds 1335 items")
    assert answer_shown("33", f"{header}\nI have been running for 33 days now.")


def test_answers_match_as_words_ignoring_case() -> None:
    text = "We settled on a Lavender Gin Fizz; the budget is $400,000 (firm)."
    assert answer_shown("lavender gin fizz", text)
    assert answer_shown("$400,000", text)
    assert not answer_shown("$400", text)  # a prefix of a longer amount is a different amount
    assert not answer_shown("gin", "the engine stalled")
    assert not answer_shown("", text)
