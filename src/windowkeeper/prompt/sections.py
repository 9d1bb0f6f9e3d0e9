"""The texts of the system zone: the headers, how sections are joined, and the stable message that carries them.

Every provider gets the system zone as one text (OpenAI: the first system message or ``instructions``,
Anthropic: ``system``, Gemini: ``system_instruction``). It is built here and nowhere else, from these parts in
this order: the agent's system prompt, the text of each system message of the state, the running summary under
`SUMMARY_HEADER`, the scratchpad under `SCRATCHPAD_HEADER`. The order puts what changes least first, so a provider
prompt cache keeps the longest prefix when the summary or the scratchpad changes. The summary and the scratchpad
are labelled so a model never takes them for something a person said or for instructions.
"""

from __future__ import annotations

import hashlib
import itertools
import operator
from collections.abc import Iterable, Sequence

from ..llm.formats._common import system_text
from ..messages import Message

SUMMARY_HEADER = "Summary of the earlier conversation (older turns were condensed; treat as background):"
SCRATCHPAD_HEADER = "Scratchpad (working notes kept across turns):"
SECTION_SEPARATOR = "\n\n"


def stable_id(kind: str, text: str) -> str:
    """An id derived from the text, so an unchanged section is byte-identical and its count stays memoized."""
    digest = hashlib.blake2b(text.encode("utf-8"), digest_size=8).hexdigest()
    return f"windowkeeper:{kind}:{digest}"


def summary_section(summary: str | None) -> str | None:
    """The running summary under its header, or None when there is no summary (blank counts as none)."""
    if not summary or not summary.strip():
        return None
    return f"{SUMMARY_HEADER}\n{summary.strip()}"


def scratchpad_section(scratchpad: str | None) -> str | None:
    """The scratchpad notes under their header, or None when there are none (blank counts as none)."""
    if not scratchpad or not scratchpad.strip():
        return None
    return f"{SCRATCHPAD_HEADER}\n{scratchpad.strip()}"


def system_message_text(message: Message, *, index: int | None = None) -> str:
    """The text of a system message as it goes into the system zone, read the one way every format writes it
    (`windowkeeper.llm.formats`): its text blocks and the text of its error blocks, in order; citations are
    metadata and left out.

    A provider takes system text only, so any other block (an image, a tool call) raises `FormatError` naming
    the block (and ``index``, the message's position, when given) rather than being dropped unseen: the prompt
    that is counted is the prompt that is sent, and neither silently loses what the caller put there.
    """
    return system_text(message, "any provider", index=index)


def system_flags(messages: Sequence[Message]) -> list[bool]:
    """Whether each of ``messages`` is a system message, computed in C (`map` of the role and ``==``): the prompt
    assembly and the writers' system lead split a whole view this way on every call."""
    return list(map(operator.eq, map(_ROLE, messages), itertools.repeat("system")))


_ROLE = operator.attrgetter("role")


def join_sections(sections: Iterable[str | None]) -> str | None:
    """The non-empty sections joined by `SECTION_SEPARATOR`, or None when there are none."""
    text = SECTION_SEPARATOR.join(s for s in sections if s)
    return text or None


def system_message(text: str) -> Message:
    """``text`` as the one system message a flat message list starts with (stable id, no timestamp)."""
    return Message.text_message(text, role="system", message_id=stable_id("system", text), timestamp=None)
