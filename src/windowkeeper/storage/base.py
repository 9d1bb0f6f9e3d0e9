"""The one storage contract every backend implements, plus the JSON codec they share.

Two users sit on top of a store: the checkpointer (per thread, an append-only message log and the newest state
snapshot) and the session memory (ordered, versioned documents per namespace and session). Keeping both behind
one small async interface means a new backend is written once and proven once, by the conformance suite in
`windowkeeper.testing.conformance`.

Everything is stored as JSON text produced here, so every backend returns byte-for-byte what another would, and
corrupt rows surface as a `StorageError` that says which thread or key holds them instead of a bare decode error.

The codec refuses at write time what it could not read back, with the same limits on both sides (see
`windowkeeper.boundary`): a message nested more than `MAX_JSON_DEPTH` levels (a state snapshot or memory record
more than `MAX_DOC_DEPTH`), and NaN or Infinity anywhere. Every backend, the checkpointer and the memory share one
NaN policy: strict JSON, a `StorageError` naming the path of the bad number, nothing written. Storing a thread
and then finding it unreadable (``get_messages()`` failing for every earlier message too) is therefore
impossible. Lone surrogates never reach the codec from validated models; in raw documents they are replaced by
U+FFFD like everywhere else.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import zlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import ValidationError
from pydantic_core import PydanticSerializationError, from_json

from ..boundary import MAX_DOC_DEPTH, MAX_JSON_DEPTH, clean_text, has_lone_surrogate, json_depth, json_problem
from ..errors import ConfigurationError, StorageError
from ..messages import Message, message_from_stored, message_from_trusted


class ConflictError(StorageError):
    """An optimistic write lost: the stored version differs from the one the caller read, or the key exists.

    Callers re-read the record and retry; nothing was written by the failed call.
    """

    def __init__(
        self, message: str, *, key: str | None = None, expected: int | None = None, actual: int | None = None
    ) -> None:
        super().__init__(message)
        self.key = key
        self.expected = expected
        self.actual = actual


class RecordNotFoundError(StorageError, KeyError):
    """`update_record` named a key that was never added (call `add_record` first)."""

    def __str__(self) -> str:  # KeyError would repr() the message otherwise
        return str(self.args[0]) if self.args else ""


class Record:
    """One versioned document of the memory layer (immutable).

    ``seq`` orders records within a session (strictly increasing in add order, gaps allowed) and never changes;
    ``version`` starts at 1 and grows by one on every update, which is what optimistic updates compare against.

    A record made with `Record.stored` keeps its JSON text and decodes it on the first access to ``doc``: a reader
    that needs a few leading fields of many records (the memory's reload) can look at ``body`` instead of paying
    for every document's text. The built-in backends return such records from `list_records_since_skipping` (a
    corrupt body then raises `StorageError` naming the key at that access) and from writes (the text they just
    encoded, so a writer that never reads the doc back never decodes it).
    """

    __slots__ = ("_body", "_check", "_doc", "_origin", "key", "seq", "version")

    key: str
    seq: int
    version: int
    _doc: dict[str, Any] | None
    _body: str | bytes | None
    _origin: str
    _check: DocCheck | None

    def __init__(self, key: str, seq: int, version: int, doc: dict[str, Any]) -> None:
        object.__setattr__(self, "key", key)
        object.__setattr__(self, "seq", seq)
        object.__setattr__(self, "version", version)
        object.__setattr__(self, "_doc", doc)
        object.__setattr__(self, "_body", None)
        object.__setattr__(self, "_origin", "")
        object.__setattr__(self, "_check", None)

    @classmethod
    def stored(cls, key: str, seq: int, version: int, body: str | bytes, *, origin: str = "") -> Record:
        """A record whose ``doc`` is decoded from ``body`` (the stored JSON text) when first used.

        ``origin`` (the store and session it was read from) is named by the error a corrupt body raises then.
        """
        record = cls.__new__(cls)
        for name, value in (
            ("key", key),
            ("seq", seq),
            ("version", version),
            ("_doc", None),
            ("_body", body),
            ("_origin", origin),
            ("_check", None),
        ):
            object.__setattr__(record, name, value)
        return record

    @property
    def doc(self) -> dict[str, Any]:
        doc: dict[str, Any] | None = self._doc
        if doc is None:
            where = f"{self._origin}: record" if self._origin else "record"
            doc = decode_doc(self._body if self._body is not None else "", key=self.key, what=where)
            if self._check is not None:
                self._check(self, doc)
            object.__setattr__(self, "_doc", doc)
            object.__setattr__(self, "_body", None)
        return doc

    def decoded(self) -> Record:
        """This record with its doc decoded (and checked) now; returns ``self``."""
        _ = self.doc
        return self

    @property
    def origin(self) -> str:
        """Where the record was read from (backend, prefix, session), or ``""`` for one built in memory."""
        return self._origin

    def checked(self, check: DocCheck, origin: str | None = None) -> Record:
        """This record with ``check(record, doc)`` run on its doc: now if it is decoded, else when it is.

        A reader that gives stored documents a meaning (the memory layer) validates their shape this way without
        decoding bodies it never uses; ``check`` raises `StorageError` for a doc it cannot use. Returns ``self``.
        """
        if origin is not None:
            object.__setattr__(self, "_origin", origin)
        if self._doc is not None:
            check(self, self._doc)
        else:
            object.__setattr__(self, "_check", check)
        return self

    @property
    def body(self) -> str | bytes | None:
        """The stored JSON text while ``doc`` has not been decoded yet, else ``None``."""
        return self._body

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Record is immutable; build a new Record instead of setting {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"Record is immutable; {name!r} cannot be deleted")

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, Record)
        return (self.key, self.seq, self.version, self.doc) == (other.key, other.seq, other.version, other.doc)

    __hash__ = None  # type: ignore[assignment]  # the doc is a dict: records are not hashable

    def __repr__(self) -> str:
        return f"Record(key={self.key!r}, seq={self.seq!r}, version={self.version!r}, doc={self.doc!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (Record, (self.key, self.seq, self.version, self.doc))


@dataclass(frozen=True)
class RawRow:
    """One stored row as a backend holds it, before any decoding: what `store check` validates and removes.

    ``kind`` is ``"message"`` (``scope`` = ``(thread_id,)``, ``key`` the message key, ``position`` its index in
    the log), ``"state"`` (``(thread_id,)``) or ``"record"`` (``(namespace, session_id)``, with ``seq`` and
    ``version`` as stored). ``handle`` is the backend's own address of the row, for `SessionStore.remove_raw`.
    """

    kind: str
    scope: tuple[str, ...]
    key: str
    body: object
    position: int = 0
    seq: object = None
    version: object = None
    handle: Any = None
    problem: str | None = None
    """Set by a backend that already knows the row is unusable (a Redis key of the wrong type)."""


DocCheck = Callable[["Record", dict[str, Any]], None]
"""Validates a decoded record doc (`Record.checked`); raises `StorageError` naming the record."""

RecordUpdate = tuple[str, dict[str, Any], int | None]
"""``(key, new_doc, expected_version)``; ``None`` skips the version check for that key."""


class SessionStore(ABC):
    """Async persistence for message logs, state snapshots and versioned records.

    Guarantees every backend must keep (the conformance suite checks them):

    * appends are idempotent per ``message_id``: the first stored copy wins and re-appending is a no-op;
    * the log is returned in append order and never reordered or deduplicated on read;
    * a state write replaces the previous snapshot atomically (a crash leaves the old or the new one);
    * a versioned update with a stale ``expected_version`` raises `ConflictError` and writes nothing;
    * threads and sessions never see each other's data.
    """

    steps_directly: ClassVar[bool] = False
    """Whether this class's methods need no task of their own before they first wait (no ``asyncio.timeout``,
    task groups, or other readers of ``asyncio.current_task()`` before a real wait): the sync checkpointer API
    then steps them on the calling thread without one, which is what makes an in-memory read as cheap as its
    async form (see `windowkeeper._bridge.run_sync`). Read from the class's own namespace, never inherited: a
    subclass, which may override methods, opts in by declaring it again."""

    steps_without_loop: ClassVar[bool] = False
    """With `steps_directly`: the methods also never look for the running loop before they first wait (no futures,
    sleeps, executors, loop lookups), so the sync reads step them without even marking a loop as running. Read
    from the class's own namespace, like `steps_directly`."""

    commits_state: ClassVar[bool] = False
    """Whether ``put_state`` is itself a compare-and-set against the version ``get_state`` read, raising
    `ConflictError` when another writer committed first (the gateway's ``CommitStore``). A `Window` keeps its
    per-thread head there and leaves conflicts to the store's owner; on any other store it writes the head as a
    versioned record of its own, so two writers on one thread cannot overwrite each other."""

    def describe(self) -> str:
        """How errors and logs name this store: backend, location (secrets masked, see `mask_url`) and prefix."""
        return type(self).__name__

    def _origin(self, namespace: str, session_id: str) -> str:
        return session_origin(self.describe(), namespace, session_id)

    # -- checkpointer side ----------------------------------------------------------------------------------

    @abstractmethod
    async def append_messages(self, thread_id: str, messages: Sequence[Message]) -> int:
        """Append messages whose id is not yet in the thread's log; return how many were new."""

    @abstractmethod
    async def load_messages(self, thread_id: str) -> list[Message]:
        """The thread's full log in append order (empty for an unknown thread)."""

    @abstractmethod
    async def put_state(self, thread_id: str, state: dict[str, Any]) -> None:
        """Replace the thread's state snapshot."""

    @abstractmethod
    async def get_state(self, thread_id: str) -> dict[str, Any] | None:
        """The newest snapshot, or ``None`` when the thread has none."""

    async def count_messages(self, thread_id: str) -> int:
        """How many messages the thread's log holds (backends override this with a count that reads no bodies)."""
        return len(await self.load_messages(thread_id))

    async def load_messages_range(self, thread_id: str, start: int, stop: int) -> list[Message]:
        """Log positions ``start`` to ``stop - 1`` in append order (fewer at the end of the log).

        Checkpoints point into the log by position, so resuming a thread reads only the part its view holds;
        backends override this with a query that reads only those rows.
        """
        return (await self.load_messages(thread_id))[max(start, 0) : max(stop, 0)]

    # -- memory side ----------------------------------------------------------------------------------------

    @abstractmethod
    async def add_record(self, namespace: str, session_id: str, key: str, doc: dict[str, Any]) -> Record:
        """Append a new record at version 1; `ConflictError` if ``key`` already exists in the session."""

    async def update_record(
        self,
        namespace: str,
        session_id: str,
        key: str,
        doc: dict[str, Any],
        *,
        expected_version: int | None = None,
    ) -> Record:
        """Replace a record's doc and bump its version; `ConflictError` when ``expected_version`` is stale.

        A batch of one, so a single update gets exactly the checks and atomicity of `update_records`.
        """
        return (await self.update_records(namespace, session_id, [(key, doc, expected_version)]))[0]

    @abstractmethod
    async def update_records(
        self,
        namespace: str,
        session_id: str,
        updates: Sequence[RecordUpdate],
    ) -> list[Record]:
        """Apply several updates all-or-nothing, with the same checks as `update_record`."""

    @abstractmethod
    async def get_record(self, namespace: str, session_id: str, key: str) -> Record | None:
        """One record, or ``None``."""

    @abstractmethod
    async def list_records(self, namespace: str, session_id: str) -> list[Record]:
        """Every record of the session in ``seq`` order."""

    async def list_records_since(self, namespace: str, session_id: str, seq: int) -> list[Record]:
        """The session's records whose ``seq`` is at least ``seq``, in ``seq`` order.

        The memory layer reloads only its live tail this way. This default filters `list_records` (correct on any
        backend, but it reads everything); backends override it with an indexed read.
        """
        return [r for r in await self.list_records(namespace, session_id) if r.seq >= seq]

    async def list_records_since_skipping(
        self, namespace: str, session_id: str, seq: int, skip_prefix: str
    ) -> list[Record]:
        """`list_records_since` without the records whose key starts with ``skip_prefix``.

        The memory layer writes bulky records (archived originals) in between the small live ones; a reload skips
        them without reading or decoding their bodies. This default filters `list_records_since` (correct on any
        backend, including one that overrides only that method); the built-in backends filter in the query and
        return records whose docs are decoded on first use (`Record.stored`), so a reader that needs only their
        leading fields can read ``body``.
        """
        check_id(skip_prefix, "skip_prefix")
        records = await self.list_records_since(namespace, session_id, seq)
        return [r for r in records if not r.key.startswith(skip_prefix)]

    async def get_records(self, namespace: str, session_id: str, keys: Sequence[str]) -> list[Record]:
        """The records named by ``keys`` that exist, in ``seq`` order (one read where the backend allows)."""
        found = [await self.get_record(namespace, session_id, key) for key in dict.fromkeys(keys)]
        return sorted((r for r in found if r is not None), key=lambda r: r.seq)

    @abstractmethod
    async def delete_record(self, namespace: str, session_id: str, key: str) -> bool:
        """Remove one record; ``True`` if it existed."""

    @abstractmethod
    async def delete_session(self, namespace: str, session_id: str) -> int:
        """Remove every record of a session; return how many there were."""

    # -- batching -------------------------------------------------------------------------------------------

    def batch(self) -> contextlib.AbstractAsyncContextManager[None]:
        """``async with store.batch():`` groups the calls the current task makes inside it into fewer
        round trips where the backend can (one transaction for SQLite). Each call keeps its own checks and
        its own all-or-nothing effect (a call that raises writes nothing, the others inside still do), so code
        written for single calls may wrap a sequence of them unchanged; what a batch adds is only that a crash
        inside it keeps none of its writes rather than some. The default runs each call as it comes."""
        return contextlib.nullcontext()

    # -- maintenance ----------------------------------------------------------------------------------------

    async def raw_rows(self) -> list[RawRow]:
        """Every stored row as written, undecoded, for `windowkeeper.storage.check` (reads the whole store).

        A backend that cannot enumerate its rows raises `StorageError`; the built-in ones all can.
        """
        raise StorageError(f"{self.describe()} cannot list its rows; `store check` supports the built-in backends")

    async def remove_raw(self, row: RawRow) -> bool:
        """Delete one row `raw_rows` returned (a bad one); ``True`` if it was still there."""
        raise StorageError(f"{self.describe()} cannot remove rows; `store check` supports the built-in backends")

    # -- lifecycle ------------------------------------------------------------------------------------------

    @abstractmethod
    async def delete_thread(self, thread_id: str) -> None:
        """Remove a thread's log and state."""

    @abstractmethod
    async def close(self) -> None:
        """Release connections; the store must not be used afterwards."""

    async def __aenter__(self) -> SessionStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


