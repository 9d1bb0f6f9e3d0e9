"""Stated prices used to turn token counts into an estimated input cost, and each provider's prompt-cache rules.

`Prices` is the simple model (cache reads at a tenth of fresh input, everything shared with the previous call
counts as read). `CacheRules` is what providers actually bill: a prefix is cached only from a minimum length and
in fixed increments, Anthropic charges a premium for writing the cache, and a cache entry expires when it is not
used for a while. `bill_calls` prices a strategy's calls under such rules; the numbers in `PROVIDER_CACHE_RULES`
are the providers' published rules for their current frontier models (check them against the price page of the
model you use and pass your own).
"""

from __future__ import annotations

from collections.abc import Iterable
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


@dataclass(frozen=True)
class CacheRules:
    """How one provider bills prompt caching (prices in dollars per million input tokens).

    ``min_prefix``: the shortest prompt prefix that is cached at all; ``increment``: cached lengths are rounded
    down to a multiple of it; ``read_multiplier`` / ``write_multiplier``: the price of a cached / newly cached
    token relative to fresh input (1.0: no premium); ``ttl_s``: how long an entry lives without being used.
    ``writes_whole_prompt``: every call marks its whole prompt for caching (Anthropic's breakpoint at the end of
    the prompt), so its uncached part is billed as a cache write.
    """

    name: str
    input_per_mtok: float
    read_multiplier: float
    write_multiplier: float
    min_prefix: int
    increment: int
    ttl_s: float
    writes_whole_prompt: bool = False


PROVIDER_CACHE_RULES: dict[str, CacheRules] = {
    # automatic caching from 1,024 tokens in 128-token steps, reads at a quarter (gpt-4.1 family), no write
    # premium; entries are kept 5-10 minutes of inactivity
    "openai": CacheRules("openai", 2.00, 0.25, 1.0, 1024, 128, 300.0),
    # explicit breakpoints, from 1,024 tokens (Sonnet/Opus), reads at a tenth, writes at 1.25x for the 5-minute
    # cache (refreshed on every hit)
    "anthropic": CacheRules("anthropic", 3.00, 0.10, 1.25, 1024, 1, 300.0, writes_whole_prompt=True),
    # implicit caching from 2,048 tokens (2.5 Pro), reads at a quarter, no write premium, minutes of lifetime
    "gemini": CacheRules("gemini", 1.25, 0.25, 1.0, 2048, 1, 300.0),
}


@dataclass(frozen=True)
class CacheBill:
    """What a sequence of calls cost under one provider's cache rules."""

    rules: CacheRules
    fresh_tokens: int
    read_tokens: int
    written_tokens: int

    @property
    def cost(self) -> float:
        r = self.rules
        units = self.fresh_tokens + self.read_tokens * r.read_multiplier + self.written_tokens * r.write_multiplier
        return units * r.input_per_mtok / 1_000_000


def bill_calls(
    calls: Iterable[tuple[int, int]], rules: CacheRules, *, seconds_between_calls: float = 20.0
) -> CacheBill:
    """Price calls given as ``(prompt_tokens, tokens_shared_with_the_previous_prompt)`` under ``rules``.

    A shared prefix is served from the cache only when it reaches ``min_prefix`` and the previous call was less
    than ``ttl_s`` ago, rounded down to ``increment``; with ``writes_whole_prompt`` the rest of a cacheable prompt
    is billed as a cache write, otherwise as fresh input.
    """
    fresh = read = written = 0
    expired = seconds_between_calls > rules.ttl_s
    for tokens, shared in calls:
        cached = 0 if expired or shared < rules.min_prefix else shared - shared % rules.increment
        cached = min(cached, tokens)
        read += cached
        rest = tokens - cached
        if rules.writes_whole_prompt and tokens >= rules.min_prefix:
            written += rest
        else:
            fresh += rest
    return CacheBill(rules, fresh, read, written)
