"""Three-tier session memory on SQLite: a generated coding session grows past its thresholds and is managed.

Tier 1 keeps events as they are. Past the compaction trigger (80% of ``pre_rot_threshold``) the oldest events are
compacted reversibly: their text is replaced by a short gist and the original stays inside the event. Past the
summarization trigger (95%) everything but the newest ``keep_recent_count`` events is folded into one structured
summary. Nothing is deleted: `decompress` brings a compacted event back byte for byte, and `history_messages`
returns every message exactly as it was added.

Run: python examples/memory_session.py [--steps 40] [--db path/to/memory.db]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from windowkeeper import ContextReport, Message, SQLiteMemory
from windowkeeper.memory import COMPACTION_KEY, BaseMemory
from windowkeeper.memory.events import message_to_event
from windowkeeper.testing.sessiongen import generate_session

SESSION = "fix-billing"


def first_lines(text: str, n: int, width: int = 110) -> list[str]:
    return [line if len(line) <= width else line[: width - 3] + "..." for line in text.splitlines()[:n]]


async def restore_one(memory: BaseMemory[Any], original: Callable[[str], Message]) -> list[str]:
    """Decompress the compacted event of the working view that saved the most and check it against the message
    that was added."""
    view = await memory.list(SESSION, include_summaries=False)
    compacted = max(
        (e for e in view if COMPACTION_KEY in e["state"]), key=lambda e: e["state"][COMPACTION_KEY]["tokens_saved"]
    )
    event_id = compacted["message"]["id"]
    info = compacted["state"][COMPACTION_KEY]
    lines = [
        f"event {event_id} in the view: {compacted['message']['content']}",
        f"  compaction saved {info['tokens_saved']} tokens, strategy {info['strategy']!r}",
    ]
    before = await memory.tokens(SESSION)
    restored = await memory.decompress(event_id, session_id=SESSION)
    text = message_to_event(original(event_id))["message"]["content"]
    identical = restored["message"]["content"].encode("utf-8") == text.encode("utf-8")
    lines.append(f"decompressed {event_id}: {len(text)} chars, byte-identical: {identical}")
    lines.append(f"working view: {before} -> {await memory.tokens(SESSION)} tokens (the restored event is pinned)")
    return lines


async def main(steps: int, db: Path) -> None:
    session = generate_session(steps, seed=3)
    thresholds = {"pre_rot_threshold": 4000, "compaction_trigger": 0.8, "summarization_trigger": 0.95}
    async with SQLiteMemory(db, thresholds={**thresholds, "keep_recent_count": 8}) as memory:
        th = memory.thresholds
        print(
            f"adding {len(session.messages)} messages; compaction at {th.compaction_limit:g} tokens, "
            f"summarization at {th.summarization_limit:g} tokens, newest {th.keep_recent_count} events kept"
        )
        firsts: dict[str, ContextReport] = {}
        tiers = {"none": 0, "compaction": 0, "summarization": 0}
        restored_lines: list[str] = []
        for message in session.messages:
            report = await memory.add(message, session_id=SESSION)
            assert report is not None and report.failure is None
            tiers[report.tier] += 1
            firsts.setdefault(report.tier, report)
            if report.compacted_ids and not restored_lines:
                # right after the first compaction, while its events are still in the working view (a later
                # summary may fold them in; `history_messages` keeps every original either way)
                restored_lines = await restore_one(memory, session.message_by_id)
        print(f"adds per tier: {tiers}")
        for tier in ("compaction", "summarization"):
            print(f"first {tier}: {firsts[tier].describe()}")
        for line in restored_lines:
            print(line)

        summary = (await memory.summaries(SESSION))[-1]
        made = len(await memory.summaries(SESSION, include_inactive=True))
        print(
            f"active summary stands for {summary.count} events ({made} summaries made, each folding in the one "
            f"before; this one covered {len(summary.covered_ids)} new events and superseded {len(summary.supersedes)})"
        )
        print(f"  user_goal: {summary.user_goal}")
        print(f"  key_decisions: {len(summary.key_decisions)}, modified_files: {len(summary.modified_files)}")
        print(f"  critical_context keys: {sorted(summary.critical_context)}")
        print("  rendered for the model:")
        for line in first_lines(summary.render(), 6):
            print(f"    {line}")

        everything = await memory.history_messages(SESSION)
        exact = [m.model_dump() for m in everything] == [m.model_dump() for m in session.messages]
        print(f"history: {len(everything)} messages, identical to what was added: {exact}")
        print(
            f"working view now: {len(await memory.messages(SESSION))} messages, {await memory.tokens(SESSION)} tokens"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40, help="model calls in the generated session")
    parser.add_argument("--db", type=Path, default=None, help="SQLite file (default: a temporary one)")
    args = parser.parse_args()
    if args.db is not None:
        asyncio.run(main(args.steps, args.db))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            asyncio.run(main(args.steps, Path(tmp) / "memory.db"))