# -- argument checks ------------------------------------------------------------------------------------------

_PREFIX_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,40}$")


def check_prefix(prefix: str) -> str:
    """Table and key prefixes end up in SQL identifiers, so only identifier characters are accepted."""
    if not isinstance(prefix, str) or not _PREFIX_RE.match(prefix):
        raise ConfigurationError(
            f"storage prefix {prefix!r} is invalid: use 1-41 letters, digits or underscores, not starting with a digit",
        )
    return prefix


def check_id(value: object, what: str) -> str:
    """A store address must be a non-empty string every driver can encode.

    A lone surrogate or a NUL is refused rather than replaced: rewriting an address could merge two callers'
    data.
    """
    if not isinstance(value, str) or not value:
        raise ConfigurationError(f"{what} must be a non-empty string, got {value!r}")
    if has_lone_surrogate(value):
        raise ConfigurationError(
            f"{what} {value!r} holds a lone surrogate, which no store can encode; "
            "pass windowkeeper.boundary.clean_id(value) to keep it distinct and storable",
        )
    if "\x00" in value:
        # refused by every store alike, not only by the one that cannot hold it (PostgreSQL text)
        fixed = value.replace("\x00", "\\0")
        raise ConfigurationError(
            f"{what} {value!r} holds a NUL character, which PostgreSQL cannot store; use {fixed!r} or another id "
            "without it",
        )
    return value


