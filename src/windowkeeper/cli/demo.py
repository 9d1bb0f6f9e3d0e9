"""``windowkeeper demo``: a generated long coding-agent session replayed through every strategy, offline."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from ..evaluation.lineup import standard_lineup
from ..evaluation.replay import ReplayReport, replay
from ..testing.sessiongen import generate_session


def run_demo(
    *, steps: int, budget: int, seed: int, on_call: Callable[[int, int], None] | None = None
) -> tuple[ReplayReport, int, int]:
    """The replay report, the number of messages of the generated session and its ground-truth facts."""
    session = generate_session(steps, seed=seed)
    report = asyncio.run(
        replay(session.messages, standard_lineup(budget), facts=[f.text for f in session.facts], on_call=on_call)
    )
    return report, len(session.messages), len(session.facts)
