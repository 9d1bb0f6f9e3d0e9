"""What importing windowkeeper costs a new process, against importing ``langchain_core.messages`` (CPU time).

Each case runs in a fresh interpreter (``sys.executable -c ...``) and is charged the child's CPU seconds
(``resource.getrusage(RUSAGE_CHILDREN)``) minus those of an interpreter that imports nothing, so only the import
is counted. Cases alternate and the fastest of ``--repeats`` runs of each is kept (the machine is shared).

    python bench/import_time.py [--repeats 7]

The target: ``import windowkeeper`` at most ``import langchain_core.messages``. The first trim (importing what
a `TokenBudgetContextManager` needs and trimming a one-message state, recall on) is reported beside it.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
from collections.abc import Sequence

from _common import print_table

FIRST_TRIM = (
    "from windowkeeper import AgentState, Message, TokenBudgetContextManager\n"
    "m = TokenBudgetContextManager(8000, 1000)\n"
    "m.trim_context(AgentState(context=[Message.text_message('hello', role='user')]))\n"
)
CASES = {
    "nothing (the interpreter)": "pass",
    "import langchain_core.messages": "import langchain_core.messages",
    "import windowkeeper": "import windowkeeper",
    "first trim (imports + one trim)": FIRST_TRIM,
}


def child_cpu(code: str) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-c", code], check=True, env=os.environ.copy())
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main(argv: Sequence[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args(argv)
    best = dict.fromkeys(CASES, float("inf"))
    for _ in range(args.repeats):
        for name, code in CASES.items():
            best[name] = min(best[name], child_cpu(code))
    base = best["nothing (the interpreter)"]
    rows = [(name, (seconds - base) * 1e3) for name, seconds in best.items() if seconds is not best[next(iter(CASES))]]
    print_table(["new process", "CPU ms beyond the interpreter"], rows)
    ours = best["import windowkeeper"] - base
    peer = best["import langchain_core.messages"] - base
    verdict = "met" if ours <= peer else "missed"
    print(f"\nimport windowkeeper / import langchain_core.messages: {ours / peer:.2f}x (target <= 1: {verdict})")
    return {"ratio": ours / peer}


if __name__ == "__main__":
    main()
