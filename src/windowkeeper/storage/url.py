"""Pick a backend from a URL or a path, and the environment defaults for the server backends.

A ``prefix=`` query parameter selects the table/key prefix, so one string (an env var, a CLI flag, the argument
handed to a child process) fully identifies where a store's data lives.
"""

from __future__ import annotations

import os
from urllib.parse import quote, unquote_plus, urlencode

from ..errors import ConfigurationError
from .base import SessionStore

DEFAULT_POSTGRES_URL = "postgresql://postgres@127.0.0.1:5432/test"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"
POSTGRES_ENV = "WINDOWKEEPER_POSTGRES_URL"
REDIS_ENV = "WINDOWKEEPER_REDIS_URL"


def postgres_url() -> str:
    """``$WINDOWKEEPER_POSTGRES_URL`` or the local default."""
    return os.environ.get(POSTGRES_ENV) or DEFAULT_POSTGRES_URL


def redis_url() -> str:
    """``$WINDOWKEEPER_REDIS_URL`` or the local default."""
    return os.environ.get(REDIS_ENV) or DEFAULT_REDIS_URL


def split_prefix(url: str) -> tuple[str, str | None]:
    """Remove our ``prefix`` query parameter (drivers reject unknown ones) and return it separately.

    Every other parameter is kept byte for byte (no re-encoding: libpq reads ``+`` literally, so re-encoding
    ``options=-c%20x`` as ``-c+x`` would change it), and the query is cut by hand rather than with
    ``urlunsplit``, which would collapse ``sqlite:////abs/path``.
    """
    base, sep, query = url.partition("?")
    if not sep:
        return url, None
    prefix = None
    kept = []
    for item in query.split("&"):
        name, _, value = item.partition("=")
        if unquote_plus(name) == "prefix":
            prefix = unquote_plus(value)
        elif item:
            kept.append(item)
    return (f"{base}?{'&'.join(kept)}" if kept else base), prefix


def with_prefix(url: str, prefix: str) -> str:
    """``url`` with ``prefix=`` set, for handing a store's location to another process."""
    base, _ = split_prefix(url)
    return f"{base}{'&' if '?' in base else '?'}{urlencode([('prefix', prefix)])}"


def resolve_prefix(url_prefix: str | None, prefix: str | None, *, url: str) -> str:
    """The table/key prefix: the ``prefix`` argument, else the URL's ``?prefix=``, else ``"wk"``.

    Both given and different is a mistake that would silently split one store's data in two, so it is an error.
    """
    if prefix is not None and url_prefix is not None and prefix != url_prefix:
        raise ConfigurationError(
            f"prefix={prefix!r} contradicts ?prefix={url_prefix} in {safe_url(url)}; give the prefix once",
        )
    return prefix if prefix is not None else url_prefix if url_prefix is not None else "wk"


def safe_url(url: str) -> str:
    """``url`` with any password replaced by ``***``, for error messages and logs."""
    scheme, sep, rest = url.partition("://")
    if not sep or "@" not in rest.split("/", 1)[0]:
        return url
    userinfo, _, host = rest.partition("@")
    user = userinfo.split(":", 1)[0]
    return f"{scheme}://{user}{':***' if ':' in userinfo else ''}@{host}"


_POSTGRES_SCHEMES = ("postgresql", "postgres")
_SQLALCHEMY_DRIVERS = ("psycopg", "psycopg2", "psycopg_async", "asyncpg", "pg8000")


def postgres_target(url: str | None) -> tuple[str, str | None]:
    """``(url for psycopg, ?prefix= value)`` from a PostgreSQL URL, checked by psycopg's own parser.

    ``postgresql+psycopg://`` (SQLAlchemy's spelling) is accepted; every libpq parameter in the query
    (``sslmode``, ``connect_timeout``, ``application_name``, ``options``...) is kept and honoured by the driver.
    A plain libpq ``key=value`` connection string works too.
    """
    raw = url or postgres_url()
    base, prefix = split_prefix(raw)
    scheme, sep, rest = base.partition("://")
    if sep:
        name, plus, driver = scheme.lower().partition("+")
        if name not in _POSTGRES_SCHEMES or (plus and driver not in _SQLALCHEMY_DRIVERS):
            raise ConfigurationError(
                f"{safe_url(raw)} is not a PostgreSQL URL; use postgresql://user@host:5432/dbname",
            )
        base = f"postgresql://{rest}"
    try:
        from psycopg.conninfo import conninfo_to_dict
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        from ..errors import MissingDependencyError

        raise MissingDependencyError("psycopg", "postgres") from exc
    try:
        conninfo_to_dict(base)
    except Exception as exc:  # psycopg.ProgrammingError for a malformed URL or an unknown parameter
        raise ConfigurationError(f"invalid PostgreSQL URL {safe_url(raw)}: {exc}") from exc
    return base, prefix


