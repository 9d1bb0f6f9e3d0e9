"""Pieces every benchmark shares: the peer's token counter, session sources, a CPU clock and a plain table.

The peer counter is written the way a LangChain user writes one for ``trim_messages``: a function over a list of
LangChain messages that encodes every message with tiktoken's ``o200k_base`` each time it is called (no cache,
because LangChain gives it nothing to key a cache on). It prices messages exactly like windowkeeper's
``TiktokenCounter`` (4 framing tokens a message, 3 a tool call, 3 for the reply priming, JSON arguments), so both
sides trim against the same numbers and the comparison measures only the work done.

Times are CPU seconds of this process (``time.process_time``): the benchmark machine is shared, and wall-clock
time would charge each side for whatever else was running. Both sides run in the same process, so only ratios
are reported as results.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from windowkeeper.evaluation.datasets import chain_trajectories, data_dir
from windowkeeper.evaluation.loaders import load_trajectories
from windowkeeper.messages import Message
from windowkeeper.testing.sessiongen import iter_steps
from windowkeeper.tokens import REPLY_PRIMING, TOOL_CALL_OVERHEAD, TiktokenCounter, tool_arguments_json
from windowkeeper.units import group_units

MESSAGE_FRAMING = 4  # windowkeeper's MESSAGE_OVERHEAD + ROLE_TOKENS
TAU_FILE = "tau_bench/gpt-4o-airline.json"
SWE_DIR = "swe_agent"


class MissingDataError(SystemExit):
    """The shared data folder (or one dataset in it) is absent; the message says where it was looked for."""


def require_data(relative: str) -> Path:
    path = data_dir() / relative
    if not path.exists():
        raise MissingDataError(
            f"{path} does not exist: the benchmark reads third-party data from ../shared/data (or "
            "$WINDOWKEEPER_DATA_DIR); point WINDOWKEEPER_DATA_DIR at it, or use the generated source where offered"
        )
    return path


def lc_exact_counter(encoding: Any) -> Callable[[Sequence[Any]], int]:
    """A ``token_counter`` for ``trim_messages`` that re-encodes every message on every call."""
    from langchain_core.messages import AIMessage

    encode = encoding.encode_ordinary

    def text_tokens(content: Any) -> int:
        if isinstance(content, str):
            return len(encode(content)) if content else 0
        total = 0
        for part in content:
            if isinstance(part, str):
                total += len(encode(part))
            elif isinstance(part, dict):
                text = part.get("text") or part.get("reasoning") or ""
                total += len(encode(text)) if isinstance(text, str) and text else 0
        return total

    def count(messages: Sequence[Any]) -> int:
        total = REPLY_PRIMING
        for message in messages:
            total += MESSAGE_FRAMING + text_tokens(message.content)
            if isinstance(message, AIMessage):
                for call in message.tool_calls:
                    total += TOOL_CALL_OVERHEAD + len(encode(call["name"]))
                    total += len(encode(tool_arguments_json(call["args"])))
        return total

    return count


def fresh_counter() -> TiktokenCounter:
    """An exact ``o200k_base`` counter with an empty memo (the shared default one may be warm already)."""
    counter = TiktokenCounter("o200k_base")
    counter.count_text("warm up")  # load the encoding outside every timed region
    return counter


def tau_trajectories() -> list[list[Message]]:
    return [msgs for _, msgs in load_trajectories(require_data(TAU_FILE))]


def swe_trajectories() -> list[list[Message]]:
    return [msgs for _, msgs in load_trajectories(require_data(SWE_DIR))]


def chained(source: str, min_calls: int) -> list[Message]:
    """Recorded trajectories of one dataset chained into a session of at least ``min_calls`` model calls."""
    if source == "tau":
        return chain_trajectories(tau_trajectories(), min_calls=min_calls)
    if source == "swe":
        return chain_trajectories(swe_trajectories(), min_calls=min_calls)
    raise SystemExit(f"unknown source {source!r}; use 'tau' or 'swe'")


def call_chunks(messages: Sequence[Message], calls: int) -> list[list[Message]]:
    """What is new before each of the first ``calls`` model calls (a call = a recorded assistant message)."""
    points = [i for i, m in enumerate(messages) if m.role == "assistant" and i > 0][:calls]
    chunks: list[list[Message]] = []
    start = 0
    for point in points:
        chunks.append(list(messages[start:point]))
        start = point
    return chunks


def steps_from(items: Sequence[dict[str, Any]], start: int, count: int, role: str) -> list[list[dict[str, Any]]]:
    """The first ``count`` runs of provider dicts from ``start``, each from one item of ``role`` up to the next."""
    steps: list[list[dict[str, Any]]] = []
    i = start
    while len(steps) < count and i < len(items):
        j = i + 1
        while j < len(items) and items[j].get("role") != role:
            j += 1
        steps.append(list(items[i:j]))
        i = j
    return steps


class CpuClock:
    """Accumulates CPU seconds over the regions it times."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.calls = 0

    @contextmanager
    def timing(self) -> Iterator[None]:
        started = time.process_time()
        try:
            yield
        finally:
            self.seconds += time.process_time() - started
            self.calls += 1


def print_table(headers: Sequence[str], rows: Sequence[Sequence[object]], *, title: str | None = None) -> None:
    """A fixed-width table on stdout (right-aligned except the first column)."""
    cells = [[str(h) for h in headers], *[[_fmt(v) for v in row] for row in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    if title:
        print(title)
    for n, row in enumerate(cells):
        line = "  ".join(c.ljust(widths[i]) if i == 0 else c.rjust(widths[i]) for i, c in enumerate(row))
        print(line.rstrip())
        if n == 0:
            print("  ".join("-" * w for w in widths))
    sys.stdout.flush()


def _fmt(value: object) -> str:
    if isinstance(value, float):
        return f"{value:,.4f}" if abs(value) < 10 else f"{value:,.1f}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)


def build_history(n_messages: int, seed: int, *, whole_units: bool = True) -> list[Message]:
    """The first ``n_messages`` of a generated session (seeded), the benches' shared long history.

    With ``whole_units`` a trailing tool call still waiting for its results is cut off, so the history is valid.
    """
    session = None
    for session in iter_steps(seed=seed):
        if len(session.messages) >= n_messages:
            break
    assert session is not None
    messages = list(session.messages[:n_messages])
    if whole_units:
        units = group_units(messages)
        if units and units[-1].kind == "pending":
            messages = messages[: units[-1].start]
    return messages
