"""The reference page's context-manager examples, run against windowkeeper (``tenxgraph`` -> ``windowkeeper``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from windowkeeper.core.state import AgentState, BaseContextManager, Message

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

DOCUMENTED_TRIM_OUTPUT = (
    "system | You are terse.\nuser | Second question\nassistant | Second answer\nuser | Third question\n"
)


def _run(script: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(EXAMPLES / script)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_trim_demo_prints_the_documented_output() -> None:
    proc = _run("trim_demo.py")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == DOCUMENTED_TRIM_OUTPUT


def test_custom_context_example_runs() -> None:
    proc = _run("custom_context.py")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "['note 3', 'note 4']\n"


class LastNMessages(BaseContextManager[AgentState]):
    """The reference's custom strategy shape: keep the last n messages."""

    def __init__(self, n: int = 20) -> None:
        self.n = n

    def trim_context(self, state: AgentState) -> AgentState:
        state.context = state.context[-self.n :]
        return state

    async def atrim_context(self, state: AgentState) -> AgentState:
        return self.trim_context(state)


async def test_last_n_messages_subclass_works_sync_and_async() -> None:
    context = [Message.text_message(f"t{i}", message_id=f"m{i}") for i in range(30)]
    mgr = LastNMessages()
    out = mgr.trim_context(AgentState(context=list(context)))
    assert [m.message_id for m in out.context] == [f"m{i}" for i in range(10, 30)]
    out2 = await LastNMessages(n=3).atrim_context(AgentState(context=list(context)))
    assert [m.message_id for m in out2.context] == ["m27", "m28", "m29"]


def test_one_method_subclass_raises_type_error_naming_both() -> None:
    class OnlyTrim(BaseContextManager[AgentState]):
        def trim_context(self, state: AgentState) -> AgentState:
            return state

    with pytest.raises(TypeError, match=r"both trim_context and atrim_context.*missing: atrim_context"):
        OnlyTrim()


def test_reference_import_path_exports_the_managers() -> None:
    from windowkeeper.core import state

    for name in ("BaseContextManager", "MessageContextManager", "SummaryContextManager"):
        assert name in state.__all__
        assert getattr(state, name).__module__.startswith("windowkeeper.context.")
