"""A compacted file's cleared tool results named ``recall(pointer_id=...)``, a tool the file's request does not
give the model (and nothing behind a written file could answer it). The rule of every front door: never a tool the
model was not given. Without a ``recall`` tool among the file's tools the pointers say how else to get the output;
a file that declares one keeps the pointers naming it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from windowkeeper.cli.app import app

runner = CliRunner()

RECALL_TOOL = {
    "name": "recall",
    "description": "restore a cleared output",
    "input_schema": {"type": "object", "properties": {"pointer_id": {"type": "string"}}},
}


def _anthropic_request(tools: list[dict[str, Any]]) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    for i in range(30):
        output = "\n".join(f"line {j} of f{i}.py: value {i * j}" for j in range(50))
        messages += [
            {"role": "user", "content": f"read f{i}.py"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": f"toolu_{i}", "name": "read", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": output}]},
            {"role": "assistant", "content": [{"type": "text", "text": f"f{i}.py read"}]},
        ]
    return {"model": "claude-x", "max_tokens": 100, "tools": tools, "messages": messages}


@pytest.mark.parametrize("declared", [False, True])
def test_cleared_results_name_recall_only_when_the_file_gives_it(tmp_path: Path, declared: bool) -> None:
    read = {"name": "read", "description": "read a file", "input_schema": {"type": "object", "properties": {}}}
    tools = [read, RECALL_TOOL] if declared else [read]
    source = tmp_path / "request.json"
    source.write_text(json.dumps(_anthropic_request(tools)))
    out = tmp_path / "small.json"
    result = runner.invoke(app, ["compact", str(source), "--budget", "4000", "-o", str(out)])
    assert result.exit_code == 0, result.output
    body = json.loads(out.read_text())
    assert body["tools"] == tools
    cleared = [
        block["content"]
        for message in body["messages"]
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result" and "cleared from context" in str(block.get("content"))
    ]
    assert cleared, "the budget should clear some tool results"
    if declared:
        assert all('recall(pointer_id="toolu_' in text for text in cleared)
    else:
        assert not any("recall(" in text for text in cleared)
        assert all('re-run the call or ask the user to restore id "toolu_' in text for text in cleared)
