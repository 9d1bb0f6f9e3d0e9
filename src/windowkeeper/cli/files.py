"""Writing the CLI's output files safely: never the input, never an existing file without ``--force``, atomically.

``-`` means standard output. Every failure is a `CliError` with a one-line message naming the path.
"""

from __future__ import annotations

import os
import stat
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from .output import CliError

STDOUT = "-"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def check_target(
    target: str, *, inputs: Sequence[str], force: bool, option: str = "-o", replaceable_png: bool = False
) -> Path | None:
    """The path to write (None for stdout), after refusing the unsafe cases with a message naming the fix.

    ``replaceable_png`` lets a chart replace an earlier chart (a PNG file) without ``--force``.
    """
    if target == STDOUT:
        return None
    path = Path(target)
    for source in inputs:
        if source != "-" and (_same_file(path, Path(source)) or path.resolve() == Path(source).resolve()):
            raise CliError(f"{option} {target}: is the input file; write the result somewhere else")
    if path.is_dir():
        raise CliError(f"{option} {target}: is a directory; give a file name")
    if _is_special(path):
        return path  # a device or pipe (/dev/stdout, a FIFO): written in place, nothing on disk is replaced
    if path.exists() and not force and not (replaceable_png and _is_png(path)):
        raise CliError(f"{option} {target}: already exists; pass --force to overwrite it")
    parent = path.parent
    if parent.exists() and not parent.is_dir():
        raise CliError(f"{option} {target}: {parent} is not a directory")
    return path


def _is_special(path: Path) -> bool:
    """A character device, FIFO or socket: never replaced by a rename (as root that would replace /dev/null)."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return False
    return stat.S_ISCHR(mode) or stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISBLK(mode)


def _is_png(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            return handle.read(8) == PNG_MAGIC
    except OSError:
        return False


def write_bytes(path: Path | None, data: bytes, *, option: str = "-o") -> str:
    """Write ``data`` to ``path`` (stdout when None) through a temp file and a rename; the name written to."""
    if path is None:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
        return STDOUT
    if _is_special(path):
        try:
            with path.open("wb") as handle:
                handle.write(data)
        except OSError as exc:
            raise CliError(f"{option} {path}: cannot write ({exc.strerror or exc})") from exc
        return str(path)
    tmp: str | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
        tmp = None
    except OSError as exc:
        raise CliError(f"{option} {path}: cannot write ({exc.strerror or exc})") from exc
    finally:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
    return str(path)
