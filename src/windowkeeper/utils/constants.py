"""Reference import path for the graph sentinels."""

from ..constants import END, START

__all__ = ["END", "START"]
