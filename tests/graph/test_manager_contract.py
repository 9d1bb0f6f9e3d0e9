"""Callers reach a manager through its contract (`RequestCounting`, `BaseContextManager`), never by probing.

The Agent warns when a manager's budget counts another system prompt or other tools than it sends, and feeds the
manager's counter the provider's reported sizes; both go through the contract, so a manager says what it counts
by overriding ``counted_request`` and a manager that only trims is left alone.
"""

from __future__ import annotations

import ast
import logging
from pathlib import Path
from typing import Any

import pytest

from ast_parse import parse
from windowkeeper import AgentState, Message, TokenBudgetContextManager
from windowkeeper.context import BaseContextManager
from windowkeeper.graph import END, Agent, InMemoryCheckpointer, StateGraph
from windowkeeper.llm import ScriptedClient

SRC = Path(__file__).resolve().parents[2] / "src" / "windowkeeper"
PROMPT = "You are a careful assistant."


def _parse(path: Path) -> ast.Module:
    return parse(path)


class CountsPrompt(BaseContextManager[AgentState]):
    """A strategy that says its budget counts ``PROMPT`` and no tools; it trims nothing."""

    def counted_request(self) -> tuple[str | None, list[dict[str, Any]]] | None:
        return PROMPT, []

    def trim_context(self, state: AgentState) -> AgentState:
        return state

    async def atrim_context(self, state: AgentState) -> AgentState:
        return state


class OnlyTrims:
    """Not a `BaseContextManager`: the graph runs it, and nothing else is asked of it."""

    system_prompt = "an attribute the Agent must not read"
    tools: list[dict[str, Any]] = []

    async def atrim_context(self, state: AgentState) -> AgentState:
        return state


def _run(manager: Any, system_prompt: str | None) -> list[str]:
    graph = StateGraph(context_manager=manager)
    graph.add_node("MAIN", Agent(client=ScriptedClient(default="ok"), system_prompt=system_prompt, trim_context=True))
    graph.add_edge("MAIN", END)
    graph.set_entry_point("MAIN")
    app = graph.compile(checkpointer=InMemoryCheckpointer())
    app.invoke({"messages": [Message.text_message("hi", role="user", message_id="u1")]}, config={"thread_id": "t"})
    return [m.message_id for m in app.get_state({"thread_id": "t"}).context]


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "windowkeeper.graph.agent"]


@pytest.mark.parametrize(
    ("manager", "sent", "warned"),
    [
        (CountsPrompt(), PROMPT, False),
        (CountsPrompt(), "another prompt", True),
        (TokenBudgetContextManager(max_tokens=4000, reserve_tokens=500, system_prompt=PROMPT), PROMPT, False),
        (TokenBudgetContextManager(max_tokens=4000, reserve_tokens=500), PROMPT, True),
        (OnlyTrims(), "another prompt", False),
    ],
    ids=["same", "differs", "budget-same", "budget-not-told", "not-a-base-manager"],
)
def test_the_agent_checks_what_a_manager_counts_through_the_contract(
    caplog: pytest.LogCaptureFixture, manager: Any, sent: str, warned: bool
) -> None:
    with caplog.at_level(logging.WARNING, logger="windowkeeper.graph.agent"):
        assert _run(manager, sent)[0] == "u1"
    messages = _warnings(caplog)
    assert bool(messages) is warned, messages
    if warned:
        assert messages[0].startswith(f"{type(manager).__name__} counts system_prompt=")


def test_a_base_manager_budgets_no_request_by_default() -> None:
    class Plain(BaseContextManager[AgentState]):
        def trim_context(self, state: AgentState) -> AgentState:
            return state

        async def atrim_context(self, state: AgentState) -> AgentState:
            return state

    plain = Plain()
    assert plain.counted_request() is None and plain.counter is None and plain.recall is None


def _probes(tree: ast.AST) -> list[int]:
    """Lines where ``getattr``/``hasattr`` is called on something named like a manager."""
    lines = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
            continue
        if node.func.id not in ("getattr", "hasattr") or not node.args:
            continue
        if "manager" in ast.unparse(node.args[0]).lower():
            lines.append(node.lineno)
    return lines


def test_no_caller_probes_a_manager_for_attributes() -> None:
    allowed = {SRC / "context" / "base.py"}
    found = {
        str(path.relative_to(SRC)): lines
        for path in sorted(SRC.rglob("*.py"))
        if path not in allowed and (lines := _probes(_parse(path)))
    }
    assert found == {}, "use the BaseContextManager / RequestCounting contract instead of getattr/hasattr"
