"""Retention on the project's three kinds of conversation, every manager against a window and BM25-fill.

Kinds (each case is one long conversation and one question whose answer is stated once in it):

* ``chat``: LongMemEval-S dev, the questions whose answer is word for word in the ~104k-token haystack (a user
  talking to an assistant);
* ``agent``: generated coding-agent sessions (`testing.sessiongen`, twice ``--tokens`` long, the probe of
  ``agent_retention.py``: a decision or measurement from the first half); ``tau``: chained tau-bench trajectories,
  which have no question and are measured for budgets and prefix stability only;
* ``dialogue``: two people chatting over many sessions (`testing.dialoguegen`), one planted fact per case.

Every strategy is driven call by call (a chat: one call per user turn; an agent session: one per assistant
message). Per call the view is assembled and counted exactly (o200k) as the model would receive it: **over**
counts calls whose prompt exceeds the budget though a smaller one answering the same turn would fit,
**unit>budget** the calls over it because the newest unit alone is (with the system text and the user message of
its turn; `windowkeeper.evaluation.replay.unit_floor`), **stable** is the share of calls whose prompt starts with
the whole previous prompt (what a provider's prompt cache reuses). After the last call the **final** view is
scored (is the answer in it, as words of its own, machine time stamps left out: `evaluation.replay.answer_shown`;
a plain substring test counted "33" inside a summary header's "18:33:05", so short numeric answers changed from run
to run); then one more call whose only new message is the question gives the **asked** view.

The peer is **BM25-fill** (SQLite FTS5, the standard library's, ranked by ``bm25()``): before every call it
rebuilds the prompt from the newest units up to ``--recent-share`` of the budget, then the units that rank highest
for the newest user message (at the asked call: the question), then newer units again while they fit, in
conversation order. With no user text to search it is a sliding window. It may change the whole prompt on every
call, so its stable share is reported beside ours.

    python bench/retention.py [--kinds chat agent dialogue] [--budgets 2000 4000 8000 16000 32000]
        [--cases 12] [--tokens 60000] [--recent-share 0.25] [--only NAME ...] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _common import fresh_counter, print_table, require_data
from agent_retention import pick_probe
from agent_retention import steps_of as agent_steps
from longmemeval_retention import chat_steps

from windowkeeper.context.budget import TokenBudgetContextManager
from windowkeeper.evaluation.datasets import chain_trajectories, load_longmemeval
from windowkeeper.evaluation.lineup import RESERVE_TOKENS, memory_thresholds, standard_lineup
from windowkeeper.evaluation.loaders import load_trajectories
from windowkeeper.evaluation.replay import answer_shown, assembled, unit_floor, view_text
from windowkeeper.evaluation.strategies import ManagedStrategy, Strategy, View
from windowkeeper.memory import InMemoryMemory, MemoryContextManager
from windowkeeper.messages import Message
from windowkeeper.summarize import ExtractiveSummarizer
from windowkeeper.testing.dialoguegen import generate_dialogue
from windowkeeper.testing.sessiongen import generate_session_for_tokens
from windowkeeper.tokens import TokenCounter
from windowkeeper.units import group_units

BM25 = "BM25-fill"
LOW_PREFIX = "TokenBudgetContextManager (low "
CAP_PREFIX = "TokenBudgetContextManager (chat summary <= "
TARGET_PREFIX = "three-tier memory (recall, summarization target "
SLIDING = "sliding window"
KINDS = ("chat", "agent", "tau", "dialogue")
_WORD = re.compile(r"\w+")


@dataclass
class Case:
    """One conversation as the calls that feed it, and the question asked after it (None: measured only)."""

    name: str
    kind: str
    steps: list[list[Message]]
    question: Message | None
    answer: str | None


def chat_cases(n: int) -> list[Case]:
    files = sorted(require_data("longmemeval/s_dev").glob("*.json"))
    cases: list[Case] = []
    for path in files:
        q = load_longmemeval(path)
        if not q.answer_in_history:
            continue
        date = json.loads(path.read_text(encoding="utf-8")).get("question_date")
        metadata = {"session_date": date} if date else {}
        question = Message.text_message(q.question, role="user", message_id=f"{q.question_id}:q", metadata=metadata)
        cases.append(Case(q.question_id, "chat", chat_steps(q.messages), question, q.answer))
        if len(cases) >= n:
            break
    return cases


def agent_cases(n: int, tokens: int, counter: TokenCounter) -> list[Case]:
    cases: list[Case] = []
    for seed in range(1, n + 1):
        session = generate_session_for_tokens(tokens, counter=counter, seed=seed)
        probe = pick_probe(session, seed)
        question = Message.text_message(probe.question, role="user", message_id=f"probe-{seed}")
        cases.append(Case(f"gen-{seed}", "agent", agent_steps(session.messages), question, probe.fact.text))
    return cases


def tau_cases(calls: int) -> list[Case]:
    """Chained tau-bench trajectories: no question to ask, measured for budgets and prefix stability."""
    trajectories = load_trajectories(require_data("tau_bench/gpt-4o-airline.json"))
    chained = chain_trajectories([messages for _, messages in trajectories], min_calls=calls)
    return [Case("tau-bench chain", "tau", agent_steps(chained), None, None)]


def dialogue_cases(n: int, tokens: int, counter: TokenCounter) -> list[Case]:
    cases: list[Case] = []
    for seed in range(1, n + 1):
        d = generate_dialogue(tokens, seed=seed, counter=counter)
        fact = random.Random(f"question:{seed}").choice(d.facts)
        question = Message.text_message(fact.question, role="user", message_id=f"d{seed}:question")
        cases.append(Case(f"dialogue-{seed}", "dialogue", chat_steps(d.messages), question, fact.answer))
    return cases


class BM25Fill:
    """The retrieval peer: every call rebuilds the prompt from the newest units and the BM25 top units."""

    name = BM25

    def __init__(self, budget: int, counter: TokenCounter, recent_share: float) -> None:
        self.budget = budget
        self.counter = counter
        self.recent_share = recent_share
        self.systems: list[Message] = []
        self.history: list[Message] = []
        self.unit_of: list[int] = []  # message index -> unit index
        self.units: list[tuple[int, int]] = []  # (start, end) in history
        self.sizes: list[int] = []
        self.query = ""
        self.db = sqlite3.connect(":memory:")
        self.db.execute("CREATE VIRTUAL TABLE t USING fts5(body, tokenize='porter unicode61')")

    def _add(self, new: Sequence[Message]) -> None:
        tail = self.units[-1][0] if self.units else 0
        for msg in new:
            if msg.role == "system" and not self.history:
                self.systems.append(msg)
                continue
            self.history.append(msg)
            text = view_text(View([msg]))
            if text.strip():
                self.db.execute("INSERT INTO t(rowid, body) VALUES (?, ?)", (len(self.history) - 1, text))
        del self.units[len(self.units) - 1 if self.units else 0 :]
        del self.sizes[len(self.units) :]
        del self.unit_of[tail:]
        for unit in group_units(self.history[tail:]):
            index = len(self.units)
            start, end = tail + unit.start, tail + unit.end
            self.units.append((start, end))
            self.sizes.append(sum(self.counter.count_message(m) for m in self.history[start:end]))
            self.unit_of.extend([index] * (end - start))
        for msg in new:
            if msg.role == "user":
                self.query = msg.text()

    def _ranked(self) -> list[int]:
        words = list(dict.fromkeys(w.casefold() for w in _WORD.findall(self.query)))
        if not words:
            return []
        match = " OR ".join('"' + w.replace('"', "") + '"' for w in words)
        rows = self.db.execute("SELECT rowid FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT 200", (match,))
        return list(dict.fromkeys(self.unit_of[r] for (r,) in rows if r < len(self.unit_of)))

    async def step(self, new_messages: Sequence[Message]) -> View:
        self._add(new_messages)
        room = self.budget - self.counter.count_messages(self.systems)
        chosen: set[int] = set()
        used = 0
        newest = len(self.units) - 1
        for index in range(newest, -1, -1):  # the newest units, up to the recent share (the newest always)
            if used + self.sizes[index] > room * self.recent_share and index != newest:
                break
            chosen.add(index)
            used += self.sizes[index]
        for index in self._ranked():
            if index not in chosen and used + self.sizes[index] <= room:
                chosen.add(index)
                used += self.sizes[index]
        for index in range(newest, -1, -1):
            if index not in chosen and used + self.sizes[index] <= room:
                chosen.add(index)
                used += self.sizes[index]
        ordered = sorted(chosen)
        # a provider needs a user turn first: leading non-user units go
        while len(ordered) > 1 and self.history[self.units[ordered[0]][0]].role != "user":
            ordered.pop(0)
        messages = [m for i in ordered for m in self.history[self.units[i][0] : self.units[i][1]]]
        return View([*self.systems, *messages])


class Measure:
    """Per call: the prompt's exact size and whether it starts with the whole previous prompt.

    A prompt is the system text (system messages and the summary under its header) then the messages, as
    `windowkeeper.prompt` assembles and counts it; it is stable when the summary is unchanged and the previous
    messages are its first messages. A stable call is counted by what it appended, so measuring stays linear in
    what is new.
    """

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter
        self.keys: list[str] = []
        self.summary: str | None = None
        self.tokens = 0

    def observe(self, view: View) -> tuple[int, bool | None]:
        keys = [m.fingerprint() for m in view.messages]
        first = not self.keys and self.tokens == 0
        stable = view.summary == self.summary and keys[: len(self.keys)] == self.keys
        count = self.counter.count_message
        if stable and not first:
            self.tokens += sum(count(m) for m in view.messages[len(self.keys) :])
        else:
            self.tokens = assembled(view, self.counter).input_tokens
        self.keys, self.summary = keys, view.summary
        return self.tokens, None if first else stable


@dataclass
class Tally:
    counter: TokenCounter
    cases: int = 0
    final_hits: int = 0
    asked_hits: int = 0
    calls: int = 0
    over: int = 0
    unit_over: int = 0
    worst: float = 0.0
    stable: int = 0
    judged: int = 0
    seconds: float = 0.0
    misses: list[str] = field(default_factory=list)
    final_misses: list[str] = field(default_factory=list)

    def row(self, name: str) -> list[object]:
        share = f"{100 * self.stable / self.judged:.1f}%" if self.judged else "-"
        scored = f"{self.final_hits}/{self.cases}" if self.cases else "-"
        asked = f"{self.asked_hits}/{self.cases}" if self.cases else "-"
        over = f"{self.over}/{self.calls}"
        return [name, scored, asked, share, over, self.unit_over, f"{self.worst:.2f}", f"{self.seconds:.1f}"]

    def observe(self, view: View, tokens: int, budget: int) -> None:
        """One call's prompt size: over the budget because of the manager, or because the newest unit alone is."""
        self.calls += 1
        self.worst = max(self.worst, tokens / budget)
        if tokens > budget:
            if unit_floor(view, self.counter) > budget:
                self.unit_over += 1
            else:
                self.over += 1

    def as_dict(self) -> dict[str, Any]:
        return {
            "cases": self.cases,
            "final": self.final_hits,
            "asked": self.asked_hits,
            "stable": self.stable / self.judged if self.judged else None,
            "calls": self.calls,
            "over": self.over,
            "unit_over": self.unit_over,
            "worst": round(self.worst, 3),
            "cpu_s": round(self.seconds, 2),
        }


