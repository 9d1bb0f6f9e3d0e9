"""An Anthropic client sends a tool's result and a line of its own in one user turn (``[tool_result, text]``: a
hint, a reminder, a constraint said while the agent works). The line does not end the agent's turn: the result it
came with is what the model answers next, so `Window.fit` keeps the call and its result whole however tight the
budget, until the model has replied."""

from __future__ import annotations

from typing import Any

from windowkeeper.integrations import Window
from windowkeeper.tokens import default_counter

FILLER = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt ut labore "
BUDGET = 3_000


def _result_text(n: int) -> str:
    return f"file {n}: " + FILLER * 55  # about 700 tokens, a quarter of the budget


def _conversation(tasks: int) -> list[dict[str, Any]]:
    """Tasks of two tool rounds each; the second round's results come with a user line in the same turn."""
    items: list[dict[str, Any]] = []
    n = 0
    for t in range(tasks):
        items.append({"role": "user", "content": f"Task {t}: read the two files and report."})
        for round_ in range(2):
            n += 1
            call = {"type": "tool_use", "id": f"toolu_{n}", "name": "read_file", "input": {"path": f"src/f{n}.py"}}
            items.append({"role": "assistant", "content": [{"type": "text", "text": "Reading."}, call]})
            result = {"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": _result_text(n)}
            content: list[dict[str, Any]] = [result]
            if round_ == 1:
                content.append({"type": "text", "text": "Keep the report to two lines."})
            items.append({"role": "user", "content": content})
        items.append({"role": "assistant", "content": f"Task {t} done."})
    return items


def test_a_line_sent_with_tool_results_keeps_the_call_and_its_result_in_the_request() -> None:
    items = _conversation(12)
    window = Window(budget=BUDGET, format="anthropic")
    counter = default_counter()
    checked = 0
    for k, item in enumerate(items):
        if item["role"] != "user" or isinstance(item["content"], str) or len(item["content"]) < 2:
            continue
        # the model is called on [..., assistant tool_use, user [tool_result, text]]
        result = window.fit(items[: k + 1], system="You read files.")
        sent = result.messages
        call_id = items[k - 1]["content"][1]["id"]
        blocks = [b for m in sent if isinstance(m["content"], list) for b in m["content"]]
        assert items[k - 1] in sent, f"call {call_id}: the tool_use turn was cut or rewritten"
        assert items[k]["content"][0] in blocks, f"call {call_id}: its result was cleared"
        assert result.input_tokens <= BUDGET
        checked += 1
    assert checked == 12 and counter.count_text(_result_text(1)) > 600
