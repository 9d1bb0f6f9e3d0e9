"""Cut and filter rules shared by the built-in managers, all expressed on units so no cut splits a tool turn.

Kept apart from the managers so the same rules can be tested directly and reused by other strategies.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..messages import Message
from ..units import group_units


def split_system(messages: Sequence[Message]) -> tuple[list[Message], list[Message]]:
    """System messages (role exactly ``"system"``) and the rest, each in original order."""
    systems: list[Message] = []
    others: list[Message] = []
    for msg in messages:
        (systems if msg.role == "system" else others).append(msg)
    return systems, others


def remove_completed_tool_sequences(messages: Sequence[Message]) -> list[Message]:
    """Drop every finished tool sequence: the calling assistant turn(s), their results and the answer that used them.

    A sequence is one or more consecutive complete tool turns followed by a plain assistant message (system
    messages in between are stepped over and kept). A chain that has not reached its plain assistant answer yet,
    a pending call, or a call with missing results is left whole, because the model still needs it.
    """
    units = group_units(messages)
    drop: set[int] = set()
    i = 0
    n = len(units)
    while i < n:
        if units[i].kind != "tool_turn":
            i += 1
            continue
        chain = [i]
        j = i + 1
        while j < n and units[j].kind in ("tool_turn", "system"):
            if units[j].kind == "tool_turn":
                chain.append(j)
            j += 1
        if j < n and units[j].kind == "assistant":
            drop.update(chain)
            drop.add(j)
            i = j + 1
        else:
            i = j
    if not drop:
        return list(messages)
    kept: list[Message] = []
    for index, unit in enumerate(units):
        if index not in drop:
            kept.extend(unit.messages)
    return kept


def oldest_kept_user(messages: Sequence[Message], keep_users: int) -> int | None:
    """Position of the oldest of the ``keep_users`` newest user messages.

    None when there are not more than ``keep_users`` user messages (nothing to trim); ``len(messages)`` when
    ``keep_users`` is 0 and there is at least one user message (everything non-system goes).
    """
    users = [i for i, msg in enumerate(messages) if msg.role == "user"]
    if len(users) <= keep_users:
        return None
    if keep_users == 0:
        return len(messages)
    return users[-keep_users]


def user_boundary_at_or_before(messages: Sequence[Message], index: int) -> int:
    """The largest position ``<= index`` where a user message starts (0 when there is none)."""
    for pos in range(min(index, len(messages) - 1), -1, -1):
        if messages[pos].role == "user":
            return pos
    return 0


def summary_cut(others: Sequence[Message], keep_recent: int) -> int:
    """Where to split non-system messages into "summarize" (before) and "keep" (from here on).

    Starts at ``len - keep_recent``; never summarizes a pending tool call (the cut moves before it); when the kept
    part is not empty, the cut moves back to the nearest user message at or before it, which keeps tool calls
    paired with their results and makes the kept part start with a user turn as Anthropic and Gemini require.
    The kept part may therefore hold more than ``keep_recent`` messages. 0 means there is nothing to summarize.
    """
    n = len(others)
    cut = max(n - keep_recent, 0)
    for unit in group_units(others):
        if unit.kind == "pending" and unit.start < cut:
            cut = unit.start
            break
    if cut >= n:
        return n
    return user_boundary_at_or_before(others, cut)


def unit_cut(messages: Sequence[Message], keep_recent: int) -> int:
    """Where to split ``messages`` (system messages included) so the newest ``keep_recent`` stay: the position
    ``len - keep_recent``, moved back to the start of a unit it would split and before a pending tool call.

    Unlike `summary_cut` the kept part need not start with a user message: a caller that cuts this way keeps the
    turn's opener apart (`turn_opener`), so the kept part holds exactly the newest events plus that one.
    """
    cut = max(0, len(messages) - keep_recent)
    for unit in group_units(messages):
        if unit.start < cut < unit.end or (unit.kind == "pending" and unit.start < cut):
            cut = unit.start
    return cut


def turn_opener(messages: Sequence[Message], cut: int) -> int | None:
    """Position of the user message to keep when the messages kept from ``cut`` on do not start with one.

    Anthropic and Gemini reject a conversation whose first non-system message is not from the user (or that has
    no user message at all), and no message may be invented, so the user request that opened the current turn
    stays, also when only system notes follow it. None when the kept part starts with a user message (or no user
    message precedes the cut).
    """
    first_kept = next((m for m in messages[cut:] if m.role != "system"), None)
    if first_kept is not None and first_kept.role == "user":
        return None
    return next((i for i in range(cut - 1, -1, -1) if messages[i].role == "user"), None)


__all__ = [
    "oldest_kept_user",
    "remove_completed_tool_sequences",
    "split_system",
    "summary_cut",
    "turn_opener",
    "unit_cut",
    "user_boundary_at_or_before",
]