def check_session(namespace: object, session_id: object) -> None:
    check_id(namespace, "namespace")
    check_id(session_id, "session_id")


def check_new_record(namespace: object, session_id: object, key: object, doc: object) -> str:
    """Validate `add_record`'s arguments and encode its doc, so a bad call fails before the backend is touched."""
    check_session(namespace, session_id)
    return encode_doc(doc, key=check_id(key, "record key"))


def check_version(expected: object, key: str) -> int | None:
    if expected is None:
        return None
    if isinstance(expected, bool) or not isinstance(expected, int) or expected < 1:
        raise ConfigurationError(
            f"expected_version for record {key!r} must be a positive int or None, got {expected!r}",
        )
    return expected


def check_updates(updates: Sequence[RecordUpdate]) -> list[tuple[str, str, int | None]]:
    """Validate a batch and encode its docs up front, so a bad doc fails before anything is written."""
    out: list[tuple[str, str, int | None]] = []
    seen: set[str] = set()
    for item in updates:
        key, doc, expected = item
        check_id(key, "record key")
        if key in seen:
            raise ConfigurationError(f"record key {key!r} appears twice in one update_records batch; merge the updates")
        seen.add(key)
        out.append((key, encode_doc(doc, key=key), check_version(expected, key)))
    return out


# -- record outcomes ------------------------------------------------------------------------------------------
# Every backend reports the same failures in the same words, so callers (and the conformance suite) can rely on
# them whichever store they run on.


