"""Benchmark datasets shaped into long sessions: LongMemEval questions and chained agent trajectories.

The data itself stays in ``../shared/data``; these functions only read it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..messages import Message
from ..units import group_units

DEFAULT_DATA_DIR = Path(__file__).resolve().parents[3].parent / "shared" / "data"
LONGMEMEVAL_SYSTEM = "You are a helpful personal assistant. Use what the user told you in earlier conversations."


def data_dir() -> Path:
    """The shared data folder (``WINDOWKEEPER_DATA_DIR`` overrides the ``../shared/data`` default)."""
    import os

    return Path(os.environ.get("WINDOWKEEPER_DATA_DIR", DEFAULT_DATA_DIR))


@dataclass
class MemoryQuestion:
    """One LongMemEval question with its haystack flattened into a single conversation."""

    question_id: str
    question_type: str
    question: str
    answer: str
    messages: list[Message]
    evidence: dict[str, str] = field(default_factory=dict)  # message_id -> text of turns with has_answer

    @property
    def answer_in_history(self) -> bool:
        needle = self.answer.casefold()
        return any(needle in m.text().casefold() for m in self.messages)


def load_longmemeval(path: str | Path) -> MemoryQuestion:
    """A LongMemEval question file as one conversation: system prompt, then every session's turns in order."""
    p = Path(path)
    raw = json.loads(p.read_text(encoding="utf-8"))
    qid = str(raw.get("question_id", p.stem))
    messages = [Message.text_message(LONGMEMEVAL_SYSTEM, role="system", message_id=f"{qid}:system")]
    evidence: dict[str, str] = {}
    dates = raw.get("haystack_dates") or []
    for s_idx, session in enumerate(raw["haystack_sessions"]):
        date = dates[s_idx] if s_idx < len(dates) else None
        for t_idx, turn in enumerate(session):
            role = turn.get("role")
            if role not in ("user", "assistant"):
                continue
            mid = f"{qid}:s{s_idx}:t{t_idx}"
            msg = Message.text_message(str(turn.get("content", "")), role=role, message_id=mid)
            if date:
                msg.metadata["session_date"] = date
            messages.append(msg)
            if turn.get("has_answer"):
                evidence[mid] = msg.text()
    return MemoryQuestion(
        question_id=qid,
        question_type=str(raw.get("question_type", "")),
        question=str(raw.get("question", "")),
        answer=str(raw.get("answer", "")),
        messages=messages,
        evidence=evidence,
    )


def chain_trajectories(trajectories: Sequence[Sequence[Message]], *, min_calls: int = 300) -> list[Message]:
    """Concatenate recorded trajectories into one long session with at least ``min_calls`` model calls.

    The first trajectory's system prompt is kept once; later trajectories contribute their turns, so the result
    reads like one support agent serving customer after customer. Trajectories are reused in order if needed.
    """
    if not trajectories:
        return []
    out: list[Message] = [m for m in trajectories[0] if m.role == "system"]
    calls = 0
    round_no = 0
    while calls < min_calls:
        for traj in trajectories:
            for unit in group_units([m for m in traj if m.role != "system"]):
                if unit.kind in ("orphan", "incomplete", "pending"):
                    continue
                for msg in unit.messages:
                    copy = msg.model_copy(update={"message_id": f"r{round_no}:{msg.message_id}"})
                    if round_no:
                        copy = _rename_calls(copy, round_no)
                    out.append(copy)
                    calls += msg.role == "assistant"
            if calls >= min_calls:
                break
        round_no += 1
    return out


def _rename_calls(msg: Message, round_no: int) -> Message:
    """Keep tool call ids unique when a trajectory is reused in a later round."""
    from ..blocks import ToolCallBlock, ToolResultBlock

    changed = []
    for block in msg.content:
        if isinstance(block, ToolCallBlock):
            block = block.model_copy(update={"id": f"r{round_no}_{block.id}"})
        elif isinstance(block, ToolResultBlock):
            block = block.model_copy(update={"call_id": f"r{round_no}_{block.call_id}"})
        changed.append(block)
    return msg.with_content(changed, tools_calls=None)