def budget_manager(budget: int, counter: TokenCounter, **options: Any) -> TokenBudgetContextManager[Any]:
    """The lineup's budget manager for ``budget``, with ``options`` changed."""
    return TokenBudgetContextManager(
        max_tokens=budget + RESERVE_TOKENS,
        reserve_tokens=RESERVE_TOKENS,
        counter=counter,
        summarizer=ExtractiveSummarizer(counter=counter),
        **options,
    )


def lineup(budget: int, counter: TokenCounter, args: argparse.Namespace) -> list[Strategy]:
    chosen: list[Strategy] = [
        s
        for s in standard_lineup(budget, counter=counter, memory=not args.no_memory, compare_recall=True)
        if s.name != "no management"
    ]
    chosen.append(BM25Fill(budget, counter, args.recent_share))
    # the budget manager as in the lineup, cutting to another depth (how much of the budget its view holds against
    # how often its prefix holds) or with its plain-chat summary held to at most ``cap`` tokens
    for low in args.low_watermarks or ():
        chosen.append(ManagedStrategy(f"{LOW_PREFIX}{low:g})", budget_manager(budget, counter, low_watermark=low)))
    for cap in args.chat_summary_caps or ():
        manager = budget_manager(budget, counter)
        manager.chat_summary_budget = min(manager.chat_summary_budget, cap)
        chosen.append(ManagedStrategy(f"{CAP_PREFIX}{cap})", manager))
    # the three-tier memory (with recall) whose summaries cut only down to a share of its threshold
    for target in args.memory_targets or ():
        thresholds = {**memory_thresholds(budget), "summarization_target": target}
        memory = InMemoryMemory(thresholds=thresholds, counter=counter)
        chosen.append(ManagedStrategy(f"{TARGET_PREFIX}{target:g})", MemoryContextManager(memory, recall=True)))
    extra = (LOW_PREFIX, CAP_PREFIX, TARGET_PREFIX)
    return [s for s in chosen if not args.only or s.name in args.only or s.name.startswith(extra)]


