"""The runnable examples documented in docs/, each run as its own process, offline, at small sizes."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _run(script: str, *args: str) -> str:
    proc = subprocess.run(
        [sys.executable, str(EXAMPLES / script), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _line(output: str, prefix: str) -> str:
    lines = [line for line in output.splitlines() if line.startswith(prefix)]
    assert lines, f"no line starting with {prefix!r} in:\n{output}"
    return lines[0]


def test_budget_agent_keeps_the_budget_and_restores_pointers(tmp_path: Path) -> None:
    out = _run("budget_agent.py", "--turns", "12", "--db", str(tmp_path / "agent.db"))
    assert out.startswith("budget 5000 tokens: high watermark 4500, low watermark 3000\n")
    rows = [line.split() for line in out.splitlines() if re.match(r"^\s*(call \d+|persist)\s", line)]
    calls = [r for r in rows if r[0] == "call"]
    assert len(calls) == 24 and len(rows) == 36  # two model calls and one persist per task
    after = [int(r[r.index("->", 4) + 1]) for r in calls]
    assert max(after) < 4500  # no prompt sent at or above the high watermark
    stable = re.search(r"model calls: 24, prefix stable: (\d+)/23", out)
    assert stable is not None and int(stable.group(1)) >= 18  # cuts are rare: most prompts extend the previous one
    assert re.search(r"message log: 60 messages; stored view: \d+ messages and a \d+-char summary", out)
    assert _line(out, "pointer sent instead of a tool output:").endswith("...")
    assert "restored == logged original: True" in out
    assert (tmp_path / "agent.db").exists()


def test_memory_session_compacts_summarizes_and_restores(tmp_path: Path) -> None:
    out = _run("memory_session.py", "--steps", "40", "--db", str(tmp_path / "memory.db"))
    assert "compaction at 3200 tokens, summarization at 3800 tokens, newest 8 events kept" in out
    tiers = re.search(r"adds per tier: \{'none': (\d+), 'compaction': (\d+), 'summarization': (\d+)\}", out)
    assert tiers is not None and all(int(n) > 0 for n in tiers.groups())
    assert "tier=compaction" in _line(out, "first compaction:")
    assert "tier=summarization" in _line(out, "first summarization:")
    assert "[COMPACTED: " in _line(out, "event ")
    assert "byte-identical: True" in _line(out, "decompressed ")
    assert "user_goal: Please fix `parse_events` in `src/billing/webhooks.py`" in out
    assert "history: 106 messages, identical to what was added: True" in out


def test_compare_strategies_reports_every_strategy() -> None:
    out = _run("compare_strategies.py", "--steps", "40", "--budget", "4000")
    assert out.startswith("40 model calls, 41 facts, budget 4000 tokens")
    names = (
        "no management",
        "sliding window",
        "MessageContextManager(5)",
        "SummaryContextManager",
        "TokenBudgetContextManager",
        "three-tier memory",
    )
    rows = {}
    for name in names:
        cells = _line(out, name)[len(name) :].split()
        rows[name] = cells
        assert cells[5] == "0", f"{name} sent invalid sequences: {cells}"
    assert rows["no management"][1] == "0%"
    tokens = {name: int(cells[0].replace(",", "")) for name, cells in rows.items()}
    # the budget manager fills its budget as a window does (within a few percent of its tokens); its stable prefix
    # is what makes it cheaper
    assert tokens["sliding window"] < tokens["no management"]
    assert tokens["TokenBudgetContextManager"] < 1.05 * tokens["sliding window"]
    ratio = re.search(r"budget manager vs sliding window: ([\d.]+)x", out)
    assert ratio is not None and float(ratio.group(1)) < 1.0  # a stable prefix makes the cached calls cheaper