def record_exists(namespace: str, session_id: str, key: str) -> ConflictError:
    return ConflictError(f"record {key!r} already exists in {namespace!r}/{session_id!r}; use update_record", key=key)


def record_missing(namespace: str, session_id: str, key: str) -> RecordNotFoundError:
    return RecordNotFoundError(f"record {key!r} does not exist in {namespace!r}/{session_id!r}; add it first")


def version_conflict(namespace: str, session_id: str, key: str, expected: int | None, actual: int) -> ConflictError:
    return ConflictError(
        f"record {key!r} in {namespace!r}/{session_id!r} is at version {actual}, "
        f"expected {expected}; re-read and retry",
        key=key,
        expected=expected,
        actual=actual,
    )


def check_expected(namespace: str, session_id: str, key: str, expected: int | None, version: int | None) -> int:
    """The optimistic-update rule: the record must exist and, when the caller read a version, still be at it."""
    if version is None:
        raise record_missing(namespace, session_id, key)
    if expected is not None and version != expected:
        raise version_conflict(namespace, session_id, key, expected, version)
    return version


MAX_COUNTER = 2**53
"""The largest seq or version a store hands out or reads back: exact in every driver (Redis scores and Lua
numbers are doubles) and far beyond any session's life, so a larger stored value can only be an edit."""


