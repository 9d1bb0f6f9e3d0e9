"""A compaction pass takes its room from long events first: a short message's stand-in keeps most of its tokens."""

from __future__ import annotations

from windowkeeper.memory import InMemoryMemory
from windowkeeper.memory.compaction import is_compacted
from windowkeeper.messages import Message

LONG = " ".join(f"Step {i}: the build log line {i} shows the linker resolving symbol entry {i}." for i in range(30))


def _turns(n: int) -> list[Message]:
    out: list[Message] = []
    for i in range(n):
        out.append(Message.text_message(f"Note {i}: my locker code is {1000 + i}, remember it.", message_id=f"u{i}"))
        out.append(Message.text_message(f"Reply {i}. {LONG}", role="assistant", message_id=f"a{i}"))
    return out


async def test_short_messages_stay_whole_while_long_ones_free_enough() -> None:
    memory = InMemoryMemory(thresholds={"pre_rot_threshold": 8000, "keep_recent_count": 2})
    for message in _turns(14):
        await memory.add(message, session_id="s")
    events = await memory.list("s", include_summaries=False)
    compacted = {e["message"]["id"] for e in events if is_compacted(e)}
    assert compacted, "the view crossed the compaction trigger"
    assert all(i.startswith("a") for i in compacted), sorted(compacted)
    assert all(e["message"]["content"].startswith("Note") for e in events if e["message"]["role"] == "user")


async def test_short_messages_are_compacted_when_nothing_else_frees_room() -> None:
    memory = InMemoryMemory(
        thresholds={"pre_rot_threshold": 400, "keep_recent_count": 2, "min_compaction_gain": 1},
        enable_context_management=False,
    )
    lines = [f"Note {i}: my locker code is {1000 + i}, and the gym on Elm Street opens at seven." for i in range(20)]
    for i, line in enumerate(lines):
        await memory.add(Message.text_message(line, message_id=f"u{i}"), session_id="s")
    report = await memory.manage_context("s")
    assert report.tier == "compaction" and report.compacted_ids[0] == "u0"
