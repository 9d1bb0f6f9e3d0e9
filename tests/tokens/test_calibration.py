"""CalibratedCounter: estimates move toward provider-reported prompt sizes."""

from __future__ import annotations

import pytest

from windowkeeper import ConfigurationError, Message
from windowkeeper.tokens import ApproxCounter, CalibratedCounter


def _messages() -> list[Message]:
    return [Message.text_message("x" * 396, message_id="a")]  # 99 + 4 overhead + 3 priming = 106


def test_first_report_sets_the_ratio_then_it_moves_by_alpha() -> None:
    base = ApproxCounter()
    counter = CalibratedCounter(base, alpha=0.5)
    messages = _messages()
    assert base.count_messages(messages) == 106
    assert counter.count_messages(messages) == 106
    assert counter.calibrate(messages, 212) == pytest.approx(2.0)
    assert counter.count_messages(messages) == 212
    assert counter.count_message(messages[0]) == 206
    assert counter.count_text("x" * 40) == 20
    assert counter.calibrate(messages, 106) == pytest.approx(1.5)
    assert counter.samples == 2
    assert counter.count_messages(messages) == 159


def test_absurd_reports_are_clamped_and_bad_input_rejected() -> None:
    counter = CalibratedCounter(ApproxCounter(), max_ratio=3.0)
    assert counter.calibrate(_messages(), 10_000_000) == 3.0
    with pytest.raises(ConfigurationError, match="reported_prompt_tokens"):
        counter.calibrate(_messages(), 0)
    with pytest.raises(ConfigurationError, match="alpha"):
        CalibratedCounter(ApproxCounter(), alpha=0)
    assert counter.count_text("") == 0
    assert counter.name == "calibrated:approx:4"
