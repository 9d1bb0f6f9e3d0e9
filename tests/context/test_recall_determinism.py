"""Recall must not depend on the process's string-hash seed: two runs of one conversation recall the same passages.

Sets iterate in an order that follows ``PYTHONHASHSEED``; when the query has more rare words than a search sends,
ties in rarity used to be broken by that order, so the same demo sent different prompts in different processes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

_SCRIPT = """
import json
from windowkeeper.context.recall_index import RecallIndex
words = [f"zq{chr(97 + i)}{chr(97 + j)}word" for i in range(6) for j in range(5)]
index = RecallIndex()
for k, word in enumerate(words):
    index.add("t", f"m{k}", f"note {k}: the {word} setting was changed", position=k, turn=k, role="user")
hits = index.search("t", " ".join(words), limit=8)
print(json.dumps([[h.passage.message_id, round(h.score, 9), round(h.coverage, 9)] for h in hits]))
"""


def _run(seed: str) -> list[list[object]]:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    out = subprocess.run([sys.executable, "-c", _SCRIPT], env=env, capture_output=True, text=True, check=True)
    result: list[list[object]] = json.loads(out.stdout)
    return result


def test_search_results_do_not_follow_the_hash_seed() -> None:
    runs = [_run(seed) for seed in ("1", "2", "3", "4")]
    assert runs[0], "the query should find passages"
    assert all(run == runs[0] for run in runs[1:]), runs
