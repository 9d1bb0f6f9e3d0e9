"""Locating the shared real-world trajectories used by the format tests (read in place, never copied)."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
DATA_ROOT = REPO_ROOT.parent / "shared" / "data"
TAU_BENCH = DATA_ROOT / "tau_bench" / "gpt-4o-airline.json"
SWE_AGENT = DATA_ROOT / "swe_agent"


def tau_trajectories() -> list[dict[str, Any]]:
    """The 200 tau-bench records (parsed once per session; callers must not mutate them)."""
    if not TAU_BENCH.is_file():
        pytest.skip(f"tau-bench data not found at {TAU_BENCH} (expected ../shared/data next to the repo)")
    return _load_tau()


@functools.lru_cache(maxsize=1)
def _load_tau() -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads(TAU_BENCH.read_text(encoding="utf-8"))
    return data


def swe_agent_histories() -> dict[str, list[dict[str, Any]]]:
    files = sorted(SWE_AGENT.glob("*.traj")) if SWE_AGENT.is_dir() else []
    if not files:
        pytest.skip(f"SWE-agent trajectories not found under {SWE_AGENT}")
    return {f.name: json.loads(f.read_text(encoding="utf-8"))["history"] for f in files}


# Keys SWE-agent adds to its history entries for its own bookkeeping; they are not part of the chat format.
SWE_AGENT_KEYS = frozenset({"agent", "message_type", "thought", "action", "is_demo", "tool_call_ids"})


def swe_agent_to_openai(entry: dict[str, Any]) -> dict[str, Any]:
    """A SWE-agent history entry as an OpenAI chat message.

    SWE-agent stores a tool message's call as ``tool_call_ids`` (a one-element list) instead of ``tool_call_id``;
    everything else it adds is bookkeeping and is stripped.
    """
    out = {k: v for k, v in entry.items() if k not in SWE_AGENT_KEYS}
    if entry.get("role") == "tool":
        (call_id,) = entry["tool_call_ids"]
        out["tool_call_id"] = call_id
    return out
