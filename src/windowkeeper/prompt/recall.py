"""Which messages of a view are recall: history brought back for the call being made.

A recall message is an ordinary `Message` in ``state.context`` (placed right before the user message it serves)
whose ``metadata["windowkeeper"]`` is `RECALL_MARK`. It is sent where it stands and counted in the "recall" zone,
so a budget can tell what recall costs apart from the recent conversation.
"""

from __future__ import annotations

from ..messages import Message

RECALL_MARK = "recall"
MARK_KEY = "windowkeeper"


def is_recall(message: Message) -> bool:
    """Whether ``message`` was inserted by recall (``metadata["windowkeeper"] == "recall"``)."""
    return message.metadata.get(MARK_KEY) == RECALL_MARK
