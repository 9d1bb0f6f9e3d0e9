"""Where the turn in progress starts: the one rule every manager's cut follows.

A user message sent right after tool results, before the model replied to them, does not open a turn of its own.
It came with the results (an Anthropic ``[tool_result, text]`` user turn reads as a tool message followed by a
user message) or was said while the agent works ("also use metric units"), and the model still has to answer the
task those calls serve. A cut made at such a line would summarize (or compact) the task's request, calls and
results while the model is answering from them. So the turn in progress starts one step back, at the user message
before those tool turns. One step only: a client that never replies after tool results (each request sent right
after the last one's results) would otherwise make the whole conversation one turn that nothing may cut.

The budget manager applies the same rule on its units (`windowkeeper.context._compaction`, whose cold plan
reads `opens_turn` from here); the summary manager and the three-tier memory read it from here.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..messages import Message


def opens_turn(messages: Sequence[Message], index: int) -> bool:
    """Whether ``messages[index]`` is a user message that opens a turn: not one sent right after tool results.

    System messages between the results and the user line do not count (a client may place a note there)."""
    if messages[index].role != "user":
        return False
    before = next((messages[i].role for i in range(index - 1, -1, -1) if messages[i].role != "system"), None)
    return before != "tool"


def newest_user_index(messages: Sequence[Message]) -> int | None:
    """Position of the newest user message (the request being answered), None when there is none."""
    return next((i for i in range(len(messages) - 1, -1, -1) if messages[i].role == "user"), None)


def turn_start(messages: Sequence[Message]) -> int | None:
    """Position of the user message the turn in progress starts at, None when ``messages`` has no user message.

    That is the newest user message, or, when it was sent right after tool results (`opens_turn` is false), the
    user message before it, one step back (see the module docstring). When no user message precedes those
    results, the newest one starts the turn."""
    newest = newest_user_index(messages)
    if newest is None or opens_turn(messages, newest):
        return newest
    earlier = next((i for i in range(newest - 1, -1, -1) if messages[i].role == "user"), None)
    return newest if earlier is None else earlier


def results_unit_start(messages: Sequence[Message], newest: int) -> int:
    """Position where the tool exchange that the user line at ``newest`` was sent with starts: the assistant
    message whose calls the results right before it answer (system messages in between stepped over). ``newest``
    when it opens a turn.

    A cut at ``newest`` would part that line from the results it came with; this is the nearest position before it
    where a cut keeps them together."""
    if opens_turn(messages, newest):
        return newest
    i = newest - 1
    while i > 0 and messages[i].role in ("tool", "system"):
        i -= 1
    return i if messages[i].role == "assistant" else newest


__all__ = ["newest_user_index", "opens_turn", "results_unit_start", "turn_start"]
