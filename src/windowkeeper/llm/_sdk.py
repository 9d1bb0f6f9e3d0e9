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
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Awaitable, Callable
from types import ModuleType
from typing import Any, ClassVar, Generic, TypeVar

from .._bridge import Closing
from .._validate import check_int
from ..errors import ConfigurationError, MissingDependencyError, ProviderError

logger = logging.getLogger(__name__)

T = TypeVar("T")
C = TypeVar("C")


def import_sdk(module: str, package: str, extra: str) -> ModuleType:
    """Import an optional provider SDK or raise `MissingDependencyError` naming the extra to install."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingDependencyError(package, extra) from exc


def check_settings(timeout: float, max_retries: int) -> None:
    if not isinstance(timeout, int | float) or timeout <= 0:
        raise ConfigurationError(f"timeout must be a positive number of seconds, got {timeout!r}")
    check_int("max_retries", max_retries, minimum=0)


def first_env(*names: str) -> str | None:
    """The first non-empty environment variable among ``names``."""
    for name in names:
        value = os.environ.get(name)
        if value:
            return value
    return None


def as_count(value: Any) -> int:
    """A token count from a provider's usage payload; absent or non-numeric fields count as 0."""
    return int(value) if isinstance(value, int | float) else 0


def stainless_error(sdk: ModuleType, exc: Exception, *, call: str, provider: str, timeout: float) -> ProviderError:
    """Map an error of the ``openai``/``anthropic`` SDKs (same generator, same error classes) to `ProviderError`.

    ``call`` names what failed, e.g. ``"Anthropic call for model 'x'"``; HTTP errors keep their status code.
    """
    if isinstance(exc, sdk.APIStatusError):
        return ProviderError(
            f"{call} failed with HTTP {exc.status_code}: {exc}",
            provider=provider,
            status_code=exc.status_code,
        )
    if isinstance(exc, sdk.APITimeoutError):
        return ProviderError(f"{call} timed out after {timeout}s", provider=provider)
    return ProviderError(f"{call} failed: {exc}", provider=provider)


class PerLoop(Generic[T]):
    """Lazily build one object per running event loop, hand the same one back on that loop, and close it when
    the loop shuts down.

    The close rides on ``loop.shutdown_asyncgens()``, which ``asyncio.run`` and every ``asyncio.Runner`` call
    before closing the loop: a parked async generator is created with each object, and its ``finally`` block
    awaits ``closer(obj)``. Without this, SDK clients used through ``asyncio.run`` (sync wrappers) would leave
    sockets open until garbage collection.
    """

    def __init__(
        self,
        factory: Callable[[], T],
        closer: Callable[[T], Awaitable[object]] | None = None,
    ) -> None:
        self._factory = factory
        self._closer = closer
        self._by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, tuple[T, object]] = (
            weakref.WeakKeyDictionary()
        )
        self.created = 0
        self.closed = 0

    async def _guard(self, value: T) -> AsyncIterator[None]:
        try:
            yield
        finally:
            if self._closer is not None:
                try:
                    await self._closer(value)
                    self.closed += 1
                except Exception as exc:  # closing is best effort: the loop is going away
                    logger.debug("closing an SDK client at loop shutdown failed: %r", exc)

    async def get(self) -> T:
        loop = asyncio.get_running_loop()
        entry = self._by_loop.get(loop)
        if entry is None:
            value = self._factory()
            guard = self._guard(value)
            await guard.__anext__()
            entry = (value, guard)
            self._by_loop[loop] = entry
            self.created += 1
            logger.debug("created SDK client #%d for loop %#x", self.created, id(loop))
        return entry[0]

    def current(self) -> T | None:
        """The object for the running loop, if one was built."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return None
        entry = self._by_loop.get(loop)
        return None if entry is None else entry[0]

    async def close_current(self) -> None:
        """Close and forget the running loop's object now."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        entry = self._by_loop.pop(loop, None)
        if entry is not None:
            guard = entry[1]
            if hasattr(guard, "aclose"):
                await guard.aclose()


class SDKClient(Closing, ABC, Generic[C]):
    """What every SDK-backed `LLMClient` keeps the same: its settings, the API key lookup and one SDK client per
    event loop with its closing.

    A subclass imports its SDK before calling ``super().__init__`` (a missing extra is the first error a user
    should see), sets the class attributes below and builds its SDK client in `_make_sdk_client`.
    """

    closing_name = "client"

    provider: str
    api_key_env: ClassVar[tuple[str, ...]]
    """Environment variables searched, in order, when no ``api_key`` is passed."""
    missing_key_message: ClassVar[str]

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None,
        api_key: str | None,
        timeout: float,
        max_retries: int,
    ) -> None:
        check_settings(timeout, max_retries)
        self.model = model
        self.base_url = base_url
        self.timeout = float(timeout)
        self.max_retries = max_retries
        self._api_key = api_key
        self._clients: PerLoop[C] = PerLoop(self._make_sdk_client, self._close_sdk_client)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, base_url={self.base_url!r})"

    def _resolve_api_key(self) -> str:
        api_key = self._api_key or first_env(*self.api_key_env)
        if api_key is None:
            raise ProviderError(self.missing_key_message, provider=self.provider)
        return api_key

    @abstractmethod
    def _make_sdk_client(self) -> C:
        """A new SDK client for the running loop, authenticated with `_resolve_api_key`."""

    @staticmethod
    async def _close_sdk_client(client: Any) -> None:
        await client.close()

    async def aclose(self) -> None:
        """Close the SDK client of the running loop now (loops that end close theirs automatically)."""
        await self._clients.close_current()


__all__ = ["PerLoop", "SDKClient", "as_count", "check_settings", "first_env", "import_sdk", "stainless_error"]