def redis_target(url: str | None) -> tuple[str, str | None]:
    """``(url for redis-py, ?prefix= value)`` from a Redis URL, checked by redis-py's own ``parse_url``.

    Driver options in the query (``socket_timeout``, ``health_check_interval``, ``protocol``...) are kept and
    honoured by ``redis.asyncio.Redis.from_url``.
    """
    raw = url or redis_url()
    base, prefix = split_prefix(raw)
    try:
        from redis.connection import parse_url
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        from ..errors import MissingDependencyError

        raise MissingDependencyError("redis", "redis") from exc
    try:
        parse_url(base)  # type: ignore[no-untyped-call]
    except Exception as exc:  # ValueError for a bad scheme, port or option value
        raise ConfigurationError(f"invalid Redis URL {safe_url(raw)}: {exc}") from exc
    return base, prefix


def sqlite_target(path_or_url: str | os.PathLike[str]) -> tuple[str, str | None, bool]:
    """``(database for sqlite3.connect, ?prefix= value, uri flag)`` from a path or a ``sqlite:///`` URL.

    SQLAlchemy's convention: ``sqlite:///rel.db``, ``sqlite:////abs/path.db``, ``sqlite:///:memory:``. Other
    query parameters (``mode=ro``, ``cache=shared``...) are SQLite URI parameters: the database is then opened as
    a ``file:`` URI so SQLite itself honours them. A ``file:`` URI is passed through as one.
    """
    raw = os.fspath(path_or_url)
    if raw.startswith("file:"):
        base, prefix = split_prefix(raw)
        return base, prefix, True
    if not raw.lower().startswith("sqlite://"):
        return raw, None, False
    base, prefix = split_prefix(raw)
    location, _, query = base.partition("?")
    path = location.split("://", 1)[1]
    path = path[1:] if path.startswith("/") else path
    if not path:
        raise ConfigurationError(f"{raw!r} names no database file; use sqlite:///path/to/file.db")
    if not query:
        return path, prefix, False
    return f"file:{quote(path)}?{query}", prefix, True


def open_store(url_or_path: str | os.PathLike[str], *, prefix: str | None = None) -> SessionStore:
    """A store for ``memory://``, ``sqlite:///path`` (or a plain file path), ``postgresql://`` or ``redis://``.

    ``prefix`` (or a ``prefix=`` query parameter) isolates tables/keys of several stores sharing one server.
    """
    if isinstance(url_or_path, os.PathLike):
        url_or_path = os.fspath(url_or_path)
    if not isinstance(url_or_path, str) or not url_or_path:
        raise ConfigurationError(f"open_store needs a URL or a file path, got {url_or_path!r}")
    raw = url_or_path
    scheme = raw.split("://", 1)[0].lower() if "://" in raw else ""
    if scheme == "memory":
        from .memory import InMemoryStore

        return InMemoryStore()
    if scheme in ("", "sqlite"):
        from .sqlite import SQLiteStore

        try:
            sqlite_target(raw)
        except ConfigurationError as exc:
            raise ConfigurationError(f"open_store: {exc}") from exc
        return SQLiteStore(raw, prefix=prefix)
    if scheme.split("+", 1)[0] in _POSTGRES_SCHEMES:
        from .postgres import PostgresStore

        return PostgresStore(raw, prefix=prefix)
    if scheme in ("redis", "rediss", "unix"):
        from .redis import RedisStore

        return RedisStore(raw, prefix=prefix)
    raise ConfigurationError(
        f"open_store: unknown scheme {scheme!r} in {raw!r}; use memory://, sqlite:///path, a file path, "
        "postgresql://... or redis://...",
    )


__all__ = [
    "DEFAULT_POSTGRES_URL",
    "DEFAULT_REDIS_URL",
    "POSTGRES_ENV",
    "REDIS_ENV",
    "open_store",
    "postgres_target",
    "postgres_url",
    "redis_target",
    "redis_url",
    "resolve_prefix",
    "safe_url",
    "sqlite_target",
    "split_prefix",
    "with_prefix",
]
