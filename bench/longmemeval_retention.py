"""Fact retention on LongMemEval-S: what each strategy shows the model after ~100k tokens of chat history.

Each dev question's haystack (38-58 chat sessions, ~104k tokens) is one long conversation. Every strategy of the
standard line-up is driven through it the way a chat assistant calls the model: one step per user message and
the assistant reply after it (the system prompt arrives with the first step), keeping its own state between
steps. Two views are scored per strategy:

* final: the view after the last step (no question asked yet);
* question asked: one more step whose only new message is the question, as the newest user message dated
  ``question_date``: the view the model would answer from. Query-aware recall acts here. The question message
  itself is left out of the scoring (two questions of the subset name their answer: "which first, A or B?").

For each view:

* evidence kept: share of the evidence turns (``has_answer``) whose full text is in the view;
* answer in view: whether the answer string appears in the view (case-insensitive substring, the test of
  ``MemoryQuestion.answer_in_history``), over all questions and over the questions whose answer appears word for
  word in the history (the only ones where a view *can* contain it);
* strict: the same on that subset, but the answer must stand as words of its own, machine time stamps left out
  (`evaluation.replay.answer_shown`: "2" must not match inside "2023", "33" not in a summary header's "18:33:05").

Targets (issue 11): question asked, answer in view on the answer-in-history subset, the budget manager >= 3x the
sliding window at 4k and >= 2x at 8k; final view >= the sliding window at every budget.

    python bench/longmemeval_retention.py [--budgets 2000 4000 8000 16000 32000] [--questions N]
        [--only "sliding window" TokenBudgetContextManager ...] [--no-memory] [--compare-recall] [--swap-roles]
        [--json out.json]

``--swap-roles`` swaps user and assistant in every haystack (the question stays a user message): a strategy
whose gain comes from favouring one role loses it there. ``--compare-recall`` adds the budget manager with recall
off and the other managers (message, summary, three-tier memory) with recall on.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _common import fresh_counter, print_table, require_data

from windowkeeper.evaluation.datasets import MemoryQuestion, load_longmemeval
from windowkeeper.evaluation.lineup import standard_lineup
from windowkeeper.evaluation.replay import answer_shown, view_text
from windowkeeper.evaluation.strategies import View
from windowkeeper.messages import Message

SPLIT = "longmemeval/s_dev"
OURS = "TokenBudgetContextManager"
SLIDING = "sliding window"
ASKED_TARGETS = {4000: 3.0, 8000: 2.0}
VIEWS = ("final", "asked")


def chat_steps(messages: Sequence[Message]) -> list[list[Message]]:
    """The conversation cut before every user message: one model call per user turn."""
    steps: list[list[Message]] = []
    current: list[Message] = []
    for msg in messages:
        if msg.role == "user" and any(m.role != "system" for m in current):
            steps.append(current)
            current = []
        current.append(msg)
    if current:
        steps.append(current)
    return steps


def swap_roles(messages: Sequence[Message]) -> list[Message]:
    """``messages`` with user and assistant exchanged (system messages unchanged)."""
    swap = {"user": "assistant", "assistant": "user"}
    return [m.model_copy(update={"role": swap[m.role]}) if m.role in swap else m for m in messages]


@dataclass
class Tally:
    evidence_total: int = 0
    evidence_kept: int = 0
    questions: int = 0
    answer_hits: int = 0
    subset: int = 0
    subset_hits: int = 0
    subset_strict_hits: int = 0
    seconds: float = 0.0
    misses: list[str] = field(default_factory=list)

    @staticmethod
    def share(part: int, whole: int) -> str:
        return f"{100 * part / whole:.1f}%" if whole else "-"

    def score(self, q: MemoryQuestion, view: View) -> None:
        text = view_text(view).casefold()
        answer = q.answer.strip().casefold()
        hit = bool(answer) and answer in text
        self.questions += 1
        self.evidence_total += len(q.evidence)
        self.evidence_kept += sum(1 for ev in q.evidence.values() if ev.casefold() in text)
        self.answer_hits += hit
        if q.answer_in_history:
            self.subset += 1
            self.subset_hits += hit
            self.subset_strict_hits += answer_shown(q.answer, text)
            if not hit:
                self.misses.append(q.question_id)

    def row(self, name: str) -> list[object]:
        return [
            name,
            self.share(self.evidence_kept, self.evidence_total),
            self.share(self.answer_hits, self.questions),
            f"{self.subset_hits}/{self.subset}",
            self.share(self.subset_hits, self.subset),
            self.share(self.subset_strict_hits, self.subset),
            f"{self.seconds:.1f}",
        ]

    def as_dict(self) -> dict[str, Any]:
        return {
            "evidence": self.evidence_kept / self.evidence_total if self.evidence_total else 0.0,
            "answer_all": self.answer_hits / self.questions if self.questions else 0.0,
            "subset_hits": self.subset_hits,
            "subset_strict_hits": self.subset_strict_hits,
            "subset": self.subset,
            "cpu_s": round(self.seconds, 2),
        }


def question_message(q: MemoryQuestion, date: str | None) -> Message:
    metadata = {"session_date": date} if date else {}
    return Message.text_message(q.question, role="user", message_id=f"{q.question_id}:question", metadata=metadata)


async def run_question(
    q: MemoryQuestion,
    date: str | None,
    budget: int,
    args: argparse.Namespace,
    tallies: dict[str, dict[str, Tally]],
) -> None:
    counter = fresh_counter()
    steps = chat_steps(q.messages)
    lineup = standard_lineup(budget, counter=counter, memory=not args.no_memory, compare_recall=args.compare_recall)
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
        final.score(q, view)
        started = time.process_time()
        question = question_message(q, date)
        asked_view = await strategy.step([question])
        asked.seconds += time.process_time() - started
        # the question itself is not retained history (a "which came first, A or B?" question names its answer)
        asked.score(
            q, View([m for m in asked_view.messages if m.message_id != question.message_id], asked_view.summary)
        )


def ratio(ours: Tally, theirs: Tally) -> float:
    return ours.subset_hits / theirs.subset_hits if theirs.subset_hits else float("inf")


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--budgets", type=int, nargs="+", default=[2000, 4000, 8000, 16000, 32000])
    parser.add_argument("--questions", type=int, default=None, help="first N dev questions only (default all)")
    parser.add_argument("--only", nargs="+", default=None, help="strategy names to run (default: all)")
    parser.add_argument("--no-memory", action="store_true", help="leave the three-tier memory out of the line-up")
    parser.add_argument(
        "--compare-recall",
        action="store_true",
        help="add the budget manager with recall off and the other managers with recall on",
    )
    parser.add_argument("--swap-roles", action="store_true", help="swap user and assistant in every haystack")
    parser.add_argument(
        "--subset", action="store_true", help="only the questions whose answer is word for word in the history"
    )
    parser.add_argument("--show-misses", action="store_true", help="list subset questions the budget manager missed")
    parser.add_argument("--json", type=Path, default=None, help="also write the results to this file")
    args = parser.parse_args(argv)

    files = sorted(require_data(SPLIT).glob("*.json"))[: args.questions]
    questions = [load_longmemeval(f) for f in files]
    dates = [json.loads(f.read_text(encoding="utf-8")).get("question_date") for f in files]
    if args.subset:
        kept = [(q, d) for q, d in zip(questions, dates, strict=True) if q.answer_in_history]
        questions, dates = [q for q, _ in kept], [d for _, d in kept]
    if args.swap_roles:
        for q in questions:
            q.messages = swap_roles(q.messages)
    subset = sum(q.answer_in_history for q in questions)
    tokens = fresh_counter()
    mean_tokens = sum(tokens.count_messages(q.messages) for q in questions) / max(len(questions), 1)
    print(
        f"LongMemEval-S dev{' (roles swapped)' if args.swap_roles else ''}: {len(questions)} questions, mean "
        f"{mean_tokens:,.0f} tokens of history, {subset} with the answer word for word in the history"
    )

    headers = ["strategy", "evidence kept", "answer (all)", "answer (subset)", "share", "strict", "CPU s"]
    results: dict[str, Any] = {}
    for budget in args.budgets:
        tallies: dict[str, dict[str, Tally]] = {view: {} for view in VIEWS}
        for q, date in zip(questions, dates, strict=True):
            asyncio.run(run_question(q, date, budget, args, tallies))
        results[str(budget)] = {}
        for view in VIEWS:
            title = f"\nbudget {budget:,}, {'final view' if view == 'final' else 'question asked'}"
            print_table(headers, [t.row(name) for name, t in tallies[view].items()], title=title)
            results[str(budget)][view] = {name: t.as_dict() for name, t in tallies[view].items()}
            if OURS in tallies[view] and SLIDING in tallies[view]:
                ours, sliding = tallies[view][OURS], tallies[view][SLIDING]
                r = ratio(ours, sliding)
                results[str(budget)][view]["ratio"] = r
                verdict = ""
                if view == "asked" and budget in ASKED_TARGETS:
                    target = ASKED_TARGETS[budget]
                    verdict = f" ({'meets' if r >= target else 'BELOW'} the {target:.0f}x target)"
                elif view == "final":
                    verdict = f" ({'meets' if ours.subset_hits >= sliding.subset_hits else 'BELOW'} the >= 1x target)"
                print(
                    f"{view}: budget manager / sliding window, answer in view on the subset: {ours.subset_hits} vs "
                    f"{sliding.subset_hits} = {r:.2f}x{verdict}"
                )
                if args.show_misses:
                    print(f"  subset questions the budget manager missed: {', '.join(ours.misses) or 'none'}")
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2), encoding="utf-8")
    return results


if __name__ == "__main__":
    main()
