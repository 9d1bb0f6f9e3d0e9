"""What an agent's session log keeps beside its messages, so a compacted log is written back in its own format.

A log (a coding agent's session JSONL, a Responses-family rollout) holds events, not a request: several events can
make one model turn (an assistant reply written one content block per line) and many events are not conversation
at all (file snapshots, token counts, turn settings). `Transcript` remembers every event, which events made each
message, and what each message looked like when read. `write_events` then emits the events of the messages a
manager kept byte for byte, and rewrites only the events whose messages it changed (a cleared tool result) or
that it added (a summary).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..messages import Message


@dataclass(frozen=True)
class Group:
    """The events (indices into `Transcript.events`) that made some messages, and those messages' fingerprints."""

    events: tuple[int, ...]
    message_ids: tuple[Hashable, ...]
    fingerprints: tuple[str, ...]


@dataclass
class Transcript:
    """Every event of a log, the groups of events that made messages, and the count of skipped event types."""

    kind: str
    events: list[dict[str, Any]]
    groups: list[Group] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)
    by_message: dict[Hashable, int] = field(default_factory=dict)

    def add(self, events: Sequence[int], messages: Sequence[Message]) -> None:
        """Record that ``events`` made ``messages`` (their ids must be unique in the log)."""
        group = Group(tuple(events), tuple(m.message_id for m in messages), tuple(m.fingerprint() for m in messages))
        index = len(self.groups)
        self.groups.append(group)
        for message in messages:
            self.by_message[message.message_id] = index


def event_objects(
    events: Sequence[Any], lines: Sequence[int], problems: list[str]
) -> Iterator[tuple[int, Mapping[str, Any], str]]:
    """``(index, event, type)`` of each event that is a JSON object; any other value is a problem by line."""
    for i, event in enumerate(events):
        if not isinstance(event, Mapping):
            problems.append(f"line {lines[i]}: is not a JSON object")
            continue
        kind = event.get("type")
        yield i, event, kind if isinstance(kind, str) else str(kind)


def parse_timestamp(value: Any) -> float | None:
    """An ISO-8601 event time (``2025-06-01T10:00:00.123Z``) as epoch seconds; None when absent or unreadable."""
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


Rewrite = Callable[[Group | None, list[Message]], list[dict[str, Any]]]
"""Builds the events for messages a manager changed (their group) or added (None)."""


def write_events(transcript: Transcript, view: Sequence[Message], rewrite: Rewrite) -> list[dict[str, Any]]:
    """The events of ``view`` in order: a group whose messages are all present and unchanged is written as it was
    read; any other group, and every message no group made, through ``rewrite``."""
    runs: list[tuple[int | None, list[Message]]] = []
    for message in view:
        made_by = transcript.by_message.get(message.message_id)
        if runs and runs[-1][0] == made_by:  # the same group, or another message no group made
            runs[-1][1].append(message)
        else:
            runs.append((made_by, [message]))
    out: list[dict[str, Any]] = []
    for index, messages in runs:
        if index is None:
            out.extend(rewrite(None, messages))
            continue
        group = transcript.groups[index]
        same = tuple(m.message_id for m in messages) == group.message_ids and all(
            m.fingerprint() == fp for m, fp in zip(messages, group.fingerprints, strict=True)
        )
        if same:
            out.extend(transcript.events[i] for i in group.events)
        else:
            out.extend(rewrite(group, messages))
    return out
