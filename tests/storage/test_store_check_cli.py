"""``windowkeeper store check URL [--remove] [--json]``: lists the rows a read refuses, removes them, exit codes."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

import pytest

from windowkeeper import Message
from windowkeeper.cli.app import run
from windowkeeper.errors import StorageError
from windowkeeper.memory import SQLiteMemory
from windowkeeper.storage import SQLiteStore


def _cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as done:
        run(args)
    out, err = capsys.readouterr()
    return int(done.value.code or 0), out, err


async def _fill(path: Path) -> None:
    memory = SQLiteMemory(path)
    for sid in ("a", "b"):
        for i in range(3):
            await memory.add({"message": {"id": str(i), "role": "user", "content": f"hi {i}"}}, session_id=sid)
    await memory.close()
    store = SQLiteStore(path)
    await store.append_messages("t", [Message.text_message("m", message_id="m1", timestamp=1.0)])
    await store.close()


def test_store_check_lists_then_removes_exactly_the_bad_rows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "s.db"
    asyncio.run(_fill(path))
    assert _cli(["store", "check", str(path)], capsys)[0] == 0
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE wk_records SET body = '{\"type\":\"ev' WHERE session_id = 'a' AND key = 'e:1'")
        conn.execute("UPDATE wk_records SET version = 'x' WHERE session_id = 'a' AND key = 'e:2'")
        conn.execute("UPDATE wk_messages SET body = '[]'")
    conn.close()

    async def read_a() -> None:
        memory = SQLiteMemory(path)
        try:
            await memory.list(session_id="a")
        finally:
            await memory.close()

    with pytest.raises(StorageError, match="'e:2'"):
        asyncio.run(read_a())
    code, out, _ = _cli(["store", "check", str(path), "--json"], capsys)
    report = json.loads(out)
    assert code == 1 and report["ok"] is False and report["schema"] == "windowkeeper.store.check"
    assert sorted((b["kind"], b["key"]) for b in report["bad"]) == [
        ("message", '"m1"'),
        ("record", "e:1"),
        ("record", "e:2"),
    ]
    assert not any(b["removed"] for b in report["bad"])
    code, out, err = _cli(["store", "check", str(path), "--remove"], capsys)
    assert code == 0 and out.count("removed: ") == 3 and "3 unreadable row(s), 3 removed" in err
    assert _cli(["store", "check", str(path)], capsys)[0] == 0
    asyncio.run(read_a())  # the session reads again; session b never lost anything

    async def events_b() -> list[str]:
        memory = SQLiteMemory(path)
        try:
            return [e["message"]["content"] for e in await memory.list(session_id="b")]
        finally:
            await memory.close()

    assert asyncio.run(events_b()) == ["hi 0", "hi 1", "hi 2"]


def test_store_check_masks_the_url_and_exits_2_on_a_bad_location(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _cli(["store", "check", "mysql://bob:CliSecret9@h/db"], capsys)
    assert code == 2 and "CliSecret9" not in out + err and "unknown scheme" in err
