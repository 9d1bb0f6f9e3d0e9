"""Fact retention on a second kind of conversation: long coding-agent sessions, where the assistant's own words and
the tool results carry the facts.

LongMemEval is user-assistant chat, and a strategy tuned on it (rank the user's statements first, clear long
assistant replies) can look good there and lose the facts of an agent session. This set is built differently:
`windowkeeper.testing.sessiongen` writes coding-agent sessions of ``--tokens`` tokens each (a system prompt, user
requests, parallel tool calls, file reads, test logs, stack traces, decisions and measurements) and labels every
fact it plants (goal, constraint, file path, decision, error, number) with the message that states it. Decisions
and measurements are stated by the assistant or a tool, never by the user.

Each session (one per seed) is fed to every strategy call by call, the way an agent calls the model. Then:

* final view: share of the session's distinct facts still in the view (text or summary), and whether the probe
  fact (below) is in it;
* question asked: one more step whose only new message is a question about the probe fact, a decision or a
  measurement from the first half of the session (so it has left every budget's view): "While we worked on
  <goal>, what did we decide?" / "...what did we measure for <metric>?". The question names the task, never the
  answer, so recall has to find it by what surrounds it.

    python bench/agent_retention.py [--sessions 20] [--tokens 120000] [--budgets 2000 4000 8000 16000 32000]
        [--only "sliding window" TokenBudgetContextManager] [--compare-recall] [--memory] [--json out.json]

``--compare-recall`` adds the budget manager with recall off and the other managers with recall on;
``--memory`` adds the three-tier memory (left out by default: it is the slowest strategy on 120k-token sessions).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _common import fresh_counter, print_table

from windowkeeper.evaluation.lineup import standard_lineup
from windowkeeper.evaluation.replay import call_points, view_text
from windowkeeper.messages import Message
from windowkeeper.testing.sessiongen import Fact, GeneratedSession, generate_session_for_tokens

OURS = "TokenBudgetContextManager"
SLIDING = "sliding window"


@dataclass(frozen=True)
class Probe:
    """The question asked at the end of a session and the fact that answers it."""

    fact: Fact
    question: str


def pick_probe(session: GeneratedSession, seed: int) -> Probe:
    """A decision or measurement from the first half of the session, with a question naming its task."""
    half = len(session.messages) // 2
    index = {str(m.message_id): i for i, m in enumerate(session.messages)}
    goals: list[tuple[int, str]] = [(index[f.message_id], f.text) for f in session.facts if f.kind == "goal"]
    candidates = [f for f in session.facts if f.kind in ("decision", "number") and index[f.message_id] < half and goals]
    fact = random.Random(seed).choice(candidates)
    at = index[fact.message_id]
    goal = max(((i, text) for i, text in goals if i <= at), default=goals[0])[1]
    if fact.kind == "decision":
        question = f"While we worked on this task: {goal} - what exactly did we decide to do about it?"
    else:
        metric = fact.text.split(":")[0]
        question = f"While we worked on this task: {goal} - what {metric} did we measure afterwards?"
    return Probe(fact, question)


def steps_of(messages: Sequence[Message]) -> list[list[Message]]:
    """What is new before each model call (each assistant message), then the session's tail."""
    steps: list[list[Message]] = []
    start = 0
    for point in call_points(messages):
        steps.append(list(messages[start:point]))
        start = point
    steps.append(list(messages[start:]))
    return [s for s in steps if s]


@dataclass
class Tally:
    facts_total: int = 0
    facts_kept: int = 0
    probes: int = 0
    probe_hits: int = 0
    seconds: float = 0.0

    def add(self, text: str, facts: Sequence[str], probe: str) -> None:
        self.facts_total += len(facts)
        self.facts_kept += sum(1 for f in facts if f.casefold() in text)
        self.probes += 1
        self.probe_hits += probe.casefold() in text

    def row(self, name: str) -> list[object]:
        share = f"{100 * self.facts_kept / self.facts_total:.1f}%" if self.facts_total else "-"
        return [name, share, f"{self.probe_hits}/{self.probes}", f"{self.seconds:.1f}"]

    def as_dict(self) -> dict[str, Any]:
        return {
            "facts": self.facts_kept / self.facts_total if self.facts_total else 0.0,
            "probe_hits": self.probe_hits,
            "probes": self.probes,
            "cpu_s": round(self.seconds, 2),
        }


