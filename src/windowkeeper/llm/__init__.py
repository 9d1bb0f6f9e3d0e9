"""LLM layer: one small client interface, provider detection, and clients on the official SDKs.

Provider modules import their SDK only when a client is created, so ``import windowkeeper.llm`` works without
any optional extra installed.
"""

from .client import LLMClient, LLMRequest, LLMResponse, complete
from .detect import PROVIDERS, detect_provider, normalize_provider
from .factory import create_client
from .scripted import ScriptedClient, ScriptedReply

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
