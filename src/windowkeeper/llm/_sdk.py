"""Plumbing shared by the SDK-backed clients: optional imports, settings checks, one SDK client per event loop.

SDK async clients hold an HTTP connection pool bound to the event loop that first used it. A windowkeeper client
may be driven from several loops over its life (``asyncio.run`` per sync call, a fresh loop per test), and a pool
from a closed loop fails on reuse. So the SDK client is created once per loop and reused for every call on that
loop; in the common case of a single long-lived loop that is exactly one SDK client.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import os
import weakref
from collections.abc import Callable
from types import ModuleType
from typing import Generic, TypeVar

from ..errors import ConfigurationError, MissingDependencyError

logger = logging.getLogger(__name__)

T = TypeVar("T")


def import_sdk(module: str, package: str, extra: str) -> ModuleType:
    """Import an optional provider SDK or raise `MissingDependencyError` naming the extra to install."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingDependencyError(package, extra) from exc


def check_settings(timeout: float, max_retries: int) -> None:
    if not isinstance(timeout, int | float) or timeout <= 0:
        raise ConfigurationError(f"timeout must be a positive number of seconds, got {timeout!r}")
    if not isinstance(max_retries, int) or isinstance(max_retries, bool) or max_retries < 0:
        raise ConfigurationError(f"max_retries must be an integer >= 0, got {max_retries!r}")


def first_env(*names: str) -> str | None:
    """The first non-empty environment variable among ``names``."""
    for name in names:
        value = os.environ.get(name)
        if value:
            return value
    return None


class PerLoop(Generic[T]):
    """Lazily build one object per running event loop and hand the same one back on that loop."""

    def __init__(self, factory: Callable[[], T]) -> None:
        self._factory = factory
        self._by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, T] = weakref.WeakKeyDictionary()
        self.created = 0

    def get(self) -> T:
        loop = asyncio.get_running_loop()
        value = self._by_loop.get(loop)
        if value is None:
            value = self._factory()
            self._by_loop[loop] = value
            self.created += 1
            logger.debug("created SDK client #%d for loop %r", self.created, id(loop))
        return value

    def current(self) -> T | None:
        """The object for the running loop, if one was built."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return None
        return self._by_loop.get(loop)

    def forget_current(self) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._by_loop.pop(loop, None)


__all__ = ["PerLoop", "check_settings", "first_env", "import_sdk"]
