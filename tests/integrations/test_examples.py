"""The host examples of docs/integrations.md, each run as its own process against the fake servers."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _run(script: str, *args: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-W", "error::DeprecationWarning:windowkeeper", str(EXAMPLES / script), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def test_window_with_the_openai_sdk() -> None:
    out = _run("window_openai_chat.py")
    assert "model calls: 16, history: 33 messages" in out
    assert "summary in the last request's system messages: True" in out
    stable = re.search(r"prefix stable: (\d+)/15", out)
    assert stable is not None and int(stable.group(1)) >= 10
    assert re.search(r"restored call_\d+: 3103 chars, equal to history: True", out)


def test_window_with_the_anthropic_sdk() -> None:
    out = _run("window_anthropic.py")
    assert "model calls: 16" in out
    assert re.search(r"summary in system: True, cache breakpoints: [234]\b", out)


@pytest.mark.parametrize("script", ["langchain_middleware.py", "langgraph_hook.py"])
def test_langchain_hosts(script: str) -> None:
    pytest.importorskip("langchain_openai")
    out = _run(script)
    calls = re.search(r"model calls: 16, state: (\d+) messages, last request: (\d+) messages", out)
    assert calls is not None and int(calls.group(2)) < int(calls.group(1)) // 2
    assert "summary in the last request's system message: True" in out


def test_openai_agents(tmp_path: Path) -> None:
    out = _run("openai_agents_filter.py", "--db", str(tmp_path / "s.db"))
    assert re.search(
        r"filter: 16 model calls, history 32 items, last request \d+ items, summary in instructions: True", out
    )
    assert re.search(r"session: 32 items stored, managed view \d+ items, opens with the summary: True", out)
