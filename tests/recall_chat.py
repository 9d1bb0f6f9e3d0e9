"""A chat for recall tests: one fact in the first turn, then filler turns that never refer back to it or to each other
(each filler word is made up for its turn, so no turn but a question about the fact can match it)."""

from __future__ import annotations

from windowkeeper import Message, ToolCallBlock, ToolResultBlock

FACT = "For the record: the staging database runs on host kestrel-4 at port 55432."
SYLLABLES = ("ka", "lo", "mi", "ne", "su", "ta", "vo", "ri")


def word(n: int) -> str:
    """A made-up word of its own for each ``n``."""
    n += 64
    out = ""
    while n:
        n, digit = divmod(n, len(SYLLABLES))
        out += SYLLABLES[digit]
    return out


def turn_text(turn: int) -> str:
    if turn == 0:
        return FACT
    return f"Turn {turn}: today I tried the {word(turn)} recipe with {word(turn + 1000)} and {word(turn + 2000)}."


def tool_step(step: int) -> list[Message]:
    """One tool call and its result of about 120 tokens: the steps of a turn that must keep its recall message."""
    call = Message(
        role="assistant",
        content=[ToolCallBlock(id=f"c{step}", name="lookup", args={"n": step})],
        message_id=f"c{step}",
    )
    result = Message.tool_message(
        [ToolResultBlock(call_id=f"c{step}", output=f"row {step} " * 40)], message_id=f"r{step}"
    )
    return [call, result]
