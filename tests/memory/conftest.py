"""Backend matrix for the memory tests: one factory per storage backend, several objects on one location."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from windowkeeper.memory import BaseMemory, InMemoryMemory, PostgresMemory, RedisMemory, SQLiteMemory
from windowkeeper.storage import InMemoryStore

PREFIX = "wkmemtest"
BACKENDS = ["memory", "sqlite", "postgres", "redis"]


@dataclass
class Backend:
    """Opens memories that share one storage location; ``location`` lets another process open it too."""

    name: str
    location: str
    session_id: str = field(default_factory=lambda: f"s-{uuid.uuid4().hex[:12]}")
    opened: list[BaseMemory[Any]] = field(default_factory=list)
    _shared: InMemoryStore | None = None

    def open(self, **options: Any) -> BaseMemory[Any]:
        memory: BaseMemory[Any]
        if self.name == "memory":
            if self._shared is None:
                self._shared = InMemoryStore()
            memory = InMemoryMemory(store=self._shared, **options)
        elif self.name == "sqlite":
            memory = SQLiteMemory(self.location, prefix=PREFIX, **options)
        elif self.name == "postgres":
            memory = PostgresMemory(self.location, prefix=PREFIX, **options)
        else:
            memory = RedisMemory(self.location, prefix=PREFIX, **options)
        self.opened.append(memory)
        return memory


@pytest.fixture(params=BACKENDS)
async def backend(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Backend]:
    name: str = request.param
    if name == "postgres":
        location = request.getfixturevalue("postgres_server")
    elif name == "redis":
        location = request.getfixturevalue("redis_server")
    else:
        location = str(tmp_path / "memory.db")
    b = Backend(name, location)
    yield b
    opened = list(b.opened)
    cleaner = b.open()
    for suffix in ("", "-zh", "-en"):
        await cleaner.clear(b.session_id + suffix)
    for memory in [*opened, cleaner]:
        await memory.close()


@pytest.fixture
def durable_backend(backend: Backend) -> Backend:
    if backend.name == "memory":
        pytest.skip("the in-memory store does not outlive its process")
    return backend


def event(i: int, content: str, role: str = "user", **state: Any) -> dict[str, Any]:
    message = {"id": f"m{i}", "role": role, "content": content, "timestamp": 1_718_000_000 + i}
    return {"message": message, "state": state}


EventFactory = Callable[..., dict[str, Any]]
