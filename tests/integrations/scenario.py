"""One scripted coding session every host runs against the fake OpenAI server, and what is measured on it.

The fake model answers each user turn with three tool calls (two file reads, one test run) and a final answer, so
a session of `TURNS` turns is ``4 * TURNS`` model calls. The tools return large deterministic outputs, so the
budget below is crossed several times: tool results get cleared, turns get summarized. Every host (windowkeeper's
own `Agent`, LangChain, LangGraph, the OpenAI Agents SDK) runs the very same script with the same manager settings,
and `analyze` measures the requests the fake server captured, the same way for each.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from windowkeeper import ExtractiveSummarizer, TokenBudgetContextManager
from windowkeeper.graph import ToolNode
from windowkeeper.llm.formats import from_openai_chat, from_responses_input
from windowkeeper.prompt import SUMMARY_HEADER
from windowkeeper.testing.fake_servers import FakeReply, FakeToolCall, RecordedRequest
from windowkeeper.units import validate

TURNS = 9
CALLS = 4 * TURNS
SYSTEM = "You are a careful coding agent. Read the code before changing it and run the tests after every change."
MAX_TOKENS = 6000
RESERVE_TOKENS = 1000

Api = Literal["chat", "responses"]


def _file_text(path: str) -> str:
    seed = int(hashlib.sha256(path.encode()).hexdigest()[:8], 16)
    lines = [f'"""Module {path}: helpers for billing run {seed % 97}."""', ""]
    for n in range(24):
        lines.append(f"def step_{n}(value: int) -> int:")
        lines.append(f"    # step {n} of {path} scales by {(seed >> n) % 13 + 2} and shifts by {n * 7 % 11}")
        lines.append(f"    return value * {(seed >> n) % 13 + 2} + {n * 7 % 11}")
    return "\n".join(lines)


def read_file(path: str) -> str:
    """Read a file of the repository.

    Args:
        path: Path of the file, relative to the repository root.
    """
    return _file_text(path)


def run_tests(target: str) -> str:
    """Run the test suite on a target and return its log.

    Args:
        target: Test file or directory.
    """
    failed = len(target) % 3
    rows = [f"{target}::test_case_{n} PASSED" for n in range(40)]
    return "\n".join([*rows, f"==== {failed} failed, {40 - failed} passed in 1.{len(target)}s ===="])


def tool_specs() -> list[dict[str, Any]]:
    """The tools' schemas as windowkeeper's ToolNode sends them (and as every manager here counts them)."""
    return ToolNode([read_file, run_tests]).tool_specs()


def user_text(turn: int) -> str:
    return f"Turn {turn}: please review src/billing/part_{turn}.py against src/billing/base_{turn}.py and test it."


def script() -> list[FakeReply]:
    """The fake model's replies, in order, for the whole session (ids fixed so every host sees the same)."""
    out: list[FakeReply] = []
    for turn in range(TURNS):
        calls = [
            FakeToolCall("read_file", {"path": f"src/billing/part_{turn}.py"}, id=f"c{turn}a"),
            FakeToolCall("read_file", {"path": f"src/billing/base_{turn}.py"}, id=f"c{turn}b"),
            FakeToolCall("run_tests", {"target": f"tests/test_part_{turn}.py"}, id=f"c{turn}c"),
        ]
        out.extend(FakeReply(tool_calls=(call,)) for call in calls)
        answer = f"Turn {turn} reviewed: part_{turn} matches base_{turn}; the tests of part {turn} pass."
        out.append(FakeReply(text=answer))
    return out


def make_manager(*, system_prompt: str | None = None) -> TokenBudgetContextManager[Any]:
    """The one manager configuration every host runs with."""
    return TokenBudgetContextManager(
        MAX_TOKENS,
        reserve_tokens=RESERVE_TOKENS,
        summarizer=ExtractiveSummarizer(),
        system_prompt=system_prompt,
        tools=tool_specs(),
    )


# -- measuring the captured requests ---------------------------------------------------------------------------


def _canon(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


@dataclass
class Report:
    """What the requests of one run show."""

    calls: int = 0
    problems: list[str] = field(default_factory=list)
    first_summary: int | None = None
    missing_summary: list[int] = field(default_factory=list)
    stable: int = 0

    @property
    def stable_share(self) -> float:
        """Share of calls after the first whose previous request is a prefix of this one (system included)."""
        return self.stable / (self.calls - 1) if self.calls > 1 else 0.0

    def line(self, name: str) -> str:
        return (
            f"{name}: {self.calls} calls, {len(self.problems)} invalid, first summary at call "
            f"{self.first_summary}, summary missing after it in {len(self.missing_summary)}, prefix-stable "
            f"{self.stable}/{self.calls - 1} = {100 * self.stable_share:.1f}%"
        )


def _parts(request: RecordedRequest, api: Api) -> tuple[list[str], str]:
    """``(canonical pieces of the request in send order, its system text)``; validates as a side job elsewhere."""
    body = request.json
    if api == "chat":
        messages = body["messages"]
        system = "\n".join(str(m.get("content")) for m in messages if m.get("role") in ("system", "developer"))
        return [_canon(m) for m in messages], system
    items = body["input"]
    instructions = body.get("instructions") or ""
    inline = "\n".join(
        _canon(i.get("content")) for i in items if isinstance(i, dict) and i.get("role") in ("system", "developer")
    )
    return [_canon(instructions), *(_canon(i) for i in items)], f"{instructions}\n{inline}"


def analyze(requests: Sequence[RecordedRequest], api: Api) -> Report:
    report = Report(calls=len(requests))
    previous: list[str] | None = None
    for k, request in enumerate(requests):
        body = request.json
        if api == "chat":
            messages = from_openai_chat(body["messages"])
        else:
            messages = from_responses_input(body["input"], body.get("instructions"))
        report.problems.extend(f"call {k}: {p}" for p in validate(messages, "openai"))
        pieces, system = _parts(request, api)
        if SUMMARY_HEADER in system:
            if report.first_summary is None:
                report.first_summary = k
        elif report.first_summary is not None:
            report.missing_summary.append(k)
        if previous is not None and pieces[: len(previous)] == previous:
            report.stable += 1
        previous = pieces
    return report


__all__ = [
    "CALLS",
    "MAX_TOKENS",
    "RESERVE_TOKENS",
    "SYSTEM",
    "TURNS",
    "Report",
    "analyze",
    "make_manager",
    "read_file",
    "run_tests",
    "script",
    "tool_specs",
    "user_text",
]
