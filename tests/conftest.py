"""Shared fixtures: URLs of the machine's PostgreSQL and Redis servers, gated on reachability.

Locally an unreachable server skips its tests with a loud reason (and a banner in the summary). Under ``CI=true``
the servers are part of the contract, so an unreachable one fails the tests instead of silently skipping them.
"""

from __future__ import annotations

import asyncio
import gc
import os
import sys
import warnings
from collections.abc import Callable, Iterator

import pytest
from hypothesis import settings

from windowkeeper.storage.url import POSTGRES_ENV, REDIS_ENV, postgres_url, redis_url

_UNREACHABLE: dict[str, str] = {}

# CI explores the same examples on every run, so a red build always points at a change, never at a new random draw;
# local runs keep exploring fresh examples.
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
if os.environ.get("CI", "").lower() == "true":
    settings.load_profile("ci")


def _probe_postgres(url: str) -> None:
    import psycopg

    with psycopg.connect(url, connect_timeout=3) as conn:
        conn.execute("SELECT 1")


def _probe_redis(url: str) -> None:
    import redis

    client = redis.Redis.from_url(url, socket_connect_timeout=3, socket_timeout=3)
    try:
        client.ping()
    finally:
        client.close()


def _require(kind: str, env: str, url: str, probe: Callable[[str], None]) -> str:
    try:
        probe(url)
    except Exception as exc:
        reason = f"{kind} at {url} is unreachable ({type(exc).__name__}: {exc}); start it or set ${env}"
        _UNREACHABLE[kind] = reason
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI=true: {reason}. Server-backed tests must run in CI, never skip.", pytrace=False)
        pytest.skip(f"!!! SKIPPED: {reason}")
    return url


@pytest.fixture(scope="session")
def postgres_server() -> str:
    """URL of a reachable PostgreSQL (``$WINDOWKEEPER_POSTGRES_URL`` or the local default)."""
    return _require("PostgreSQL", POSTGRES_ENV, postgres_url(), _probe_postgres)


@pytest.fixture(scope="session")
def redis_server() -> str:
    """URL of a reachable Redis (``$WINDOWKEEPER_REDIS_URL`` or the local default)."""
    return _require("Redis", REDIS_ENV, redis_url(), _probe_redis)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    for reason in _UNREACHABLE.values():
        terminalreporter.write_line(f"SERVER UNREACHABLE, its tests did not run: {reason}", red=True, bold=True)
    for line in _LEFT_UNCLOSED:
        terminalreporter.write_line(f"LEFT UNCLOSED: {line}", red=True, bold=True)


def _leaks() -> list[str]:
    """What the session left unclosed: objects whose finalizer warns (a socket, a file, a transport, a never
    awaited coroutine) or fails when collected now, and transports still open on a loop that is already closed
    (reachable, so only the interpreter's exit would report them, when nobody can say which test made them)."""
    found: list[str] = []
    previous = sys.unraisablehook
    sys.unraisablehook = lambda u: found.append(f"{u.exc_type.__name__}: {u.exc_value} ({u.err_msg} {u.object!r})")
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            gc.collect()
    finally:
        sys.unraisablehook = previous
    found += [f"{w.category.__name__}: {w.message}" for w in caught if issubclass(w.category, ResourceWarning)]
    for obj in gc.get_objects():
        # type(), not isinstance(): a lazy proxy (injectq's) resolves itself when asked for its __class__
        if issubclass(type(obj), asyncio.Transport) and not obj.is_closing():
            loop = getattr(obj, "_loop", None)
            if isinstance(loop, asyncio.AbstractEventLoop) and loop.is_closed():
                found.append(f"open transport on a closed loop: {obj!r}")
    return found


_LEFT_UNCLOSED: list[str] = []


STRICT_RESOURCES_ENV = "WINDOWKEEPER_STRICT_RESOURCES"
"""Leaving something unclosed fails the run (every test closes what it opens). Set to 0 to only list the leaks
while hunting one locally; under ``CI=true`` the run is always strict, whatever this says."""


def _strict_resources() -> bool:
    if os.environ.get("CI", "").lower() == "true":
        return True
    return os.environ.get(STRICT_RESOURCES_ENV, "1") != "0"


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Report what the session left unclosed, and fail the run on it (unless ``$WINDOWKEEPER_STRICT_RESOURCES=0``
    outside CI)."""
    if session.config.option.collectonly:
        return
    _LEFT_UNCLOSED.extend(_leaks())
    if _LEFT_UNCLOSED and _strict_resources():
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


LEAK_PER_TEST_ENV = "WINDOWKEEPER_LEAKS_PER_TEST"
"""Set to 1 to collect garbage after every test, so a socket or transport left unclosed fails the test that left
it (pytest reports unraisable warnings per test phase) instead of whichever later test happens to collect it."""


@pytest.fixture(autouse=os.environ.get(LEAK_PER_TEST_ENV) == "1")
def _collect_after_each_test() -> Iterator[None]:
    yield
    gc.collect()
