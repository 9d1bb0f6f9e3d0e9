"""Conversations and trajectory collections for the benchmarks, read through `windowkeeper.io` (the one reader
the CLI uses too), so every format the CLI accepts is accepted here and errors read the same."""

from __future__ import annotations

import os
from typing import Any

from ..io import ConversationFileError, InputFormat, detect_format, read_collection, read_conversation
from ..io.reader import parse_conversations
from ..messages import Message
from ..state import AgentState

FORMATS = tuple(f.value for f in InputFormat)


def parse_conversation(data: Any, *, fmt: str = "auto", source: str = "<data>") -> list[Message]:
    """Messages of the single conversation in parsed JSON ``data``."""
    conversations = parse_conversations(data, fmt=fmt, source=source)
    if len(conversations) != 1:
        raise ConversationFileError(f"{source} holds {len(conversations)} conversations; expected one")
    return conversations[0].messages


def load_conversation(path: str | os.PathLike[str], *, fmt: str = "auto") -> list[Message]:
    """The messages of the one conversation in a file (any format `windowkeeper.io` reads)."""
    return read_conversation(path, fmt=fmt).messages


def load_state(path: str | os.PathLike[str], *, fmt: str = "auto") -> AgentState:
    """A conversation file as a state: our saved ``AgentState`` JSON keeps its summary and scratchpad."""
    return read_conversation(path, fmt=fmt).state()


def load_trajectories(path: str | os.PathLike[str], *, limit: int | None = None) -> list[tuple[str, list[Message]]]:
    """Named conversations from a file or a folder of files (tau-bench, SWE-agent, JSONL, any conversation)."""
    return [(c.name, c.messages) for c in read_collection(path, limit=limit)]


__all__ = [
    "FORMATS",
    "ConversationFileError",
    "detect_format",
    "load_conversation",
    "load_state",
    "load_trajectories",
    "parse_conversation",
]
