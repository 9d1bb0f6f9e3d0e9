"""What one `manage_context` call did, for logs, metrics and tests."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

Tier = Literal["none", "compaction", "summarization"]


class ContextReport(BaseModel):
    """The outcome of managing one session's working view.

    ``tier`` is the highest tier applied (``none`` below the compaction trigger). ``reason`` explains the choice
    in words; ``failure`` is set when a summarizer or the store failed, in which case nothing was written and
    the token counts describe the unchanged view.
    """

    session_id: str
    tier: Tier = "none"
    reason: str = ""
    tokens_before: int = 0
    tokens_after: int = 0
    tokens_after_compaction: int = 0
    compaction_limit: float = 0.0
    summarization_limit: float = 0.0
    compacted_ids: list[str] = Field(default_factory=list)
    summarized_ids: list[str] = Field(default_factory=list)
    summary_id: str | None = None
    failure: str | None = None
    retries: int = 0

    @property
    def tokens_saved(self) -> int:
        return max(0, self.tokens_before - self.tokens_after)

    @property
    def events_compacted(self) -> int:
        return len(self.compacted_ids)

    @property
    def events_summarized(self) -> int:
        return len(self.summarized_ids)

    def describe(self) -> str:
        text = (
            f"session {self.session_id!r}: tier={self.tier} tokens {self.tokens_before} -> {self.tokens_after} "
            f"(saved {self.tokens_saved}; compacted {self.events_compacted}, summarized {self.events_summarized})"
        )
        if self.reason:
            text += f"; {self.reason}"
        if self.failure:
            text += f"; FAILED: {self.failure}"
        return text
