"""Issue 12, item 8: a PostgreSQL statement blocked elsewhere does not stall the store's other callers.

(Fork safety, the codec limits and the NaN policy are conformance specs, ``codec_limits`` and ``fork_safe``, run on
every backend by tests/storage/test_conformance.py.) Before the fix one statement waiting on a row lock held by
another session stalled an unrelated thread on the same store for 19.5 s; now the wait ends with a
`StorageError` after ``statement_timeout`` and the other callers (reads, and writes queued in the same group
commit) go on.
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid

import pytest

from windowkeeper import Message
from windowkeeper.errors import ConfigurationError, StorageError


async def test_a_blocked_statement_does_not_stall_another_thread(postgres_server: str) -> None:
    import psycopg

    from windowkeeper.storage.postgres import PostgresStore

    prefix = f"wkst_{uuid.uuid4().hex[:10]}"
    store = PostgresStore(postgres_server, prefix=prefix, statement_timeout=1.0)
    try:
        await store.add_record("ns", "s", "k", {"v": 1})
        await store.append_messages("t", [Message.text_message("hello", message_id="m1")])
        with psycopg.connect(postgres_server) as locker:
            # another session holds the record's row lock and never lets go during the test
            locker.execute(f"SELECT 1 FROM {prefix}_records WHERE key = 'k' FOR UPDATE")

            blocked_error: list[BaseException] = []

            def blocked() -> None:
                try:
                    asyncio.run(store.update_record("ns", "s", "k", {"v": 2}))
                except BaseException as exc:  # inspected below
                    blocked_error.append(exc)

            worker = threading.Thread(target=blocked)
            worker.start()
            await asyncio.sleep(0.2)  # the update is now waiting for the lock
            started = time.perf_counter()
            other = await store.load_messages("t")
            read_stall = time.perf_counter() - started
            # an unrelated write queues behind the blocked one in the group commit: it must not wait for the lock
            wrote: list[float] = []

            def unrelated_write() -> None:
                begun = time.perf_counter()
                asyncio.run(store.append_messages("t2", [Message.text_message("other", message_id="o1")]))
                wrote.append(time.perf_counter() - begun)

            writer = threading.Thread(target=unrelated_write, daemon=True)
            writer.start()
            writer.join(timeout=10)
            worker.join(timeout=30)
            locker.rollback()
        assert [m.message_id for m in other] == ["m1"]
        assert read_stall < 3.0, f"an unrelated read waited {read_stall:.1f} s behind a blocked statement"
        assert wrote and wrote[0] < 3.0, f"an unrelated write waited {wrote or 'over 10'} s behind a blocked one"
        assert [m.message_id for m in await store.load_messages("t2")] == ["o1"]
        assert len(blocked_error) == 1 and isinstance(blocked_error[0], StorageError)
        assert "timeout" in str(blocked_error[0]).lower()
        record = await store.get_record("ns", "s", "k")
        assert record is not None and record.doc == {"v": 1} and record.version == 1
    finally:
        await store.drop()
        await store.close()


@pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf"), True, "5"])
def test_statement_timeout_must_be_positive_and_finite(bad: object) -> None:
    from windowkeeper.storage.postgres import PostgresStore

    with pytest.raises(ConfigurationError, match="statement_timeout"):
        PostgresStore("postgresql://postgres@127.0.0.1:5432/test", statement_timeout=bad)  # type: ignore[arg-type]
