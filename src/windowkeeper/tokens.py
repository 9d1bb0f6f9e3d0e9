"""Token accounting: the counters every budget, trigger and metric in windowkeeper is measured with.

The implementation lives in `windowkeeper.tokenizing` (offline encodings, media estimates, counters, calibration,
shared registry); this module is the stable import path.
"""

from __future__ import annotations

from .tokenizing.calibration import CalibratedCounter
from .tokenizing.counters import (
    MEMO_ENTRY_BYTES,
    MESSAGE_OVERHEAD,
    REPLY_PRIMING,
    ROLE_TOKENS,
    TOOL_CALL_OVERHEAD,
    ApproxCounter,
    CachingCounter,
    RunningCount,
    TiktokenCounter,
    TokenCounter,
    counting_once,
    message_cache_key,
    tool_arguments_json,
)
from .tokenizing.encodings import (
    OFFLINE_ENCODINGS,
    TokenizerDataError,
    encoding_name_for_model,
    get_offline_encoding,
)
from .tokenizing.media import base64_decoded_size, image_tokens_for_size, media_tokens
from .tokenizing.registry import counter_for_model, default_counter, exact_counter

__all__ = [
    "MEMO_ENTRY_BYTES",
    "MESSAGE_OVERHEAD",
    "OFFLINE_ENCODINGS",
    "REPLY_PRIMING",
    "ROLE_TOKENS",
    "TOOL_CALL_OVERHEAD",
    "ApproxCounter",
    "CachingCounter",
    "CalibratedCounter",
    "RunningCount",
    "TiktokenCounter",
    "TokenCounter",
    "counting_once",
    "TokenizerDataError",
    "base64_decoded_size",
    "counter_for_model",
    "default_counter",
    "encoding_name_for_model",
    "exact_counter",
    "get_offline_encoding",
    "image_tokens_for_size",
    "media_tokens",
    "message_cache_key",
    "tool_arguments_json",
]
