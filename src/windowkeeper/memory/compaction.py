"""Tier 2: reversible compaction of one event.

The message text is swapped for a short, deterministic gist and the original is kept in the event's own state,
so undoing it needs nothing but the event. The gist is made offline (first clause, first few words) because
compaction runs inside `add` and must be cheap and repeatable.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from ..tokens import TokenCounter
from .events import COMPACTION_KEY

COMPACTED_PREFIX = "[COMPACTED: "
GIST_WORDS = 8
GIST_CJK_CHARS = 16
GIST_MAX_CHARS = 72

_CLAUSE_END = re.compile(r"[.!?;:,\u3002\uff01\uff1f\uff1b\uff1a\uff0c\u3001]\s*|\s[-\u2013\u2014]\s")
_NOISE = re.compile(r"^[\s`#>*\-\[\]{}\"']+")


def make_gist(content: str, role: str, tool_name: str | None = None) -> str:
    """A few words that say what ``content`` was about: its first clause, trimmed; never empty."""
    first = next((line for line in content.splitlines() if line.strip()), "")
    first = _NOISE.sub("", first)
    clause = _CLAUSE_END.split(first, maxsplit=1)[0].strip() or first.strip()
    words = clause.split()
    gist = " ".join(words[:GIST_WORDS]) if len(words) > 1 else clause[:GIST_CJK_CHARS]
    gist = gist[:GIST_MAX_CHARS].rstrip()
    if not gist:
        gist = f"{role} message"
    if role == "tool":
        gist = f"{tool_name or 'tool'} result: {gist}"
    return gist


def is_compacted(event: Mapping[str, Any]) -> bool:
    state = event.get("state")
    return isinstance(state, Mapping) and isinstance(state.get(COMPACTION_KEY), Mapping)


def compact_in_place(event: dict[str, Any], counter: TokenCounter, *, strategy: str = "gist") -> int:
    """Replace the event's text by ``[COMPACTED: gist]`` keeping the original; return tokens saved (0: untouched).

    An event whose gist would not be shorter in tokens is left alone, so compaction never makes a view bigger.
    """
    message = event["message"]
    original = str(message.get("content") or "")
    if not original or is_compacted(event):
        return 0
    compacted = f"{COMPACTED_PREFIX}{make_gist(original, message.get('role', 'user'), message.get('name'))}]"
    saved = counter.count_text(original) - counter.count_text(compacted)
    if saved <= 0:
        return 0
    event.setdefault("state", {})[COMPACTION_KEY] = {
        "original_content": original,
        "tokens_saved": saved,
        "compacted_at": datetime.now(UTC).isoformat(),
        "strategy": strategy,
    }
    message["content"] = compacted
    return saved


def decompress_in_place(event: dict[str, Any]) -> bool:
    """Undo a compaction; ``False`` when the event was not compacted."""
    info = event.get("state", {}).pop(COMPACTION_KEY, None)
    if not isinstance(info, Mapping) or "original_content" not in info:
        return False
    event["message"]["content"] = info["original_content"]
    return True
