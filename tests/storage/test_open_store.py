"""`open_store` URL dispatch and prefix handling."""

from __future__ import annotations

from pathlib import Path

import pytest

from windowkeeper.errors import ConfigurationError
from windowkeeper.storage import InMemoryStore, SQLiteStore, open_store
from windowkeeper.storage.url import split_prefix, with_prefix


def test_memory_url() -> None:
    assert isinstance(open_store("memory://"), InMemoryStore)


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("sqlite:////abs/dir/db.sqlite3", "/abs/dir/db.sqlite3"),
        ("sqlite:///rel/db.sqlite3", "rel/db.sqlite3"),
        ("sqlite:///:memory:", ":memory:"),
        ("sqlite:////abs/db.sqlite3?prefix=p1", "/abs/db.sqlite3"),
        ("plain/file.db", "plain/file.db"),
    ],
)
def test_sqlite_paths(url: str, expected: str) -> None:
    store = open_store(url)
    assert isinstance(store, SQLiteStore)
    assert store.path == expected
    assert store.prefix == ("p1" if "prefix=p1" in url else "wk")


def test_path_object_and_explicit_prefix(tmp_path: Path) -> None:
    store = open_store(tmp_path / "x.db", prefix="mine")
    assert isinstance(store, SQLiteStore) and store.path == str(tmp_path / "x.db") and store.prefix == "mine"


def test_server_urls_keep_their_own_query_and_drop_prefix() -> None:
    from windowkeeper.storage.postgres import PostgresStore
    from windowkeeper.storage.redis import RedisStore

    pg = open_store("postgresql://u@h:5432/db?sslmode=disable&prefix=abc")
    assert isinstance(pg, PostgresStore) and pg.url == "postgresql://u@h:5432/db?sslmode=disable"
    assert pg.prefix == "abc"
    rd = open_store("redis://127.0.0.1:6379/2?prefix=r1")
    assert isinstance(rd, RedisStore) and rd.url == "redis://127.0.0.1:6379/2" and rd.prefix == "r1"


def test_prefix_round_trip() -> None:
    url = with_prefix("sqlite:////tmp/a.db", "p_2")
    assert url == "sqlite:////tmp/a.db?prefix=p_2"
    assert split_prefix(url) == ("sqlite:////tmp/a.db", "p_2")
    assert split_prefix(with_prefix(url, "p3")) == ("sqlite:////tmp/a.db", "p3")


@pytest.mark.parametrize("bad", ["mongodb://x", "", "sqlite:///"])
def test_bad_urls_name_the_problem(bad: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        open_store(bad)
    assert "open_store" in str(info.value)


@pytest.mark.parametrize("prefix", ["1abc", "a-b", "a;drop", "x" * 60])
def test_bad_prefixes_are_refused(prefix: str, tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="prefix"):
        SQLiteStore(tmp_path / "db", prefix=prefix)


async def test_an_unreachable_postgres_fails_at_once_with_its_reason_and_the_fix() -> None:
    """A wrong port waited the pool's whole timeout (10 s), then said only "pool initialization incomplete": the
    reason (connection refused, no such database) went to a log line. One direct connection comes first now."""
    import time

    from windowkeeper.errors import StorageError
    from windowkeeper.storage.postgres import PostgresStore

    store = PostgresStore("postgresql://bob@127.0.0.1:1/db", connect_timeout=5)
    started = time.monotonic()
    with pytest.raises(StorageError) as caught:
        await store.get_state("t")
    await store.close()
    assert time.monotonic() - started < 4
    message = str(caught.value)
    assert "Connection refused" in message and "check that the server is running" in message
