"""Secrets in store locations never leave: over a table of URL and DSN shapes (each with its own secret), no
error text, chained cause, log line, stderr line or file name holds the secret; and a libpq ``key=value``
string is PostgreSQL everywhere a location is accepted, never a SQLite file named after it."""

from __future__ import annotations

import asyncio
import logging
import os
import traceback
import uuid
from pathlib import Path

import pytest

from windowkeeper.errors import ConfigurationError, WindowkeeperError
from windowkeeper.graph.checkpointer import Checkpointer
from windowkeeper.integrations.window import Window
from windowkeeper.memory import SQLiteMemory, TDAIMemory
from windowkeeper.storage import SessionStore, open_store
from windowkeeper.storage.postgres import PostgresStore
from windowkeeper.storage.redis import RedisStore
from windowkeeper.storage.url import mask_url, store_kind

# (location, secret): every location is refused at once, or fails on its first call (nothing listens on port 1)
SHAPES: list[tuple[str, str]] = [
    ("postgresql://bob:Pg1Secret@127.0.0.1:1/db", "Pg1Secret"),
    ("postgres://bob:Pg2Secret@127.0.0.1:1/db?sslmode=disable", "Pg2Secret"),
    ("postgresql+psycopg://bob:Pg3Secret@127.0.0.1:1/db", "Pg3Secret"),
    ("postgresql://bob@127.0.0.1:1/db?password=Pg4Secret", "Pg4Secret"),
    ("postgresql://127.0.0.1:1/db?user=bob&password=Pg5Secret&prefix=not-an-identifier", "Pg5Secret"),
    ("postgresql://bob:p%40ss%2FPg6Secret@127.0.0.1:1/db", "Pg6Secret"),
    ("postgresql://bob:Pg7Secret@127.0.0.1:1/db?bogus_option=1", "Pg7Secret"),
    ("postgresql://bob:Pg8Secret@127.0.0.1:notaport/db", "Pg8Secret"),
    ("postgresql://bob:Pg9@Secret@127.0.0.1:1/db", "Pg9@Secret"),
    ("host=127.0.0.1 port=1 dbname=db user=bob password=Dsn1Secret", "Dsn1Secret"),
    ("host=127.0.0.1 port=1 password='Dsn2 Secret' dbname=db", "Dsn2 Secret"),
    ("host=127.0.0.1 port=1 password=Dsn3Secret bogus=1", "Dsn3Secret"),
    ("host=127.0.0.1 port=1 sslpassword=Dsn4Secret dbname=db", "Dsn4Secret"),
    ("redis://:Rd1Secret@127.0.0.1:1/0", "Rd1Secret"),
    ("redis://default:Rd2Secret@127.0.0.1:1/0", "Rd2Secret"),
    ("rediss://user:Rd3Secret@127.0.0.1:1/0?ssl_cert_reqs=none", "Rd3Secret"),
    ("redis://127.0.0.1:1/0?password=Rd4Secret", "Rd4Secret"),
    ("redis://127.0.0.1:1/0?password=Rd5Secret&socket_timeout=abc", "Rd5Secret"),
    ("redis://user:Rd6Secret@127.0.0.1:notaport/0", "Rd6Secret"),
    ("postgress://bob:Ty1Secret@127.0.0.1:1/db", "Ty1Secret"),
    ("mysql://bob:Ty2Secret@127.0.0.1:1/db", "Ty2Secret"),
    ("bob:Ty3Secret@127.0.0.1:5432/db", "Ty3Secret"),
    ("https://127.0.0.1/api?token=Ty4Secret", "Ty4Secret"),
    ("Server=127.0.0.1;Database=db;User Id=bob;Password=Ty5Secret;", "Ty5Secret"),
    ("user=bob password=Ty6Secret", "Ty6Secret"),
    ("redis://127.0.0.1:1/0?password=Rd7Secret&prefix=x!", "Rd7Secret"),
]


def _everything(exc: BaseException) -> str:
    return "".join(traceback.format_exception(exc))


async def _first_call(location: str) -> BaseException | None:
    """Open ``location`` the way `open_store` does (short timeouts for the unreachable servers) and read once."""
    store: SessionStore | None = None
    try:
        kind = store_kind(location)
        if kind == "postgres":
            store = PostgresStore(location, connect_timeout=1)
        elif kind == "redis":
            store = RedisStore(location)
        else:
            store = open_store(location)
        await asyncio.wait_for(store.get_state("t"), 20)
    except WindowkeeperError as exc:
        return exc
    finally:
        if store is not None:
            await store.close()
    return None