async def run_session(
    session: GeneratedSession, probe: Probe, budget: int, args: argparse.Namespace, tallies: dict[str, dict[str, Tally]]
) -> None:
    counter = fresh_counter()
    facts = sorted({f.text for f in session.facts})
    steps = steps_of(session.messages)
    question = Message.text_message(probe.question, role="user", message_id=f"probe-{session.seed}")
    lineup = standard_lineup(budget, counter=counter, memory=args.memory, compare_recall=args.compare_recall)
    for strategy in lineup:
        if args.only and strategy.name not in args.only:
            continue
        final = tallies["final"].setdefault(strategy.name, Tally())
        asked = tallies["asked"].setdefault(strategy.name, Tally())
        started = time.process_time()
        view = None
        for step in steps:
            view = await strategy.step(step)
        assert view is not None
        final.seconds += time.process_time() - started
        final.add(view_text(view).casefold(), facts, probe.fact.text)
        started = time.process_time()
        asked_view = await strategy.step([question])
        asked.seconds += time.process_time() - started
        asked.add(view_text(asked_view).casefold(), facts, probe.fact.text)


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=20, help="generated sessions (seeds 1..N)")
    parser.add_argument("--tokens", type=int, default=120_000, help="tokens of history per session")
    parser.add_argument("--budgets", type=int, nargs="+", default=[2000, 4000, 8000, 16000, 32000])
    parser.add_argument("--only", nargs="+", default=None, help="strategy names to run (default: all)")
    parser.add_argument(
        "--compare-recall",
        action="store_true",
        help="add the budget manager with recall off and the other managers with recall on",
    )
    parser.add_argument("--memory", action="store_true", help="add the three-tier memory to the line-up")
    parser.add_argument("--json", type=Path, default=None, help="also write the results to this file")
    args = parser.parse_args(argv)

    counter = fresh_counter()
    sessions = [
        generate_session_for_tokens(args.tokens, counter=counter, seed=seed) for seed in range(1, args.sessions + 1)
    ]
    probes = [pick_probe(s, s.seed) for s in sessions]
    kinds = sorted({p.fact.kind for p in probes})
    print(
        f"generated coding-agent sessions: {len(sessions)} of ~{args.tokens:,} tokens, "
        f"{sum(len(s.messages) for s in sessions) / len(sessions):.0f} messages and "
        f"{sum(len({f.text for f in s.facts}) for s in sessions) / len(sessions):.0f} distinct facts on average; "
        f"probe kinds: {', '.join(kinds)}"
    )
    headers = ["strategy", "facts kept", "probe in view", "CPU s"]
    results: dict[str, Any] = {}
    for budget in args.budgets:
        tallies: dict[str, dict[str, Tally]] = {"final": {}, "asked": {}}
        for session, probe in zip(sessions, probes, strict=True):
            asyncio.run(run_session(session, probe, budget, args, tallies))
        results[str(budget)] = {}
        for view in ("final", "asked"):
            title = f"\nbudget {budget:,}, {'final view' if view == 'final' else 'question asked'}"
            print_table(headers, [t.row(name) for name, t in tallies[view].items()], title=title)
            results[str(budget)][view] = {name: t.as_dict() for name, t in tallies[view].items()}
            if OURS in tallies[view] and SLIDING in tallies[view]:
                ours, sliding = tallies[view][OURS], tallies[view][SLIDING]
                print(
                    f"{view}: budget manager vs sliding window: facts kept {ours.facts_kept} vs {sliding.facts_kept}, "
                    f"probe in view {ours.probe_hits} vs {sliding.probe_hits}"
                )
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2), encoding="utf-8")
    return results


if __name__ == "__main__":
    main()
