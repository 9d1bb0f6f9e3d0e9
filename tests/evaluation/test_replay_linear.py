"""The replay behind `windowkeeper demo` and `simulate` costs what each call appends, with unchanged results."""

from __future__ import annotations

import pytest

from windowkeeper.context.baselines import sliding_window
from windowkeeper.evaluation.replay import _Measure, assembled, call_points
from windowkeeper.evaluation.strategies import SlidingWindow, View
from windowkeeper.testing.sessiongen import generate_session
from windowkeeper.tokens import default_counter
from windowkeeper.units import validate


@pytest.mark.parametrize(("budget", "seed"), [(4000, 1), (8000, 1), (8000, 2), (32000, 2)])
async def test_incremental_sliding_window_gives_the_whole_history_view(budget: int, seed: int) -> None:
    messages = generate_session(150, seed=seed).messages
    strategy = SlidingWindow(budget)
    start = 0
    for point in call_points(messages):
        view = await strategy.step(messages[start:point])
        start = point
        assert [m.message_id for m in view.messages] == [m.message_id for m in sliding_window(messages[:point], budget)]


def test_incremental_measure_matches_a_full_measure() -> None:
    counter = default_counter()
    messages = generate_session(60, seed=3).messages
    measure = _Measure(counter, ("openai", "anthropic"))
    for point in call_points(messages):
        view = View(list(messages[:point]))
        measured, _, stable = measure.observe(view)
        request = assembled(view, counter)
        assert measured.tokens == request.input_tokens
        assert measured.items == request.pieces()
        assert {(prov, p.code) for prov, p in measured.problems} == {
            (prov, p.code) for prov in ("openai", "anthropic") for p in validate(request.to_messages(), prov)
        }
        assert stable in (None, True)
