"""A SQLite store path a new user gets wrong on day one: a folder (``store="/data"``) failed with SQLite's
"unable to open database file", and a path under a regular file raised a bare ``FileExistsError`` from
``mkdir``. Both are now a `StorageError` naming the path and what to pass instead."""

from __future__ import annotations

from pathlib import Path

import pytest

from windowkeeper import AgentState, Message, SQLiteCheckpointer, StorageError, Window


def test_a_folder_is_named_as_a_folder(tmp_path: Path) -> None:
    with pytest.raises(StorageError) as caught:
        SQLiteCheckpointer(str(tmp_path)).put("t1", AgentState(context=[Message.text_message("hi")]))
    text = str(caught.value)
    assert "is a folder" in text and str(tmp_path / "agent.db") in text


def test_a_path_under_a_file_names_the_file(tmp_path: Path) -> None:
    blocker = tmp_path / "notes.txt"
    blocker.write_text("not a folder")
    with Window(budget=8000, store=str(blocker / "agent.db")) as window, pytest.raises(StorageError) as caught:
        window.fit([{"role": "user", "content": "hi"}])
    assert f"{blocker} is a file, not a folder" in str(caught.value)
    assert blocker.read_text() == "not a folder"


def test_a_missing_folder_is_still_made(tmp_path: Path) -> None:
    path = tmp_path / "new" / "deeper" / "agent.db"
    with Window(budget=8000, store=str(path)) as window:
        assert window.fit([{"role": "user", "content": "hi"}]).messages == [{"role": "user", "content": "hi"}]
    assert path.exists()
