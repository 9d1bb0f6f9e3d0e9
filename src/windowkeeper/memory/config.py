"""Validated thresholds of the three-tier memory.

Triggers are fractions of ``pre_rot_threshold`` (the token count past which a model's answers start to degrade),
so one number scales the whole policy; the checks run once at construction so a typo fails loudly instead of
silently disabling a tier. ``compaction_target`` is where a compaction pass stops: a pass that started at the
trigger frees down to the lower target, so the view then grows untouched (its prompt prefix byte-identical, which
is what provider prompt caches bill less for) until it reaches the trigger again.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigurationError

DEFAULT_THRESHOLDS: dict[str, Any] = {
    "pre_rot_threshold": 150_000,
    "compaction_trigger": 0.8,
    "summarization_trigger": 0.95,
    "keep_recent_count": 10,
}
DEFAULT_COMPACTION_TARGET = 0.6
TARGET_SHARE = 0.75
"""When ``compaction_trigger`` is at or below the default target, the target defaults to this share of it."""
_KNOWN = (*DEFAULT_THRESHOLDS, "compaction_target", "summarization_target", "min_compaction_gain")


@dataclass(frozen=True)
class Thresholds:
    """Resolved thresholds.

    ``compaction_target`` (default 0.6, below ``compaction_trigger``) is the level a compaction pass frees down to.

    ``summarization_target`` (off by default) is the level a summary brings the view down to: only the oldest
    turns are summarized, until the newest ones and a summary of at most ``summary_max_tokens`` fit under it,
    never fewer than ``keep_recent_count`` events kept. Off, a summary takes everything but the newest
    ``keep_recent_count`` events: the view then holds little verbatim right after a summary, but grows untouched
    (its prompt prefix cached) for longest. With a target, conversations of short turns keep more of their recent
    turns word for word, at the cost of more frequent summaries (each one changes the prompt prefix); see
    docs/memory.md for what it measured.

    ``min_compaction_gain`` is in tokens (default half the band between target and trigger). A compaction
    pass that frees fewer tokens is not counted as relief: management moves on to summarization instead of
    nibbling at the same band on every add, since each nibble would change the prompt prefix (and so miss the
    provider's prompt cache) for almost nothing.
    """

    pre_rot_threshold: int
    compaction_trigger: float
    summarization_trigger: float
    keep_recent_count: int
    min_compaction_gain: int
    compaction_target: float = DEFAULT_COMPACTION_TARGET
    summarization_target: float | None = None

    @property
    def compaction_limit(self) -> float:
        return self.pre_rot_threshold * self.compaction_trigger

    @property
    def compaction_goal(self) -> float:
        """Tokens a compaction pass frees down to (``pre_rot_threshold * compaction_target``)."""
        return self.pre_rot_threshold * self.compaction_target

    @property
    def summarization_goal(self) -> float | None:
        """Tokens a summary brings the view down to (``pre_rot_threshold * summarization_target``), if set."""
        target = self.summarization_target
        return None if target is None else self.pre_rot_threshold * target

    @property
    def summarization_limit(self) -> float:
        return self.pre_rot_threshold * self.summarization_trigger

    def as_dict(self) -> dict[str, Any]:
        return {
            "pre_rot_threshold": self.pre_rot_threshold,
            "compaction_trigger": self.compaction_trigger,
            "summarization_trigger": self.summarization_trigger,
            "keep_recent_count": self.keep_recent_count,
            "compaction_target": self.compaction_target,
            "summarization_target": self.summarization_target,
            "min_compaction_gain": self.min_compaction_gain,
        }


def _ratio(values: Mapping[str, Any], key: str) -> float:
    value = values[key]
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 1:
        raise ConfigurationError(f"thresholds[{key!r}]={value!r} must be a ratio in (0, 1], e.g. 0.8 for 80%")
    return float(value)


def _count(values: Mapping[str, Any], key: str, *, positive: bool) -> int:
    value = values[key]
    low = 1 if positive else 0
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        kind = "a positive int (at least 1)" if positive else "an int >= 0"
        raise ConfigurationError(f"thresholds[{key!r}]={value!r} must be {kind} (tokens or events)")
    return value


def resolve_thresholds(thresholds: Mapping[str, Any] | Thresholds | None) -> Thresholds:
    """Merge ``thresholds`` over the defaults and validate every value; unknown keys are rejected by name."""
    if isinstance(thresholds, Thresholds):
        return thresholds
    if thresholds is not None and not isinstance(thresholds, Mapping):
        raise ConfigurationError(f"thresholds must be a dict, got {type(thresholds).__name__}")
    given = dict(thresholds or {})
    unknown = sorted(set(given) - set(_KNOWN))
    if unknown:
        raise ConfigurationError(f"unknown thresholds key(s) {unknown}; known keys: {', '.join(_KNOWN)}")
    values = {**DEFAULT_THRESHOLDS, **given}
    pre_rot = _count(values, "pre_rot_threshold", positive=True)
    compaction = _ratio(values, "compaction_trigger")
    summarization = _ratio(values, "summarization_trigger")
    if compaction >= summarization:
        raise ConfigurationError(
            f"thresholds['compaction_trigger']={compaction} must be below "
            f"thresholds['summarization_trigger']={summarization}: compaction is the earlier, gentler tier",
        )
    if "compaction_target" not in given:
        default = DEFAULT_COMPACTION_TARGET
        values["compaction_target"] = default if default < compaction else round(compaction * TARGET_SHARE, 6)
    target = _ratio(values, "compaction_target")
    if target >= compaction:
        raise ConfigurationError(
            f"thresholds['compaction_target']={target} must be below thresholds['compaction_trigger']={compaction}: "
            "a compaction pass starts at the trigger and frees down to the target",
        )
    summary_target = None if values.get("summarization_target") is None else _ratio(values, "summarization_target")
    if summary_target is not None and summary_target >= compaction:
        raise ConfigurationError(
            f"thresholds['summarization_target']={summary_target} must be below "
            f"thresholds['compaction_trigger']={compaction}: a summary must leave the view room to grow before the "
            "next pass",
        )
    # 0 newest events kept would let a summary swallow the user's current question (and the pending tool call)
    keep = _count(values, "keep_recent_count", positive=True)
    values.setdefault("min_compaction_gain", max(1, math.ceil(round(pre_rot * (compaction - target) / 2, 6))))
    gain = _count(values, "min_compaction_gain", positive=False)
    return Thresholds(pre_rot, compaction, summarization, keep, gain, target, summary_target)
