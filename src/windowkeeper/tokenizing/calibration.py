"""Counters for models whose tokenizer is not available offline (Anthropic, Gemini, Llama...).

Their counts are estimated with an OpenAI encoding, then scaled by the ratio between what providers actually
reported as ``prompt_tokens`` and what the base counter estimated for the same messages. The ratio is an
exponential moving average, so one odd report (a cached prefix, a provider-side system prompt) moves it only part
of the way, and it is clamped so a garbage report cannot make budgets absurd.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Sequence

from ..errors import ConfigurationError
from ..messages import Message
from .counters import TokenCounter

logger = logging.getLogger(__name__)


class CalibratedCounter:
    """Scales a base counter's estimates toward provider-reported prompt sizes.

    The first `calibrate` call adopts the observed ratio outright; later ones move it by ``alpha`` toward the new
    observation. Per-message counts are rounded individually, so their sum may differ from `count_messages` (which
    scales the exact total) by rounding.
    """

    def __init__(
        self,
        base: TokenCounter,
        *,
        ratio: float = 1.0,
        alpha: float = 0.3,
        min_ratio: float = 0.25,
        max_ratio: float = 4.0,
        model: str | None = None,
    ) -> None:
        if not 0.0 < alpha <= 1.0:
            raise ConfigurationError(f"alpha must be in (0, 1], got {alpha!r}")
        if not 0.0 < min_ratio <= max_ratio:
            raise ConfigurationError(f"need 0 < min_ratio <= max_ratio, got {min_ratio!r} and {max_ratio!r}")
        if not min_ratio <= ratio <= max_ratio:
            raise ConfigurationError(f"ratio {ratio!r} is outside [min_ratio, max_ratio] = [{min_ratio}, {max_ratio}]")
        self.base = base
        self.alpha = alpha
        self.min_ratio = min_ratio
        self.max_ratio = max_ratio
        self.model = model
        self.name = f"calibrated:{model}" if model else f"calibrated:{base.name}"
        self._ratio = float(ratio)
        self._samples = 0
        self._lock = threading.Lock()

    @property
    def ratio(self) -> float:
        """Current reported/estimated ratio applied to every count."""
        return self._ratio

    @property
    def samples(self) -> int:
        """How many provider reports have been folded into the ratio."""
        return self._samples

    def _scale(self, n: int) -> int:
        if n <= 0:
            return 0
        return max(1, round(n * self._ratio))

    def count_text(self, text: str) -> int:
        return self._scale(self.base.count_text(text))

    def count_message(self, message: Message) -> int:
        return self._scale(self.base.count_message(message))

    def count_messages(self, messages: Sequence[Message]) -> int:
        return self._scale(self.base.count_messages(messages))

    def calibrate(self, messages: Sequence[Message], reported_prompt_tokens: int) -> float:
        """Fold one provider report (``usage.prompt_tokens`` for exactly ``messages``) into the ratio; returns it."""
        if reported_prompt_tokens <= 0:
            raise ConfigurationError(
                f"reported_prompt_tokens must be positive, got {reported_prompt_tokens!r}; pass the prompt/input "
                "token count the provider returned for this request",
            )
        estimate = self.base.count_messages(messages)
        if estimate <= 0:
            raise ConfigurationError("cannot calibrate on an empty message list: the base estimate is 0 tokens")
        return self.calibrate_estimate(estimate, reported_prompt_tokens)

    def calibrate_estimate(self, estimate: int, reported_prompt_tokens: int) -> float:
        """Fold one report into the ratio given the *base* counter's estimate of the same request; returns the ratio.

        For requests that are more than a message list (tool schemas, a system text), the caller counts the whole
        request with `base` and hands the number here.
        """
        if reported_prompt_tokens <= 0 or estimate <= 0:
            raise ConfigurationError(
                f"need a positive estimate and report to calibrate, got estimate={estimate!r} and "
                f"reported_prompt_tokens={reported_prompt_tokens!r}",
            )
        observed = min(self.max_ratio, max(self.min_ratio, reported_prompt_tokens / estimate))
        with self._lock:
            if self._samples == 0:
                self._ratio = observed
            else:
                self._ratio += self.alpha * (observed - self._ratio)
            self._samples += 1
            ratio = self._ratio
        logger.debug("%s: estimate %d, reported %d -> ratio %.4f", self.name, estimate, reported_prompt_tokens, ratio)
        return ratio

    def __repr__(self) -> str:
        return f"CalibratedCounter(base={self.base.name!r}, ratio={self._ratio:.4f}, samples={self._samples})"


def feed_calibration(
    counters: Iterable[object],
    reported_prompt_tokens: int | None,
    estimate: Callable[[TokenCounter], int],
) -> int:
    """Fold a provider-reported prompt size into every calibrating counter among ``counters``; returns how many.

    Called by whatever sees a provider's usage for a request it built (the graph's `Agent`, the host adapters), so
    estimated counters (Anthropic, Gemini, ...) converge to the provider's real sizes without a manual step.
    ``estimate(base)`` counts that request with a counter's *base* counter. Counters that do not calibrate (the exact
    OpenAI ones) are skipped, each calibrating counter is fed once however often it is listed, and a missing or
    zero report does nothing.
    """
    if not reported_prompt_tokens or reported_prompt_tokens <= 0:
        return 0
    fed = 0
    seen: set[int] = set()
    for counter in counters:
        if not isinstance(counter, CalibratedCounter) or id(counter) in seen:
            continue
        seen.add(id(counter))
        base_estimate = estimate(counter.base)
        if base_estimate > 0:
            counter.calibrate_estimate(base_estimate, reported_prompt_tokens)
            fed += 1
    return fed
