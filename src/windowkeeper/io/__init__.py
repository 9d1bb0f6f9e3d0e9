"""Reading conversation files: every supported shape, detected, with size, encoding and nesting limits.

`read_conversations` and `read_conversation` are the entry points; errors are `ConversationFileError` (a
`windowkeeper.errors.FormatError`) listing every problem with its index.
"""

from .reader import (
    Conversation,
    InputFormat,
    detect_format,
    parse_conversations,
    read_collection,
    read_conversation,
    read_conversations,
)
from .source import DEFAULT_MAX_BYTES, DEFAULT_TIMEOUT, MAX_DEPTH, ConversationFileError, read_text

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_TIMEOUT",
    "MAX_DEPTH",
    "Conversation",
    "ConversationFileError",
    "InputFormat",
    "detect_format",
    "parse_conversations",
    "read_collection",
    "read_conversation",
    "read_conversations",
    "read_text",
]