def stored_counter(value: object, *, origin: str, key: str, field: str) -> int:
    """A stored seq or version as an int; `StorageError` naming the record and the value when it is not one.

    Drivers give ints (SQL), numeric strings (Redis hashes) or float scores (Redis sorted sets) for the same
    column; anything else (text, a fraction, NaN, ``1e300``, a value below 1) is a hand-edited or foreign row.
    """
    number: int | None = None
    if type(value) is int:
        number = value
    elif type(value) is float and value.is_integer() and abs(value) <= MAX_COUNTER:
        number = int(value)
    elif isinstance(value, str | bytes) and 0 < len(value) <= 20:
        text = value.decode("ascii", "replace") if isinstance(value, bytes) else value
        if text.isascii() and text.isdigit():
            number = int(text)
        else:
            try:
                as_float = float(text)
            except ValueError:
                number = None
            else:
                number = int(as_float) if as_float.is_integer() and abs(as_float) <= MAX_COUNTER else None
    if number is None or not 1 <= number <= MAX_COUNTER:
        raise StorageError(
            f"{origin}: record {key!r} has {field} {value!r}, not an integer from 1 to {MAX_COUNTER} "
            "(edited or foreign data); list and remove bad records with `windowkeeper store check URL --remove`",
        )
    return number


def make_record(
    key: str,
    seq: object,
    version: object,
    body: str | bytes,
    *,
    origin: str = "",
) -> Record:
    """A `Record` from stored columns, decoded now; every field is checked (see `stored_counter`)."""
    return stored_record(key, seq, version, body, origin=origin).decoded()


def stored_record(
    key: str,
    seq: object,
    version: object,
    body: str | bytes | None,
    *,
    origin: str = "",
) -> Record:
    """`make_record` whose doc is decoded on first use (see `Record.stored`)."""
    where = origin or "store"
    if not isinstance(key, str):
        raise StorageError(f"{where}: a record key is {key!r}, not a string (edited or foreign data)")
    if not isinstance(body, str | bytes):
        raise StorageError(
            f"{where}: record {key!r} has no body (edited or foreign data); "
            "list and remove bad records with `windowkeeper store check URL --remove`",
        )
    return Record.stored(
        key,
        stored_counter(seq, origin=where, key=key, field="seq"),
        stored_counter(version, origin=where, key=key, field="version"),
        body,
        origin=origin,
    )


def stored_limit(origin: str, key: str, version: int) -> StorageError:
    """A version that cannot grow any more: only an edited row gets there."""
    return StorageError(
        f"{origin}: record {key!r} is at version {version}, the largest a store keeps (an edited value?); "
        "list and remove bad records with `windowkeeper store check URL --remove`",
    )


def session_origin(store: str, namespace: str, session_id: str) -> str:
    """How errors name a session: the store (backend, location, prefix) and the namespace/session."""
    return f"{store}, session {namespace!r}/{session_id!r}"


def check_seq(seq: object) -> int:
    """A ``seq`` argument of the ``list_records_since`` family: an int a driver can bind (anything below 1 is 1)."""
    if isinstance(seq, bool) or not isinstance(seq, int):
        raise ConfigurationError(f"seq must be an int, got {seq!r}")
    return min(max(seq, 1), MAX_COUNTER + 1)


# -- JSON codec -----------------------------------------------------------------------------------------------


