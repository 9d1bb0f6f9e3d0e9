"""Stated prices used to turn token counts into an estimated input cost."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Prices:
    """Input prices in dollars per million tokens.

    The defaults are a typical frontier-model list price with cache reads billed at a tenth of fresh input, the
    discount Anthropic and recent OpenAI models give; cache writes are billed as fresh input. Pass your own to
    match a provider.
    """

    input_per_mtok: float = 3.00
    cached_per_mtok: float = 0.30
    label: str = "$3.00/M input, $0.30/M cached"

    def cost(self, fresh_tokens: int, cached_tokens: int = 0) -> float:
        return (fresh_tokens * self.input_per_mtok + cached_tokens * self.cached_per_mtok) / 1_000_000


__all__ = ["Prices"]
