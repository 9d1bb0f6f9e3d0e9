"""Anthropic writer defects a prober found through the gateway: a recall note split a user turn of tool results
and text into two user turns.

Each test reads plain dicts the way a client sends them and checks what leaves: what windowkeeper did not change
leaves as it came, and the user turn a recall note serves stays one turn (tool results first, as the API wants).
"""

from __future__ import annotations

import itertools
from typing import Any

from windowkeeper.blocks import TextBlock, ToolResultBlock
from windowkeeper.llm.formats.anthropic import ANTHROPIC
from windowkeeper.messages import Message
from windowkeeper.prompt.recall import MARK_KEY, RECALL_MARK

NOTE = "Earlier: the red widget is fine."

MIXED: list[dict[str, Any]] = [
    {"role": "user", "content": "Check widget 99."},
    {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_99", "name": "lookup", "input": {"n": 99}}]},
    {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "toolu_99", "content": "ok", "cache_control": {"type": "ephemeral"}},
            {"type": "text", "text": "Thanks. What about the red widget?", "x_client": 1},
        ],
    },
]


def _note_for(question: Message) -> Message:
    """A recall note serving ``question``, as the recall layer makes one."""
    return Message(
        role="user",
        content=[TextBlock(text=NOTE)],
        metadata={MARK_KEY: RECALL_MARK, "serves": str(question.message_id)},
    )


def _alternate(turns: list[Any]) -> bool:
    return all(a["role"] != b["role"] for a, b in itertools.pairwise(turns))


def test_a_recall_note_joins_a_user_turn_of_tool_results_and_text() -> None:
    """The note goes between the turn's tool results and its text (the API wants the results first): it was
    written into the results' turn and the user's words went after it as a second user turn, so the client's turn
    left as two turns, neither of them its own."""
    read = ANTHROPIC.read(MIXED)
    assert [m.role for m in read] == ["user", "assistant", "tool", "user"]
    out = ANTHROPIC.write_plain([*read[:3], _note_for(read[3]), read[3]])
    assert len(out) == 3 and _alternate(out)
    own = MIXED[2]["content"]
    assert out[-1]["content"] == [own[0], {"type": "text", "text": NOTE}, own[1]]


def test_a_recall_note_joins_when_the_tool_result_was_rewritten() -> None:
    read = ANTHROPIC.read(MIXED)
    pointer = read[2].with_content([ToolResultBlock(call_id="toolu_99", output="[cleared]")])
    out = ANTHROPIC.write_plain([*read[:2], pointer, _note_for(read[3]), read[3]])
    assert len(out) == 3 and _alternate(out)
    blocks = out[-1]["content"]
    assert blocks[0]["type"] == "tool_result" and blocks[0]["tool_use_id"] == "toolu_99"
    assert blocks[1:] == [{"type": "text", "text": NOTE}, MIXED[2]["content"][1]]
