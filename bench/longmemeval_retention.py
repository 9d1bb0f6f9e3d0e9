"""Fact retention on LongMemEval-S: what each strategy still shows the model after ~100k tokens of chat history.

Each dev question's haystack (38-58 chat sessions, ~104k tokens) is one long conversation. Every strategy of the
standard line-up is driven through it the way a chat assistant calls the model: one step per user message and
the assistant reply before it (the system prompt arrives with the first step), keeping its own state between
steps. After the last step the final view (messages, plus the summary where the strategy keeps one) is checked:

* evidence kept: share of the evidence turns (``has_answer``) whose full text is still in the view;
* answer in view: whether the answer string appears in the view (case-insensitive substring, the same test as
  ``MemoryQuestion.answer_in_history``), over all questions and over the questions whose answer appears word for
  word in the history (the only ones where a view *can* contain it);
* strict: the same on that subset, but the answer must stand as a whole word (short numeric answers such as
  "2" otherwise match inside unrelated numbers).

Target (issue 6): at 8k, on the answer-in-history subset, the budget manager with the extractive summarizer shows
the answer >= 2x as often as the per-turn sliding window.

    python bench/longmemeval_retention.py [--budgets 4000 8000 16000 32000] [--questions 60] [--no-memory]
"""

from __future__ import annotations

import argparse
import asyncio
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from _common import fresh_counter, print_table, require_data

from windowkeeper.evaluation.datasets import MemoryQuestion, load_longmemeval
from windowkeeper.evaluation.lineup import standard_lineup
from windowkeeper.evaluation.replay import view_text
from windowkeeper.messages import Message

SPLIT = "longmemeval/s_dev"
OURS = "TokenBudgetContextManager"
SLIDING = "sliding window"
TARGET_BUDGET = 8000
TARGET_RATIO = 2.0


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


def whole_word(needle: str, text: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(needle)}(?!\w)", text) is not None


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

    def share(self, part: int, whole: int) -> str:
        return f"{100 * part / whole:.1f}%" if whole else "-"


async def run_question(q: MemoryQuestion, budget: int, memory: bool, tallies: dict[str, Tally]) -> None:
    counter = fresh_counter()
    steps = chat_steps(q.messages)
    answer = q.answer.strip().casefold()
    in_history = q.answer_in_history
    for strategy in standard_lineup(budget, counter=counter, memory=memory):
        tally = tallies.setdefault(strategy.name, Tally())
        started = time.process_time()
        view = None
        for step in steps:
            view = await strategy.step(step)
        tally.seconds += time.process_time() - started
        assert view is not None
        text = view_text(view).casefold()
        tally.questions += 1
        tally.evidence_total += len(q.evidence)
        tally.evidence_kept += sum(1 for ev in q.evidence.values() if ev.casefold() in text)
        hit = bool(answer) and answer in text
        tally.answer_hits += hit
        if in_history:
            tally.subset += 1
            tally.subset_hits += hit
            tally.subset_strict_hits += bool(answer) and whole_word(answer, text)
            if not hit:
                tally.misses.append(q.question_id)


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--budgets", type=int, nargs="+", default=[4000, 8000, 16000, 32000])
    parser.add_argument("--questions", type=int, default=None, help="first N dev questions only (default all)")
    parser.add_argument("--no-memory", action="store_true", help="leave the three-tier memory out of the line-up")
    parser.add_argument("--show-misses", action="store_true", help="list subset questions the budget manager missed")
    args = parser.parse_args(argv)

    files = sorted(require_data(SPLIT).glob("*.json"))[: args.questions]
    questions = [load_longmemeval(f) for f in files]
    subset = sum(q.answer_in_history for q in questions)
    tokens = fresh_counter()
    mean_tokens = sum(tokens.count_messages(q.messages) for q in questions) / max(len(questions), 1)
    print(
        f"LongMemEval-S dev: {len(questions)} questions, mean {mean_tokens:,.0f} tokens of history, "
        f"{subset} with the answer word for word in the history"
    )

    results: dict[str, Any] = {}
    for budget in args.budgets:
        tallies: dict[str, Tally] = {}
        for q in questions:
            asyncio.run(run_question(q, budget, not args.no_memory, tallies))
        rows = [
            [
                name,
                t.share(t.evidence_kept, t.evidence_total),
                t.share(t.answer_hits, t.questions),
                f"{t.subset_hits}/{t.subset}",
                t.share(t.subset_hits, t.subset),
                t.share(t.subset_strict_hits, t.subset),
                f"{t.seconds:.1f}",
            ]
            for name, t in tallies.items()
        ]
        print_table(
            ["strategy", "evidence kept", "answer (all)", "answer (subset)", "share", "strict", "CPU s"],
            rows,
            title=f"\nbudget {budget:,}",
        )
        ours, sliding = tallies[OURS], tallies[SLIDING]
        ratio = ours.subset_hits / sliding.subset_hits if sliding.subset_hits else float("inf")
        results[str(budget)] = {
            name: {
                "evidence": t.evidence_kept / t.evidence_total if t.evidence_total else 0.0,
                "subset_hits": t.subset_hits,
                "subset": t.subset,
            }
            for name, t in tallies.items()
        }
        results[str(budget)]["ratio"] = ratio
        verdict = ""
        if budget == TARGET_BUDGET:
            verdict = f" ({'meets' if ratio >= TARGET_RATIO else 'BELOW'} the {TARGET_RATIO:.0f}x target)"
        print(
            f"budget manager / sliding window, answer in view on the subset: {ours.subset_hits} vs "
            f"{sliding.subset_hits} = {ratio:.2f}x{verdict}"
        )
        if args.show_misses:
            print(f"  subset questions the budget manager missed: {', '.join(ours.misses) or 'none'}")
    return results


if __name__ == "__main__":
    main()
