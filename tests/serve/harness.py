"""Run the gateway under a real uvicorn server on a free port (in a thread, or as a ``windowkeeper serve``
process) for tests and benchmarks."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from windowkeeper.serve import SERVER_OPTIONS, ServeConfig, create_app

SRC = Path(__file__).resolve().parents[2] / "src"


class Gateway:
    """A gateway served by uvicorn in a background thread; ``url`` is its root."""

    def __init__(self, config: ServeConfig) -> None:
        self.config = config
        self.app = create_app(config)
        self.server = uvicorn.Server(
            uvicorn.Config(
                self.app,
                host="127.0.0.1",
                port=0,
                log_level="warning",
                lifespan="on",
                http="h11",
                **SERVER_OPTIONS,
            )
        )
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def start(self) -> Gateway:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the gateway did not start")
            time.sleep(0.01)
        return self

    @property
    def port(self) -> int:
        return int(self.server.servers[0].sockets[0].getsockname()[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def gateway(self):
        return self.app.state.gateway.gateway

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


@contextmanager
def running(config: ServeConfig) -> Iterator[Gateway]:
    gw = Gateway(config).start()
    try:
        yield gw
    finally:
        gw.stop()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def process(*args: str) -> Iterator[str]:
    """``windowkeeper serve ARGS`` as its own process (the real command); yields its URL."""
    with served(*args) as (url, _):
        yield url


@contextmanager
def served(*args: str, kill: bool = False) -> Iterator[tuple[str, int]]:
    """Like `process`, yielding ``(url, pid)`` (benchmarks read the process's CPU time and memory). ``kill=True``
    ends it with SIGKILL, so no shutdown runs (what a crash or an OOM kill leaves)."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    cmd = [sys.executable, "-m", "windowkeeper.cli", "serve", "--port", str(port), *args]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                err = proc.stderr.read().decode() if proc.stderr else ""
                raise RuntimeError(f"windowkeeper serve did not start: {err[-2000:]}")
            time.sleep(0.1)
        yield url, proc.pid
    finally:
        if kill:
            proc.kill()
        else:
            proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stderr is not None:
            proc.stderr.close()


BIG_OUTPUT = "log line " * 600


def over_budget(protocol: str) -> list[dict[str, Any]]:
    """A conversation over a small gateway budget (one long tool output, then a new user turn), in ``protocol``'s
    shape: the gateway cuts it and offers recall on the call that sends it."""
    if protocol == "messages":
        return [
            {"role": "user", "content": "start"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_a", "name": "sh", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_a", "content": BIG_OUTPUT}]},
            {"role": "assistant", "content": "done"},
            {"role": "user", "content": "next"},
        ]
    if protocol == "responses":
        return [
            {"role": "user", "content": "start"},
            {"type": "function_call", "call_id": "c_a", "name": "sh", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c_a", "output": BIG_OUTPUT},
            {"role": "assistant", "content": "done"},
            {"role": "user", "content": "next"},
        ]
    return [
        {"role": "user", "content": "start"},
        {
            "role": "assistant",
            "tool_calls": [{"id": "c_a", "type": "function", "function": {"name": "sh", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "c_a", "content": BIG_OUTPUT},
        {"role": "assistant", "content": "done"},
        {"role": "user", "content": "next"},
    ]