async def run_case(case: Case, budget: int, args: argparse.Namespace, tallies: dict[str, Tally]) -> None:
    counter = fresh_counter()
    for strategy in lineup(budget, counter, args):
        tally = tallies.setdefault(strategy.name, Tally(counter))
        measure = Measure(counter)
        started = time.process_time()
        view: View | None = None
        for step in case.steps:
            view = await strategy.step(step)
            tokens, stable = measure.observe(view)
            tally.observe(view, tokens, budget)
            if stable is not None:
                tally.judged += 1
                tally.stable += stable
        assert view is not None
        if case.question is not None and case.answer is not None:
            answer = case.answer
            tally.cases += 1
            final = answer_shown(answer, view_text(view))
            tally.final_hits += final
            if not final:
                tally.final_misses.append(case.name)
            asked = await strategy.step([case.question])
            tokens, _ = measure.observe(asked)
            tally.observe(asked, tokens, budget)
            shown = View([m for m in asked.messages if m.message_id != case.question.message_id], asked.summary)
            hit = answer_shown(answer, view_text(shown))
            tally.asked_hits += hit
            if not hit:
                tally.misses.append(case.name)
        tally.seconds += time.process_time() - started
        if isinstance(strategy, BM25Fill):
            strategy.db.close()


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kinds", nargs="+", choices=KINDS, default=list(KINDS))
    parser.add_argument("--budgets", type=int, nargs="+", default=[2000, 4000, 8000, 16000, 32000])
    parser.add_argument("--cases", type=int, default=12, help="conversations per kind (chat: the first N)")
    parser.add_argument("--tokens", type=int, default=60_000, help="tokens per generated conversation")
    parser.add_argument("--tau-calls", type=int, default=400, help="model calls of the chained tau-bench session")
    parser.add_argument("--recent-share", type=float, default=0.25, help="BM25-fill: budget share of newest units")
    parser.add_argument("--only", nargs="+", default=None, help="strategy names to run (default: all)")
    parser.add_argument("--no-memory", action="store_true", help="leave the three-tier memory out")
    parser.add_argument(
        "--low-watermarks",
        type=float,
        nargs="+",
        default=None,
        help="also run the budget manager with each of these low watermarks (its default is 0.6)",
    )
    parser.add_argument(
        "--chat-summary-caps",
        type=int,
        nargs="+",
        default=None,
        help="also run the budget manager with its plain-chat summary held to each of these token counts",
    )
    parser.add_argument(
        "--memory-targets",
        type=float,
        nargs="+",
        default=None,
        help="also run the three-tier memory with recall with each of these summarization targets (default: off)",
    )
    parser.add_argument("--show-misses", action="store_true")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)

    counter = fresh_counter()
    results: dict[str, Any] = {}
    headers = ["strategy", "final", "asked", "stable", "over", "unit>budget", "worst", "CPU s"]
    for kind in args.kinds:
        if kind == "chat":
            cases = chat_cases(args.cases)
        elif kind == "agent":
            cases = agent_cases(args.cases, args.tokens * 2, counter)
        elif kind == "tau":
            cases = tau_cases(args.tau_calls)
        else:
            cases = dialogue_cases(args.cases, args.tokens, counter)
        scored = [c for c in cases if c.question is not None]
        print(f"\n== {kind}: {len(scored)} questions, {len(cases) - len(scored)} unscored sessions ==")
        results[kind] = {}
        for budget in args.budgets:
            tallies: dict[str, Tally] = {}
            for case in cases:
                asyncio.run(run_case(case, budget, args, tallies))
            print_table(headers, [t.row(name) for name, t in tallies.items()], title=f"\n{kind}, budget {budget:,}")
            results[kind][str(budget)] = {name: t.as_dict() for name, t in tallies.items()}
            if args.show_misses:
                for name, t in tallies.items():
                    print(f"  {name} asked misses: {', '.join(t.misses) or 'none'}")
                    print(f"  {name} final misses: {', '.join(t.final_misses) or 'none'}")
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2), encoding="utf-8")
    return results


if __name__ == "__main__":
    main()
