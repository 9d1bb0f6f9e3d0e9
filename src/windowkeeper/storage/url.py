"""Pick a backend from a URL or a path, and the environment defaults for the server backends.

A ``prefix=`` query parameter selects the table/key prefix, so one string (an env var, a CLI flag, the argument
handed to a child process) fully identifies where a store's data lives.
"""

from __future__ import annotations

import os
import re
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
            f"prefix={prefix!r} contradicts ?prefix={url_prefix} in {mask_url(url)}; give the prefix once",
        )
    return prefix if prefix is not None else url_prefix if url_prefix is not None else "wk"


_SECRET_NAME = r"[\w.-]*(?:pass|pwd|secret|token|credential|auth|sig|key)[\w.-]*"
_SECRET_VALUE = re.compile(
    rf"(?i)(?<![\w.-])({_SECRET_NAME})(\s*=\s*)('(?:[^'\\]|\\.)*'?|\"(?:[^\"\\]|\\.)*\"?|[^\s&;,'\")]*)"
)
"""``password=...`` (a DSN, a URL query, an ADO-style ``;``-list): every parameter whose name says secret."""
_URL_USERINFO = re.compile(r"(?i)([a-z][\w+.-]*://)([^\s'\"]*)@")
_BARE_USERINFO = re.compile(r"(^|[\s'\"(=])([^\s:/@'\"=]+):(?!//)([^\s'\"]*)@")
_MASK = "***"


def _mask_userinfo(match: re.Match[str]) -> str:
    scheme, userinfo = match[1], match[2]
    user, colon, _ = userinfo.partition(":")
    if "/" in user or "?" in user or "#" in user:  # an '@' in the path or query, not a userinfo: hide it all
        return f"{scheme}{_MASK}@"
    return f"{scheme}{user}{':' + _MASK if colon else ''}@"


def _secrets_of(source: str) -> list[str]:
    """The secret values ``source`` (a URL or DSN) holds, decoded and as written, longest first."""
    found: set[str] = set()
    for match in _SECRET_VALUE.finditer(source):
        value = match[3].strip("'\"")
        found.update((value, unquote_plus(value)))
    for match in _URL_USERINFO.finditer(source):
        _, colon, password = match[2].partition(":")
        if colon:
            found.update((password, unquote_plus(password)))
    return sorted((s for s in found if len(s) >= 3), key=len, reverse=True)


def mask_url(text: str, source: str | None = None) -> str:
    """``text`` with every secret a URL or connection string in it could hold replaced by ``***``.

    The one masking rule of every message and log line that names a store's location: the password of a
    ``user:password@`` userinfo (with or without a scheme, in any scheme), and the value of every parameter whose
    name says secret (``password=``, ``sslpassword=``, ``?token=``, ``auth=``, ``api_key=``...) in a URL query, a
    libpq ``key=value`` string or a ``;``-separated one. With ``source`` (the URL or DSN an error is about), the
    secrets found in it are also scrubbed wherever ``text`` repeats them (a driver's message quoting a fragment).
    User names, hosts, ports and database names stay: they are what an operator needs to find the store.
    """
    masked = _SECRET_VALUE.sub(lambda m: f"{m[1]}{m[2]}{_MASK}", text)
    masked = _URL_USERINFO.sub(_mask_userinfo, masked)
    masked = _BARE_USERINFO.sub(lambda m: m[0] if m[3] == _MASK else f"{m[1]}{m[2]}:{_MASK}@", masked)
    for secret in _secrets_of(source) if source else ():
        masked = masked.replace(secret, _MASK)
    return masked


safe_url = mask_url
"""The earlier name of `mask_url`."""


_LIBPQ_KEYWORD_LIST = (
    "host hostaddr port dbname user password passfile channel_binding connect_timeout client_encoding options "
    "application_name fallback_application_name keepalives keepalives_idle keepalives_interval keepalives_count "
    "tcp_user_timeout replication gssencmode sslmode requiressl sslcompression sslcert sslkey sslpassword "
    "sslcertmode sslrootcert sslcrl sslcrldir sslsni requirepeer ssl_min_protocol_version "
    "ssl_max_protocol_version krbsrvname gsslib gssdelegation service target_session_attrs load_balance_hosts"
)
_LIBPQ_KEYWORDS = frozenset(_LIBPQ_KEYWORD_LIST.split())
_DSN_PAIR = re.compile(r"^\s*([A-Za-z_][\w-]*)\s*=")
_SCHEME_LIKE = re.compile(r"^[A-Za-z][\w+.-]+:")


def is_libpq_dsn(text: str) -> bool:
    """Whether ``text`` is a libpq ``key=value`` connection string (``host=db dbname=app user=me``)."""
    match = _DSN_PAIR.match(text)
    return match is not None and match[1].lower() in _LIBPQ_KEYWORDS and "://" not in text.split("=", 1)[0]


def connection_string_problem(text: str) -> str | None:
    """Why ``text`` (offered as a file path) looks like a connection string instead, or ``None`` for a path.

    A DSN or URL taken for a path silently becomes a local SQLite file named after it (password included), one
    private file per worker; so anything with a ``key=value`` pair, a ``user:password@`` or a ``scheme:`` is
    refused. A path that really holds such characters is given as ``sqlite:///...`` or a `pathlib.Path`.
    """
    name = text.replace("\\", "/").rsplit("/", 1)[-1]
    if "=" in name:
        return "it holds key=value pairs"
    if "@" in text and ":" in text.split("@", 1)[0]:
        return "it holds a user:password@host part"
    if _SCHEME_LIKE.match(text) and text != ":memory:":
        return f"it starts with {text.split(':', 1)[0]!r}: like a URL scheme or a host:port"
    return None


