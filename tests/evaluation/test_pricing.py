"""Provider cache rules: minimum prefix, increments, write premium and expiry change what a call costs."""

from __future__ import annotations

import pytest

from windowkeeper.evaluation.pricing import PROVIDER_CACHE_RULES, CacheRules, bill_calls

RULES = CacheRules("test", 1.0, 0.1, 1.25, 1000, 100, 300.0, writes_whole_prompt=True)


def test_a_shared_prefix_below_the_minimum_is_not_cached() -> None:
    bill = bill_calls([(900, 0), (950, 900)], RULES)
    assert bill.read_tokens == 0 and bill.written_tokens == 0 and bill.fresh_tokens == 1850


def test_cached_length_is_rounded_down_and_the_rest_is_a_cache_write() -> None:
    bill = bill_calls([(1500, 0), (1600, 1550)], RULES)
    assert bill.read_tokens == 1500
    assert bill.written_tokens == 1500 + 100
    assert bill.cost == pytest.approx((1500 * 0.1 + 1600 * 1.25) / 1_000_000)


def test_expired_entries_are_never_read() -> None:
    bill = bill_calls([(2000, 0), (2100, 2000)], RULES, seconds_between_calls=301)
    assert bill.read_tokens == 0 and bill.written_tokens == 4100


def test_providers_without_a_write_premium_bill_the_rest_as_fresh_input() -> None:
    openai = PROVIDER_CACHE_RULES["openai"]
    bill = bill_calls([(3000, 0), (3100, 3000)], openai)
    assert bill.written_tokens == 0
    assert bill.read_tokens == 3000 - 3000 % openai.increment
    assert bill.fresh_tokens == 3000 + 3100 - bill.read_tokens
    assert PROVIDER_CACHE_RULES["anthropic"].write_multiplier > 1
