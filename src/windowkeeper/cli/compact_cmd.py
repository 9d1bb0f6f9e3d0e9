"""``windowkeeper compact``: apply one strategy to a conversation file and write the resulting view."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from rich.console import Console

from ..context.base import BaseContextManager
from ..context.baselines import sliding_window
from ..context.budget import TokenBudgetContextManager
from ..context.message import MessageContextManager
from ..context.summary import SummaryContextManager
from ..context.zones import build_zones, render_zones
from ..errors import ConfigurationError
from ..evaluation.loaders import load_conversation
from ..llm.formats import to_anthropic, to_openai_chat
from ..state import AgentState
from ..summarize import ExtractiveSummarizer
from ..tokens import default_counter

OUT_FORMATS = ("windowkeeper", "openai", "anthropic")


def _manager(strategy: str, budget: int) -> BaseContextManager[AgentState] | None:
    counter = default_counter()
    if strategy == "budget":
        # A one-shot compaction should land well inside the budget, so cut straight to the low watermark.
        return TokenBudgetContextManager(
            max_tokens=budget, reserve_tokens=0, counter=counter, summarizer=ExtractiveSummarizer(counter=counter)
        )
    if strategy == "summary":
        return SummaryContextManager(model="extractive", max_messages=None, token_budget=budget, keep_recent=8)
    if strategy == "message":
        return MessageContextManager(max_messages=max(1, budget // 1000))
    return None


def run_compact(
    console: Console, file: Path, *, strategy: str, budget: int, out: Path, fmt: str, out_format: str
) -> None:
    if out_format not in OUT_FORMATS:
        raise ConfigurationError(f"--out-format {out_format!r} is unknown; use one of {', '.join(OUT_FORMATS)}")
    messages = load_conversation(file, fmt=fmt)
    counter = default_counter()
    state = AgentState(context=list(messages))
    before = build_zones(state, counter=counter, reserve_tokens=0).input_tokens
    manager = _manager(strategy, budget)
    if manager is None:
        state.context = sliding_window(messages, budget, counter=counter)
    else:
        state = asyncio.run(manager.atrim_context(state))
    zones = build_zones(state, counter=counter, reserve_tokens=0)
    payload: Any
    if out_format == "windowkeeper":
        payload = state.model_dump(mode="json", include={"context", "context_summary"})
    elif out_format == "openai":
        payload = to_openai_chat(render_zones(zones))
    else:
        system, msgs = to_anthropic(render_zones(zones))
        payload = {"system": system, "messages": msgs}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(payload, ensure_ascii=False, indent=1), encoding="utf-8")
    after = zones.input_tokens
    saved = 100 * (1 - after / before) if before else 0.0
    console.print(
        f"{strategy}: {len(messages)} -> {len(state.context)} messages, {before:,} -> {after:,} tokens "
        f"({saved:.1f}% saved){' + summary' if state.context_summary else ''}; wrote {out} ({out_format})"
    )


__all__ = ["OUT_FORMATS", "run_compact"]
