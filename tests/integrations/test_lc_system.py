"""The host's own system message reaches the model: its id, ``additional_kwargs`` and content blocks.

`WindowkeeperMiddleware` (LangChain ``create_agent``) and the LangGraph hook sent the system zone as a new
``SystemMessage`` of plain text, so a system prompt given as content blocks lost them (an Anthropic
``cache_control`` marking the prompt for the provider's cache among them). The caller's system message is handed
back as it is now, and once there is a summary, as a copy with the summary after its content.
"""

from __future__ import annotations

import asyncio
from typing import Any

from .runners import run_langchain
from .scenario import SYSTEM


def _system_parts(request: Any) -> Any:
    first = request.body["messages"][0]
    assert first["role"] == "system"
    return first["content"]


def test_a_system_prompt_of_content_blocks_reaches_the_model_with_them() -> None:
    from langchain_core.messages import SystemMessage

    block = {"type": "text", "text": SYSTEM, "cache_control": {"type": "ephemeral"}}
    prompt = SystemMessage(content=[block], additional_kwargs={"x_vendor": 1})
    requests, _ = asyncio.run(run_langchain(use_async=False, system_prompt=prompt))
    parts = [_system_parts(r) for r in requests]
    assert all(p[0] == block for p in parts)  # the caller's block, cache_control included, on every call
    summarized = [p for p in parts if len(p) == 2]
    assert summarized and all(p[1]["type"] == "text" and "Summary of the earlier" in p[1]["text"] for p in summarized)
    assert len(summarized) < len(parts)  # before the first summary, the caller's message alone
