"""What a gateway process is told: budget, listen address, store, upstreams, summarizer, limits.

Every setting has a command-line flag and a key of the same name (dashes or underscores) in a TOML ``--config``
file; flags win over the file, the file over the defaults. The defaults are what a single user on one machine wants:
listen on 127.0.0.1 only, the providers' public endpoints, and a SQLite file in the user's data directory.
"""

from __future__ import annotations

import os
import sys
import tomllib
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from ..errors import ConfigurationError

OPENAI_BASE_URL = "https://api.openai.com/v1"
ANTHROPIC_BASE_URL = "https://api.anthropic.com"
GEMINI_BASE_URL = "https://generativelanguage.googleapis.com"
DEFAULT_PORT = 8787
DEFAULT_BUDGET = 128_000
DEFAULT_INDEX_ENTRIES = 100_000


def data_dir() -> Path:
    """The per-user data directory (XDG on Linux, Application Support on macOS, LOCALAPPDATA on Windows)."""
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
        return Path(base) / "windowkeeper"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / "windowkeeper"
    return Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share") / "windowkeeper"


def default_store() -> str:
    """``sqlite:///<data dir>/gateway.sqlite3``: the embedded store, which needs nothing started."""
    return f"sqlite:///{data_dir() / 'gateway.sqlite3'}"


@dataclass(frozen=True)
class ServeConfig:
    """One gateway's settings (see the module docstring); ``store=None`` means `default_store`."""

    budget: int = DEFAULT_BUDGET
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    store: str | None = None
    openai_base_url: str = OPENAI_BASE_URL
    anthropic_base_url: str = ANTHROPIC_BASE_URL
    gemini_base_url: str = GEMINI_BASE_URL
    """The Gemini API root (google-genai's ``base_url``: the ``/v1beta`` of each path is the client's)."""
    summarizer: str = "extractive"
    timeout: float = 600.0
    """Seconds an upstream call may take (reading included: a long generation streams for minutes)."""
    connect_timeout: float = 10.0
    max_body_bytes: int = 64 * 1024 * 1024
    max_threads: int = 1024
    """Threads whose window this process keeps in memory (others are read back from the store when they return)."""
    max_thread_bytes: int = 64 * 1024 * 1024
    """Bound on the last request sizes of the threads kept in memory, together: a thread's memory grows with its
    conversation, so this, not the count alone, keeps the process flat while its conversations grow."""
    cache_bytes: int = 64 * 1024 * 1024
    """Bound on the process-wide memos every thread shares, together: message token counts, the summarizer's
    candidate lines, the recall index's originals, passage counts and words (`Threads.cache_shares`). Each is
    bounded by entries or bytes of its own; without one budget for all, they fill for hours after the threads'
    bound is reached and the process keeps growing."""
    max_index_entries: int = DEFAULT_INDEX_ENTRIES
    """Records of the recognition index (one per conversation head and per opening message) this process keeps
    in the store; past it, the least recently used are deleted (`Recognizer`), and a conversation whose record
    went starts a new thread when it returns."""
    idle_seconds: float = 1800.0
    """A thread unused this long leaves memory (it is read back from the store if it returns)."""
    recall: bool = True
    """Offer the model the recall tool (answered by the gateway) once a thread has been cut."""

    def __post_init__(self) -> None:
        if isinstance(self.budget, bool) or not isinstance(self.budget, int) or self.budget < 256:
            raise ConfigurationError(f"budget must be a number of tokens >= 256 (e.g. 128000), got {self.budget!r}")
        if isinstance(self.port, bool) or not isinstance(self.port, int) or not 0 <= self.port <= 65535:
            raise ConfigurationError(f"port must be 0-65535, got {self.port!r}")
        for name in ("openai_base_url", "anthropic_base_url", "gemini_base_url"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.startswith(("http://", "https://")):
                raise ConfigurationError(f"{name} must be an http:// or https:// URL, got {value!r}")
        if not isinstance(self.summarizer, str) or not self.summarizer:
            raise ConfigurationError(f"summarizer must be 'extractive' or a model name, got {self.summarizer!r}")
        for name in ("max_threads", "max_thread_bytes", "max_body_bytes", "cache_bytes", "max_index_entries"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigurationError(f"{name} must be a positive whole number, got {value!r}")
        for name in ("timeout", "connect_timeout", "idle_seconds"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                raise ConfigurationError(f"{name} must be a positive number of seconds, got {value!r}")

    @property
    def store_url(self) -> str:
        return self.store or default_store()


def load_config(path: str | os.PathLike[str] | None = None, **overrides: Any) -> ServeConfig:
    """The settings of a TOML file (optional) with ``overrides`` (the flags given; None values are ignored)."""
    values: dict[str, Any] = {}
    known = {f.name for f in fields(ServeConfig)}
    if path is not None:
        try:
            raw = tomllib.loads(Path(path).read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigurationError(f"cannot read the config file {os.fspath(path)!r}: {exc}") from exc
        except tomllib.TOMLDecodeError as exc:
            raise ConfigurationError(f"the config file {os.fspath(path)!r} is not valid TOML: {exc}") from exc
        section = raw.get("serve", raw)
        for key, value in section.items():
            name = key.replace("-", "_")
            if name not in known:
                raise ConfigurationError(
                    f"unknown setting {key!r} in {os.fspath(path)!r}; known: {', '.join(sorted(known))}"
                )
            values[name] = value
    values.update({k: v for k, v in overrides.items() if v is not None})
    return replace(ServeConfig(), **values)
