"""A server store nobody closed, whose owner was dropped, is still closed cleanly when the interpreter exits."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

from windowkeeper.storage.url import with_prefix

ROOT = Path(__file__).resolve().parents[2]


def _run(code: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def test_a_dropped_window_on_postgres_exits_without_a_destroyed_task(postgres_server: str) -> None:
    url = with_prefix(postgres_server, f"wkdrop_{uuid.uuid4().hex[:10]}")
    done = _run(
        f"""
        import gc, logging
        logging.basicConfig(level=logging.WARNING)
        logging.getLogger("windowkeeper.storage._exit").setLevel(logging.DEBUG)  # a close that failed at exit
        from windowkeeper import Window

        window = Window(budget=4000, store={url!r}, thread_id="dropped")
        window.fit([{{"role": "user", "content": "hello"}}])
        del window
        gc.collect()
        """
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stderr == "", done.stderr[-3000:]
    # the thread was written and the tables are there: a new process reads it back, then drops them
    check = _run(
        f"""
        import asyncio
        from windowkeeper.storage import open_store

        async def main() -> None:
            store = open_store({url!r})
            try:
                assert len(await store.load_messages("dropped")) == 1
                await store.drop()
            finally:
                await store.close()

        asyncio.run(main())
        """
    )
    assert check.returncode == 0, check.stderr[-3000:]
    assert check.stderr == ""
