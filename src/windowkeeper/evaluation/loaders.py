"""Trajectory collections for the benchmarks, read through `windowkeeper.io` (the one reader the CLI uses too),
so every format the CLI accepts is accepted here and errors read the same."""

from __future__ import annotations

import os

from ..io import read_collection
from ..messages import Message


def load_trajectories(path: str | os.PathLike[str], *, limit: int | None = None) -> list[tuple[str, list[Message]]]:
    """Named conversations from a file or a folder of files (tau-bench, SWE-agent, JSONL, any conversation)."""
    return [(c.name, c.messages) for c in read_collection(path, limit=limit)]