@pytest.mark.parametrize(("location", "secret"), SHAPES, ids=[f"shape{i}" for i in range(len(SHAPES))])
async def test_no_secret_in_any_error_log_or_file(
    location: str,
    secret: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    caplog.set_level(logging.DEBUG)
    error = await _first_call(location)
    assert error is not None, f"{location} should have been refused or failed to connect"
    texts = [_everything(error), repr(error)]
    openers = (
        lambda: Window(budget=10_000, store=location),
        lambda: TDAIMemory(location),
        lambda: Checkpointer.from_url(location),
    )
    for opener in openers:
        try:
            opened = opener()
        except WindowkeeperError as exc:
            texts.append(_everything(exc))
        else:  # a location that parses: its store fails on first use, which the test above covered
            closer = getattr(opened, "aclose", None) or getattr(opened, "close", None)
            if closer is not None:
                result = closer()
                if asyncio.iscoroutine(result):
                    await result
    out, err = capfd.readouterr()
    texts += [out, err, caplog.text, *(r.getMessage() for r in caplog.records)]
    texts += [str(p) for p in Path.cwd().rglob("*")]
    decoded = secret.replace("%40", "@")
    for text in texts:
        assert secret not in text and decoded not in text, text
    assert list(Path.cwd().iterdir()) == [], "a location became a file"


def test_the_table_covers_twenty_shapes() -> None:
    assert len(SHAPES) >= 20 and len({s for _, s in SHAPES}) == len(SHAPES)


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        ("postgresql://bob:hunter2@h/db", "postgresql://bob:***@h/db"),
        ("redis://:tok@h:6379/0", "redis://:***@h:6379/0"),
        ("redis://h:6379/0", "redis://h:6379/0"),
        ("postgresql://h/db?user=bob&password=x1&sslmode=on", "postgresql://h/db?user=bob&password=***&sslmode=on"),
        ("host=h password='a b' dbname=d", "host=h password=*** dbname=d"),
        ("error at bob:pw@h:5432", "error at bob:***@h:5432"),
        ("?access_token=abc&x=1", "?access_token=***&x=1"),
        ("Server=h;Password=p;", "Server=h;Password=***;"),
    ],
)
def test_mask_url_keeps_what_an_operator_needs(text: str, masked: str) -> None:
    assert mask_url(text) == masked


def test_mask_url_scrubs_secrets_a_driver_repeats() -> None:
    assert mask_url('missing "=" after "pw9x"', source="host=h password=pw9x") == 'missing "=" after "***"'


@pytest.mark.parametrize(
    "path",
    ["host=db dbname=app", "bob:pw@db:5432/app", "localhost:5432/app", "a=b.db", "dbname=x.db", "redis:6379"],
)
def test_connection_strings_are_never_files(path: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    if store_kind(path) == "postgres":
        assert isinstance(open_store(path), PostgresStore)
        return
    with pytest.raises(ConfigurationError, match="looks like a connection string"):
        open_store(path)
    with pytest.raises(ConfigurationError, match="looks like a connection string"):
        SQLiteMemory(path)
    assert list(tmp_path.iterdir()) == []


def test_real_paths_still_open(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for path in ("plain.db", "sub/dir/x.sqlite", ":memory:", str(tmp_path / "abs.db"), "sqlite:///we=ird.db"):
        store = open_store(path)
        asyncio.run(store.close())
    assert open_store(tmp_path / "p=ath.db") is not None  # a pathlib.Path is always a path


async def test_a_libpq_string_is_postgres_everywhere(postgres_server: str) -> None:
    from psycopg.conninfo import conninfo_to_dict

    params = conninfo_to_dict(postgres_server)
    dsn = " ".join(f"{k}={v}" for k, v in params.items())
    prefix = f"wks_{uuid.uuid4().hex[:10]}"
    store = open_store(f"{dsn} prefix={prefix}")
    assert isinstance(store, PostgresStore) and store.prefix == prefix
    try:
        await store.put_state("t", {"a": 1})
        assert await store.get_state("t") == {"a": 1}
        memory = TDAIMemory(dsn, prefix=prefix)
        await memory.add({"message": {"id": "1", "role": "user", "content": "hi"}})
        assert [e["message"]["content"] for e in await memory.list()] == ["hi"]
        await memory.close()
        window = Window(budget=10_000, store=f"{dsn} prefix={prefix}")
        assert isinstance(window.store, PostgresStore)
        await window.aclose()
    finally:
        await store.drop()
        await store.close()
    assert not any(name.startswith("host=") for name in os.listdir("."))
