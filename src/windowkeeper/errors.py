"""Exception hierarchy of windowkeeper.

::

    WindowkeeperError
    ├── ConfigurationError (also ValueError)      bad constructor arguments
    ├── FormatError (also ValueError)             a provider payload we cannot convert (names index and key)
    ├── ProviderError                             an LLM call failed at the SDK boundary
    │   └── MissingDependencyError (also ImportError)  an optional SDK/extra is not installed
    ├── StorageError                              a backend failed or holds corrupt data
    └── GraphError                                graph construction or execution problems
        ├── GraphCompileError (also ValueError)
        └── RecursionLimitError

Errors that subclass built-in types do so because callers reasonably catch ``ValueError``/``ImportError`` for
those cases; the library base class lets applications catch everything of ours at once.
"""

from __future__ import annotations


class WindowkeeperError(Exception):
    """Base class of every error windowkeeper raises on purpose."""


class ConfigurationError(WindowkeeperError, ValueError):
    """A constructor or function argument is invalid; the message names the parameter and the fix."""


class FormatError(WindowkeeperError, ValueError):
    """A provider-format payload could not be converted.

    ``index`` is the position of the offending message in the input list and ``key`` the field that was wrong,
    so a caller can point at the exact spot in a large file.
    """

    def __init__(self, message: str, *, index: int | None = None, key: str | None = None) -> None:
        where = []
        if index is not None:
            where.append(f"message {index}")
        if key is not None:
            where.append(f"key {key!r}")
        prefix = f"{', '.join(where)}: " if where else ""
        super().__init__(prefix + message)
        self.index = index
        self.key = key


class ProviderError(WindowkeeperError):
    """A call to an LLM provider failed (network, HTTP status, timeout, or an unusable reply)."""

    def __init__(self, message: str, *, provider: str | None = None, status_code: int | None = None) -> None:
        super().__init__(message)
        self.provider = provider
        self.status_code = status_code


class MissingDependencyError(ProviderError, ImportError):
    """An optional dependency is missing; the message carries the exact ``pip install`` command."""

    def __init__(self, package: str, extra: str) -> None:
        super().__init__(
            f'{package!r} is not installed; install it with: pip install "windowkeeper[{extra}]"',
        )
        self.package = package
        self.extra = extra


class StorageError(WindowkeeperError):
    """A storage backend failed, or returned data that does not validate."""


class GraphError(WindowkeeperError):
    """Problems building or running a graph."""


class GraphCompileError(GraphError, ValueError):
    """The graph definition is invalid (missing entry point, unknown or unreachable node)."""


class RecursionLimitError(GraphError):
    """A run took more steps than ``recursion_limit``; the message names the limit and the path taken."""

    def __init__(self, limit: int, path: list[str]) -> None:
        shown = " -> ".join(path[-12:])
        more = f" (last {min(len(path), 12)} of {len(path)} steps)" if len(path) > 12 else ""
        super().__init__(
            f"recursion limit of {limit} steps reached; path: {shown}{more}. "
            "Raise config['recursion_limit'] or add an edge to END.",
        )
        self.limit = limit
        self.path = path


__all__ = [
    "ConfigurationError",
    "FormatError",
    "GraphCompileError",
    "GraphError",
    "MissingDependencyError",
    "ProviderError",
    "RecursionLimitError",
    "StorageError",
    "WindowkeeperError",
]
