"""Which messages of a view are recall: history brought back for the call being made.

A recall message is an ordinary `Message` in ``state.context`` (placed right before the user message it serves)
whose ``metadata["windowkeeper"]`` is `RECALL_MARK`. It is sent where it stands and counted in the "recall" zone,
so a budget can tell what recall costs apart from the recent conversation.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Iterator, Sequence

from ..messages import Message

RECALL_MARK = "recall"
MARK_KEY = "windowkeeper"


def is_recall(message: Message) -> bool:
    """Whether ``message`` was inserted by recall (``metadata["windowkeeper"] == "recall"``)."""
    return message.metadata.get(MARK_KEY) == RECALL_MARK


_METADATA = operator.attrgetter("metadata")
_MARK_OF = operator.methodcaller("get", MARK_KEY)


def recall_flags(messages: Sequence[Message]) -> Iterator[bool]:
    """`is_recall` of each of ``messages``, computed in C (`map` of attribute, ``get`` and ``==``): these scans
    run over a whole view on every call, where a Python call per message was most of their cost."""
    return map(operator.eq, map(_MARK_OF, map(_METADATA, messages)), itertools.repeat(RECALL_MARK))


def recall_notes(messages: Sequence[Message]) -> list[Message]:
    """The recall messages among ``messages``, in order (`recall_flags`)."""
    return list(itertools.compress(messages, recall_flags(messages)))