def message_key(message_id: str | int) -> str:
    """The identity a log deduplicates on.

    JSON-encoding keeps ``1`` and ``"1"`` distinct, matching how `add_messages` compares ids. An id of printable
    ASCII without quotes or backslashes (what generated ids are) encodes as itself in quotes, without the encoder.
    """
    if (
        type(message_id) is str
        and message_id.isascii()
        and message_id.isprintable()
        and '"' not in message_id
        and "\\" not in message_id
    ):
        return f'"{message_id}"'
    return json.dumps(message_id)


def encode_message(thread_id: str, message: Message) -> str:
    if not isinstance(message, Message):
        raise ConfigurationError(
            f"thread {thread_id!r}: append_messages accepts Message objects, got {type(message).__name__}",
        )
    try:
        body = message.model_dump_json()
    except PydanticSerializationError as exc:
        if "depth exceeded" in str(exc):  # pydantic's serializer stops at about 255 levels
            raise StorageError(
                f"thread {thread_id!r}: message {message.message_id!r} cannot be stored: it nests more than "
                f"{MAX_JSON_DEPTH} levels deep (the limit every store can read back); flatten it",
            ) from exc
        raise StorageError(
            f"thread {thread_id!r}: message {message.message_id!r} is not JSON-serializable "
            f"(check metadata/raw for non-JSON values): {exc}",
        ) from exc
    problem = _body_problem(body, MAX_JSON_DEPTH)
    if problem is not None:
        raise StorageError(f"thread {thread_id!r}: message {message.message_id!r} cannot be stored: {problem}")
    return _stamp(body, message.fingerprint())


_FP_FIELD = ',"_fp":"'
_CRC_FIELD = ',"_f2":"'
_FP_CHARS = 32
_CHECK_CHARS = 8
_STAMP_CHARS = len(_FP_FIELD) + _FP_CHARS + _CHECK_CHARS + 2
"""A stored message body ends with ``,"_f2":"<fingerprint><check>"}`` (or ``"_fp"``): 50 characters."""
_CRC_FIELD_BYTES = _CRC_FIELD.encode("ascii")
_CRC_KEY = "_f2"
_FP_FIELD_BYTES = _FP_FIELD.encode("ascii")
_STAMP_END = len(_CRC_FIELD) - _STAMP_CHARS
_CHECK_AT = -_CHECK_CHARS - 2


def _stamp(body: str, fingerprint: str) -> str:
    """``body`` (a message's JSON object) with the message's fingerprint and a check added (stamp 2).

    A process that reads the log back (a restart, another worker) then has each message's fingerprint without
    hashing it again: that is what lets a context manager recognise a reloaded view as cheaply as a live one. The
    check makes the stored fingerprint count only for exactly that body: it is the CRC-32 of everything the row
    holds before it (the body without its closing brace, the stamp's key and the fingerprint), so a row edited
    outside windowkeeper, its fingerprint included, is fingerprinted afresh. It guards against edits and damage,
    not against someone forging rows (who could recompute any unkeyed hash), so a 32-bit CRC is as good a check as
    the 32-bit blake2b of stamp 1 (``"_fp"``, still read): 0.6 us for a 1.5 kB body instead of 2 us, and taken
    over a prefix of the row as stored, so a reader parses the row whole instead of cutting the stamp off first.
    A message's JSON always ends with its ``raw`` field (``null`` or an object), never with ``"}``, so the stamp
    cannot be mistaken for message content.
    """
    marked = f"{body[:-1]}{_CRC_FIELD}{fingerprint}"
    return f'{marked}{zlib.crc32(marked.encode("utf-8", "surrogatepass")):08x}"}}'


