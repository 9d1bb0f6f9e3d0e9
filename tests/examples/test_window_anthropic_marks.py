"""examples/window_anthropic.py said "at most four in all" and printed the markers of the last request only (2,
as it came right after a cut), while docs/integrations.md promises at most three (system, the last message unchanged
since the previous call, the newest). The example now prints the most any request carried, which is that three."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "window_anthropic.py"


@pytest.mark.parametrize("turns", ["8", "3"])
def test_the_example_shows_three_breakpoints_at_most_as_the_docs_say(turns: str) -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), "--turns", turns], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "cache breakpoints: 3 at most per request" in done.stdout
    assert "at most\nthree in all (Anthropic allows four)" in EXAMPLE.read_text(encoding="utf-8")
