"""Shared fixtures: URLs of the machine's PostgreSQL and Redis servers, gated on reachability.

Locally an unreachable server skips its tests with a loud reason (and a banner in the summary). Under ``CI=true``
the servers are part of the contract, so an unreachable one fails the tests instead of silently skipping them.
"""

from __future__ import annotations

import os
from collections.abc import Callable

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