def _bytes_check(body: bytes) -> bytes:
    """Stamp 1's check: the first 4 bytes of the body's blake2b, in hex."""
    return hashlib.blake2b(body, digest_size=_CHECK_CHARS // 2).hexdigest().encode("ascii")


def _crc_stamped(row: bytes) -> bool:
    """Whether ``row`` (UTF-8) ends with a stamp 2 whose check matches what precedes it."""
    return (
        row[-_STAMP_CHARS:_STAMP_END] == _CRC_FIELD_BYTES
        and row[-2:] == b'"}'
        # over a copy cut short: copying even a 100 kB row costs less than the CRC of it, and for the usual
        # 1-2 kB row less than making a memoryview and a slice of it (about 90 ns a row less)
        and b"%08x" % zlib.crc32(row[:_CHECK_AT]) == row[_CHECK_AT:-2]
    )


def _unstamp(body: str | bytes) -> tuple[str | bytes, str | None]:
    """The message JSON of a stored body and its stored fingerprint (None when absent or not for this body).

    Bytes (the UTF-8 text as SQLite and Redis hand it over) are checked as they are: decoding a body to text only
    to encode it again for the check cost more than the check.
    """
    if isinstance(body, str) and not body[-_STAMP_CHARS:].isascii():
        # a stamp as written is ASCII, so this one was edited: its characters (not bytes) say where it starts
        if body.endswith('"}') and body[-_STAMP_CHARS:_STAMP_END] in (_CRC_FIELD, _FP_FIELD):
            return body[:-_STAMP_CHARS] + "}", None
        return body, None
    row = body.encode("utf-8", "surrogatepass") if isinstance(body, str) else body
    field = row[-_STAMP_CHARS:_STAMP_END]
    if not row.endswith(b'"}') or (field != _CRC_FIELD_BYTES and field != _FP_FIELD_BYTES):
        return body, None
    core = body[:-_STAMP_CHARS] + "}" if isinstance(body, str) else row[:-_STAMP_CHARS] + b"}"
    marks = row[-_STAMP_CHARS + len(_FP_FIELD) : -2]
    if field == _CRC_FIELD_BYTES:
        trusted = _crc_stamped(row)
    else:  # stamp 1: a blake2b check of the body without its stamp
        trusted = marks[_FP_CHARS:] == _bytes_check(row[:-_STAMP_CHARS] + b"}")
    return core, marks[:_FP_CHARS].decode("ascii") if trusted and marks.isascii() else None


def _body_problem(body: str, limit: int) -> str | None:
    """What in an encoded message a read could not give back, checked cheaply first.

    A body with at most ``limit`` brackets cannot nest deeper than ``limit``, and one without the words NaN or
    Infinity cannot hold those constants, so only bodies that fail a quick count are parsed and walked.
    """
    if body.count("{") + body.count("[") <= limit and "NaN" not in body and "Infinity" not in body:
        return None
    try:
        value = json.loads(body)
    except RecursionError:
        return f"it nests more than {limit} levels deep (the limit every store can read back); flatten it"
    return json_problem(value, limit=limit)


def decode_message(thread_id: str, body: str | bytes, position: int, *, origin: str = "") -> Message:
    """The stored message, with the fingerprint stored beside it already memoized (see `_stamp`).

    An edit after loading clears the memo like any edit (`windowkeeper.messages`), so it never goes stale.
    ``origin`` (the store) is named by the `StorageError` a row that is not a message raises.
    """
    return decode_messages(thread_id, (body,), position, origin=origin)[0]


def decode_messages(
    thread_id: str, bodies: Iterable[str | bytes], start: int = 0, *, origin: str = ""
) -> list[Message]:
    """`decode_message` of each of ``bodies`` (log positions ``start``...): one loop for a whole log read, so a
    restarted thread's thousands of rows pay no per-row call and error-text set-up beyond the row's own decoding."""
    out: list[Message] = []
    append = out.append
    trusted = _from_stamped
    for offset, body in enumerate(bodies):
        message = trusted(body) if type(body) is bytes or type(body) is str else None
        append(message if message is not None else _decode_checked(thread_id, body, start + offset, origin))
    return out


def _from_stamped(body: str | bytes) -> Message | None:
    """The message of a row with a matching stamp 2, built from its shape alone (`message_from_trusted`); None for
    any other row (stamp 1, no stamp, an edited row, another version's shape), which `_decode_checked` reads.

    The row is parsed as it is, stamp included, and the stamp's key taken out of the parsed object: the check
    covers the row up to itself, so the parse needs no copy of the row without its stamp.
    """
    row = body if type(body) is bytes else body.encode("utf-8", "surrogatepass")  # type: ignore[union-attr]
    if not _crc_stamped(row):
        return None
    try:
        data = from_json(row)
    except ValueError:
        return None
    if type(data) is not dict:
        return None
    stamp = data.pop(_CRC_KEY, None)
    if type(stamp) is not str:
        return None
    # the dump of a message windowkeeper validated, unchanged since (pydantic's parser refuses lone surrogates,
    # so no text needs cleaning); a shape this version does not write is read by the caller's fallback
    return message_from_trusted(data, stamp[:_FP_CHARS])


def _decode_checked(thread_id: str, body: object, position: int, origin: str) -> Message:
    """`decode_message` of a row `_from_stamped` did not take: checked in full, errors naming the row."""
    where = f"{origin}, thread {thread_id!r}" if origin else f"thread {thread_id!r}"
    if not isinstance(body, str | bytes):
        raise StorageError(
            f"{where}: stored message #{position} is a {type(body).__name__}, not JSON text (edited row); "
            "list and remove bad rows with `windowkeeper store check URL --remove`",
        )
    core, fingerprint = _unstamp(body)
    try:
        # the cheap read of what Message wrote (see Message.from_stored); pydantic's parser refuses lone
        # surrogates, so the text needs no cleaning, and anything else is validated from the text as before
        data = from_json(core)
    except ValueError:
        data = None
    if type(data) is not dict:
        message = None
    elif fingerprint is not None:
        # the stamp matches the body: the dump of a message windowkeeper validated, unchanged since; a shape
        # this version does not write (another version's row) is validated from the text below
        message = message_from_trusted(data, fingerprint)
    else:
        message = message_from_stored(data, clean=False)
    try:
        if message is None:
            message = Message.model_validate_json(core)
    except ValidationError as exc:
        raise StorageError(
            f"{where}: stored message #{position} does not validate as a Message "
            f"(corrupt row or a block type this version does not know): {exc}; "
            "list and remove bad rows with `windowkeeper store check URL --remove`",
        ) from exc
    if fingerprint is not None:
        private = message.__pydantic_private__
        if private is not None:
            private["_fingerprint"] = fingerprint
    return message


def encode_doc(doc: object, *, key: str, what: str = "record") -> str:
    if not isinstance(doc, dict):
        raise ConfigurationError(f"{what} {key!r}: the document must be a dict, got {type(doc).__name__}")
    try:
        body = json.dumps(doc, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except RecursionError as exc:
        raise StorageError(
            f"{what} {key!r}: the document nests more than {MAX_DOC_DEPTH} levels deep "
            "(the limit every store can read back); flatten it",
        ) from exc
    except ValueError as exc:
        problem = json_problem(doc, limit=MAX_DOC_DEPTH) or str(exc)
        raise StorageError(f"{what} {key!r}: the document is not strict JSON: {problem}") from exc
    except TypeError as exc:
        raise StorageError(
            f"{what} {key!r}: the document is not strict JSON ({exc}); "
            "dump pydantic models with model_dump(mode='json') first",
        ) from exc
    if body.count("{") + body.count("[") > MAX_DOC_DEPTH and json_depth(doc, limit=MAX_DOC_DEPTH) > MAX_DOC_DEPTH:
        raise StorageError(
            f"{what} {key!r}: the document nests more than {MAX_DOC_DEPTH} levels deep "
            "(the limit every store can read back); flatten it",
        )
    # JSON syntax is ASCII, so a lone surrogate can only sit inside a string: replacing it here is the
    # boundary rule of windowkeeper.boundary, applied to documents that did not come from a validated model
    return clean_text(body)


def decode_doc(body: str | bytes, *, key: str, what: str = "record") -> dict[str, Any]:
    """The stored document ``body`` decodes to; `StorageError` naming ``key`` when it is not a JSON object.

    pydantic's parser decodes about twice as fast as `json.loads` and gives the same values for every document
    it accepts; it refuses lone surrogates (a ``"\\ud800"`` escape, which only a hand-edited row holds) and
    nesting beyond 200 levels, so those, and anything malformed, are decoded by `json.loads` as before (same
    values, same errors).
    """
    if not isinstance(body, str | bytes):
        raise StorageError(f"{what} {key!r}: stored data is a {type(body).__name__}, not JSON text (edited row)")
    try:
        value = from_json(body)
    except ValueError:
        pass
    else:
        if isinstance(value, dict):
            return value
    try:
        value = json.loads(body)
    except RecursionError as exc:
        raise StorageError(f"{what} {key!r}: stored data nests too deep to decode") from exc
    except (TypeError, ValueError) as exc:
        raise StorageError(f"{what} {key!r}: stored data is not valid JSON: {exc}") from exc
    if not isinstance(value, dict):
        raise StorageError(f"{what} {key!r}: stored data is a {type(value).__name__}, expected a JSON object")
    return value


def encode_state(thread_id: str, state: object) -> str:
    return encode_doc(state, key=thread_id, what="state of thread")


def decode_state(thread_id: str, body: str | bytes, *, origin: str = "") -> dict[str, Any]:
    return decode_doc(body, key=thread_id, what=f"{origin}: state of thread" if origin else "state of thread")


def unique_new(thread_id: str, messages: Sequence[Message]) -> list[tuple[str, str]]:
    """``(message_key, json)`` for each message, first occurrence of an id only."""
    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    for msg in messages:
        body = encode_message(thread_id, msg)
        mkey = message_key(msg.message_id)
        if mkey in seen:
            continue
        seen.add(mkey)
        out.append((mkey, body))
    return out
