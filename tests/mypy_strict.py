"""Run ``mypy --strict`` on files outside the package, the way the typing tests check what users write."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def mypy_strict(paths: Sequence[str], *options: str) -> subprocess.CompletedProcess[str]:
    """mypy's result for ``paths`` under ``--strict`` (Python 3.11, imports followed silently, the repo's cache),
    with ``options`` added."""
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--python-version",
            "3.11",
            "--follow-imports=silent",
            "--ignore-missing-imports",
            *options,
            "--cache-dir",
            str(ROOT / ".mypy_cache"),
            *paths,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1200,
    )