_POSTGRES_SCHEMES = ("postgresql", "postgres")
_SQLALCHEMY_DRIVERS = ("psycopg", "psycopg2", "psycopg_async", "asyncpg", "pg8000")


def postgres_target(url: str | None) -> tuple[str, str | None]:
    """``(url for psycopg, ?prefix= value)`` from a PostgreSQL URL, checked by psycopg's own parser.

    ``postgresql+psycopg://`` (SQLAlchemy's spelling) is accepted; every libpq parameter in the query
    (``sslmode``, ``connect_timeout``, ``application_name``, ``options``...) is kept and honoured by the driver.
    A plain libpq ``key=value`` connection string works too.
    """
    raw = url or postgres_url()
    if is_libpq_dsn(raw):
        base, prefix = split_dsn_prefix(raw)
    else:
        base, prefix = split_prefix(raw)
        scheme, sep, rest = base.partition("://")
        name, plus, driver = scheme.lower().partition("+")
        if not sep or name not in _POSTGRES_SCHEMES or (plus and driver not in _SQLALCHEMY_DRIVERS):
            raise ConfigurationError(
                f"{mask_url(raw)} is not a PostgreSQL URL; use postgresql://user@host:5432/dbname "
                "or a libpq string like 'host=db dbname=app user=me'",
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
        # not chained: the driver's text may quote the string, and a traceback prints the cause unmasked
        raise ConfigurationError(
            f"invalid PostgreSQL URL {mask_url(raw)}: {mask_url(str(exc), source=raw)}",
        ) from None
    return base, prefix


_DSN_PREFIX = re.compile(r"(?:^|\s)prefix\s*=\s*([^\s']*)")


def split_dsn_prefix(dsn: str) -> tuple[str, str | None]:
    """A libpq ``key=value`` string without our ``prefix=`` pair (libpq rejects unknown keys), and that prefix."""
    match = _DSN_PREFIX.search(dsn)
    if match is None:
        return dsn, None
    return (dsn[: match.start()] + " " + dsn[match.end() :]).strip(), match[1]


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
        raise ConfigurationError(
            f"invalid Redis URL {mask_url(raw)}: {mask_url(str(exc), source=raw)}",
        ) from None
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
        problem = None if isinstance(path_or_url, os.PathLike) else connection_string_problem(raw)
        if problem is not None:
            raise ConfigurationError(
                f"{mask_url(raw)} looks like a connection string, not a file path ({problem}); give a "
                "postgresql:// or redis:// URL or a libpq 'host=... dbname=...' string for a server, or "
                "sqlite:///path (or a pathlib.Path) for a file whose name really is that",
            )
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
    if isinstance(url_or_path, os.PathLike):  # a path, whatever characters its name holds
        from .sqlite import SQLiteStore

        return SQLiteStore(url_or_path, prefix=prefix)
    if not isinstance(url_or_path, str) or not url_or_path:
        raise ConfigurationError(f"open_store needs a URL or a file path, got {url_or_path!r}")
    raw = url_or_path
    kind = store_kind(raw)
    if kind == "memory":
        from .memory import InMemoryStore

        return InMemoryStore()
    if kind == "sqlite":
        from .sqlite import SQLiteStore

        try:
            sqlite_target(raw)
        except ConfigurationError as exc:
            raise ConfigurationError(f"open_store: {exc}") from None
        return SQLiteStore(raw, prefix=prefix)
    if kind == "postgres":
        from .postgres import PostgresStore

        return PostgresStore(raw, prefix=prefix)
    from .redis import RedisStore

    return RedisStore(raw, prefix=prefix)


def store_kind(url_or_path: str) -> str:
    """Which backend a location names: ``"memory"``, ``"sqlite"``, ``"postgres"`` or ``"redis"``.

    A libpq ``key=value`` string is PostgreSQL; a URL picks by scheme; anything else is a SQLite file path
    (refused later by `sqlite_target` when it looks like a connection string). An unknown scheme is an error.
    """
    if is_libpq_dsn(url_or_path):
        return "postgres"
    scheme = url_or_path.split("://", 1)[0].lower() if "://" in url_or_path else ""
    if scheme == "memory":
        return "memory"
    if scheme in ("", "sqlite"):
        return "sqlite"
    if scheme.split("+", 1)[0] in _POSTGRES_SCHEMES:
        return "postgres"
    if scheme in ("redis", "rediss", "unix"):
        return "redis"
    raise ConfigurationError(
        f"open_store: unknown scheme {scheme[:40]!r} in {mask_url(url_or_path)}; use memory://, sqlite:///path, "
        "a file path, postgresql://... (or a libpq 'host=... dbname=...' string) or redis://...",
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
    "connection_string_problem",
    "is_libpq_dsn",
    "mask_url",
    "safe_url",
    "store_kind",
    "sqlite_target",
    "split_prefix",
    "with_prefix",
]
