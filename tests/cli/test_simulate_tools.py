"""`simulate` counts a file's tool definitions as a request carries them: in every call's tokens, and inside the
budget the managers keep (they manage the messages in what the budget leaves beside the tools)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from windowkeeper.cli.app import app
from windowkeeper.io import read_collection
from windowkeeper.prompt import tool_schema_tokens
from windowkeeper.tokens import default_counter

runner = CliRunner()

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a file of the repository and return its text, line by line, for the agent to quote.",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string", "description": "The file's path from the repository root"}},
                "required": ["path"],
            },
        },
    }
]


def _request(turns: int) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are a coding agent."}]
    for n in range(turns):
        messages.append({"role": "user", "content": f"step {n}: " + "look at the parser and say what it does " * 12})
        messages.append({"role": "assistant", "content": f"answer {n}: " + "it reads tokens and builds a tree " * 12})
    return {"model": "gpt-4o", "messages": messages, "tools": TOOLS}


def _simulate(path: Path, budget: int) -> dict[str, Any]:
    result = runner.invoke(app, ["simulate", str(path), "--no-chart", "--json", "--budget", str(budget)])
    assert result.exit_code == 0, result.output
    doc: dict[str, Any] = json.loads(result.stdout)
    return doc


def test_every_call_counts_the_tool_definitions(tmp_path: Path) -> None:
    with_tools, without = tmp_path / "with.json", tmp_path / "without.json"
    request = _request(6)
    with_tools.write_text(json.dumps(request))
    without.write_text(json.dumps({k: v for k, v in request.items() if k != "tools"}))
    (conversation,) = read_collection(str(with_tools), fmt="auto", limit=None, max_bytes=1 << 30, timeout=10.0)
    tools = tool_schema_tokens(conversation.tools, default_counter())
    assert tools > 40
    a, b = _simulate(with_tools, 100_000), _simulate(without, 100_000)
    assert a["calls"] == b["calls"] > 0
    full_a, full_b = a["strategies"][0], b["strategies"][0]
    assert full_a["name"] == "no management"
    assert full_a["tokens_sent"] == full_b["tokens_sent"] + tools * a["calls"]
    assert full_a["max_call_tokens"] == full_b["max_call_tokens"] + tools


def test_the_budgeted_strategies_leave_the_tools_their_room(tmp_path: Path) -> None:
    path = tmp_path / "long.json"
    path.write_text(json.dumps(_request(30)))
    budget = 1500
    doc = _simulate(path, budget)
    budgeted = {s["name"]: s for s in doc["strategies"]}
    manager = budgeted["TokenBudgetContextManager"]
    assert manager["max_call_tokens"] <= budget, manager
    assert manager["calls_over_budget"] == 0
    assert doc["strategies"][0]["calls_over_budget"] > 0  # the full history does go over, tools included
