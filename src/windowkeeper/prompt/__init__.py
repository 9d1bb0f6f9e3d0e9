"""Prompt assembly: zones (system prompt and tools, summary, scratchpad, recall, recent, reserve) -> the request.

One module turns a state into what a model receives and counts each zone, so that what every budget counts is
what is sent. It sits below `windowkeeper.context` and `windowkeeper.graph` and imports neither.
"""

from .assemble import ZONES, AssembledPrompt, assemble, assemble_messages
from .cost import SystemCost, count_request, summary_tokens, system_costs, system_text_tokens, tool_schema_tokens
from .recall import MARK_KEY, RECALL_MARK, is_recall
from .sections import (
    SCRATCHPAD_HEADER,
    SECTION_SEPARATOR,
    SUMMARY_HEADER,
    join_sections,
    scratchpad_section,
    stable_id,
    summary_section,
    system_message,
    system_message_text,
)

__all__ = [
    "MARK_KEY",
    "RECALL_MARK",
    "SCRATCHPAD_HEADER",
    "SECTION_SEPARATOR",
    "SUMMARY_HEADER",
    "ZONES",
    "AssembledPrompt",
    "SystemCost",
    "assemble",
    "assemble_messages",
    "count_request",
    "is_recall",
    "join_sections",
    "scratchpad_section",
    "stable_id",
    "summary_section",
    "summary_tokens",
    "system_costs",
    "system_message",
    "system_message_text",
    "system_text_tokens",
    "tool_schema_tokens",
]
