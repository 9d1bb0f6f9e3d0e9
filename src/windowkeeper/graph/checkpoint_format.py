"""The stored form of a checkpoint: the state with its view as references into the thread's message log.

The log already holds every message once, so a snapshot need not repeat them. A snapshot (format 2) is

    {"windowkeeper_checkpoint": 2, "id": "<hex>", "state": {...every field but context...},
     "context": [[start, count, first_key, last_key], {"m": {...a message...}}, ...]}

where a list entry is a run of ``count`` consecutive log positions from ``start`` (its first and last message keys
let a reader check that the log still holds those messages there) and an ``{"m": ...}`` entry is a message the log
does not hold exactly as it is in the view (a pointer, a cut body, a copy with other metadata), with its
`Message.fingerprint` as ``"f"`` (absent in snapshots written before it was stored; then it is computed on use).
Logged messages carry theirs in the log (`windowkeeper.storage.base.encode_message`), so a view read back in
another process is recognised by a context manager without hashing any message.

A view that only grew since the previous snapshot is encoded from what it appended: the earlier messages are the
same objects, unedited (the message edit epoch covers content, role, tool calls and reasoning). Fields outside
those (``metadata``, ``usages``, ``timestamp``) changed in place on a message already stored are therefore not
written again; replace the message (``model_copy(update=...)``) to store such a change.

Without a context manager the view is the log, so a step writes one run and the messages it added; with one, the
view's messages are mostly runs too.

Snapshots written before this format are plain state dicts; `is_envelope` tells them apart, and they load as
they always did (the first write after an upgrade stores the new form).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import StorageError
from ..messages import Message, edited_since
from ..storage.base import message_key

FORMAT_KEY = "windowkeeper_checkpoint"
FORMAT_VERSION = 2


def body_hash(message: Message) -> str:
    """A hash of everything stored of ``message`` (metadata, usage and timestamp included, not only what a model
    sees), so a view message is referred to the log only when the log holds exactly it."""
    return hashlib.blake2b(message.model_dump_json().encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


@dataclass
class LogIndex:
    """Where this process knows a thread's logged messages are: key to (position, `body_hash` of that copy).

    Messages appended to the log or read back from it are recorded without hashing them (`record_read`): the
    object is the logged copy, so as long as the view holds that very object, unedited, it is the logged one.
    Its hash is computed only when a different object with its key must be compared (`logged_at`); hashing on
    record cost a put two serializations per new message and a restarted process's first read one per message
    of the view.

    A restarted process's first read of a thread records its runs as they are (`defer_read`) and keys them only
    when a lookup needs them: keying a 10k-message view cost ~1 us a message, ~5% of the read, and the put that
    follows a read (the view grown by a turn) looks up only the messages it appends, which it records itself.
    """

    length: int
    where: dict[str, tuple[int, str]] = field(default_factory=dict)
    read: dict[str, tuple[int, Message, int]] = field(default_factory=dict)
    deferred: list[tuple[Sequence[Message], int, int]] = field(default_factory=list)
    """Runs read back (messages, first position, epoch) not yet keyed into ``read``, oldest first; all of them
    newer than what ``read`` held when they came and older than anything recorded in ``read`` since."""

    def record_read(self, messages: Sequence[Message], start: int, epoch: int) -> None:
        """``messages`` are the copies at log positions ``start``... (written or read at `edit_epoch` ``epoch``)."""
        # one comprehension: a restarted read records every message of the view, and a loop of item assignments
        # cost half as much again (~0.3 us a message)
        key = message_key
        self.read.update({key(m.message_id): (start + offset, m, epoch) for offset, m in enumerate(messages)})

    def defer_read(self, messages: Sequence[Message], start: int, epoch: int) -> None:
        """`record_read` of a run read back from the log, keyed when a lookup first needs it (see the class note).

        Only while ``read`` is empty (a thread this process had not recorded yet): a key recorded there before
        would otherwise outlive the newer record of the run.
        """
        if self.read:
            self.settle()
            self.record_read(messages, start, epoch)
        else:
            self.deferred.append((messages, start, epoch))

    def settle(self) -> None:
        """Key the deferred runs into ``read``, under what was recorded there after them."""
        if not self.deferred:
            return
        runs, self.deferred = self.deferred, []
        later, self.read = self.read, {}
        for messages, start, epoch in runs:
            self.record_read(messages, start, epoch)
        self.read.update(later)

    def knows(self, key: str) -> bool:
        """Whether ``key`` is recorded as logged, deferred runs aside (a caller that needs those settles first)."""
        return key in self.where or key in self.read

    def logged_at(self, key: str, message: Message) -> int | None:
        """The log position of ``message`` when the log holds exactly it under ``key``, else None."""
        logged = self.where.get(key)
        if logged is None:
            found = self.read.get(key)
            if found is None:
                if not self.deferred:
                    return None
                self.settle()
                return self.logged_at(key, message)
            position, copy, epoch = found
            if message is copy and not edited_since(copy, epoch):
                return position
            # another object (or this one edited): compare bodies, hashing the copy read once, as it was read
            del self.read[key]
            if edited_since(copy, epoch):
                return None
            logged = self.where[key] = (position, body_hash(copy))
        return logged[0] if logged[1] == body_hash(message) else None


def is_envelope(raw: dict[str, Any]) -> bool:
    return raw.get(FORMAT_KEY) == FORMAT_VERSION and isinstance(raw.get("context"), list)


def encode_context(context: Sequence[Message], index: LogIndex, into: list[Any] | None = None) -> list[Any]:
    """Runs of log positions for the messages the log holds unchanged, the other messages inline.

    ``into`` is the encoding of the messages before ``context`` (the previous snapshot's, when the view only grew):
    the new messages extend it, continuing its last run when they follow it in the log.
    """
    out: list[Any] = into if into is not None else []
    run: list[Any] | None = out[-1] if out and isinstance(out[-1], list) else None
    for message in context:
        key = message_key(message.message_id)
        position = index.logged_at(key, message)
        if position is not None:
            if run is not None and run[0] + run[1] == position:
                run[1] += 1
                run[3] = key
                continue
            run = [position, 1, key, key]
            out.append(run)
            continue
        run = None
        # the fingerprint goes along, so a reader in another process need not hash the message again
        out.append({"m": message.model_dump(mode="json"), "f": message.fingerprint()})
    return out


def copy_runs(encoded: list[Any]) -> list[Any]:
    """A copy of an encoding that can be extended without changing the original (runs are mutable lists)."""
    out = list(encoded)
    if out and isinstance(out[-1], list):
        out[-1] = list(out[-1])
    return out


def parse_run(thread_id: str, entry: object) -> tuple[int, int, str, str]:
    if (
        isinstance(entry, list)
        and len(entry) == 4
        and all(isinstance(v, int) and not isinstance(v, bool) for v in entry[:2])
        and all(isinstance(v, str) for v in entry[2:])
        and entry[0] >= 0
        and entry[1] >= 1
    ):
        return entry[0], entry[1], entry[2], entry[3]
    raise StorageError(
        f"thread {thread_id!r}: the stored checkpoint has a malformed context entry {entry!r} "
        "(expected [start, count, first_key, last_key] or {'m': message})",
    )


def run_matches(messages: Sequence[Message], count: int, first: str, last: str) -> bool:
    """Whether a run read from the log is the one written: the right length and the same messages at both ends.

    Log keys are unique per thread and the log only grows, so equal ends at the recorded positions mean the
    positions between hold what they held when the checkpoint was written.
    """
    return (
        len(messages) == count
        and message_key(messages[0].message_id) == first
        and message_key(messages[-1].message_id) == last
    )
