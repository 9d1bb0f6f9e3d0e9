"""LLM layer: one small client interface, provider detection, and clients on the official SDKs.

Provider modules import their SDK only when a client is created, so ``import windowkeeper.llm`` works without
any optional extra installed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:
    from ..providers import PROVIDERS, normalize_provider
    from .client import LLMClient, LLMRequest, LLMResponse, complete
    from .detect import detect_provider
    from .factory import create_client
    from .scripted import ScriptedClient, ScriptedReply

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        ".client": ("LLMClient", "LLMRequest", "LLMResponse", "complete"),
        "..providers": ("PROVIDERS", "normalize_provider"),
        ".detect": ("detect_provider",),
        ".factory": ("create_client",),
        ".scripted": ("ScriptedClient", "ScriptedReply"),
    },
)

__all__ = [
    "PROVIDERS",
    "LLMClient",
    "LLMRequest",
    "LLMResponse",
    "ScriptedClient",
    "ScriptedReply",
    "complete",
    "create_client",
    "detect_provider",
    "normalize_provider",
]
