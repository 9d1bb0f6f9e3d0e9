"""Reference import path: ``windowkeeper.core.state.message_block``."""

from ...blocks import *  # noqa: F403
from ...blocks import __all__ as __all__
