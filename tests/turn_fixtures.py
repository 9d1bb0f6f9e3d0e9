"""Conversations for the turn-in-progress tests of the summary manager and the three-tier memory: finished turns
long enough to need a summary, then a task whose tool call and result a user line follows before the model replies."""

from __future__ import annotations

from windowkeeper.blocks import TextBlock, ToolCallBlock, ToolResultBlock
from windowkeeper.messages import Message

FILLER = "The quarterly report lists revenue, churn, hiring plans and the office move in great detail. "


def older_history(turns: int, repeat: int) -> list[Message]:
    """``turns`` finished question-and-answer turns, each text ``repeat`` filler sentences long."""
    out: list[Message] = []
    for t in range(turns):
        out.append(Message.text_message(f"Question {t}: {FILLER * repeat}", message_id=f"old-u{t}"))
        out.append(Message.text_message(f"Answer {t}: {FILLER * repeat}", role="assistant", message_id=f"old-a{t}"))
    return out


def weather_call(n: int, city: str) -> Message:
    call = ToolCallBlock(id=f"call{n}", name="get_weather", args={"city": city})
    return Message(role="assistant", content=[TextBlock(text="Checking."), call], message_id=f"call-{n}")


def weather_result(n: int, body: str) -> Message:
    return Message.tool_message([ToolResultBlock(call_id=f"call{n}", output=body)], message_id=f"result-{n}")
