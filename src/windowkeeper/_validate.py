"""Settings checks shared by every layer, so one setting is rejected the same way wherever it is passed.

``bool`` is an ``int`` subclass, and ``True`` slipping through as ``1`` hides a mistaken argument, so every check
rejects it. The message names the setting and the value it got.
"""

from __future__ import annotations

import math
from typing import TypeGuard

from .errors import ConfigurationError


def is_int(value: object) -> TypeGuard[int]:
    """An ``int`` that is not a ``bool``."""
    return isinstance(value, int) and not isinstance(value, bool)


def check_int(name: str, value: object, *, minimum: int, hint: str = "") -> int:
    """``value`` if it is an int >= ``minimum``; ``hint`` (e.g. ``" or None"``) names what else is accepted."""
    if not is_int(value) or value < minimum:
        raise ConfigurationError(f"{name} must be an integer >= {minimum}{hint}, got {value!r}")
    return value


def check_positive_int(name: str, value: object, *, hint: str = "") -> int:
    """``value`` if it is an int > 0; ``hint`` (e.g. ``" or None to disable it"``) names what else is accepted."""
    if not is_int(value) or value <= 0:
        raise ConfigurationError(f"{name} must be a positive integer{hint}, got {value!r}")
    return value


def check_timeout(name: str, value: object) -> float:
    """``value`` as seconds if it is a finite number > 0.

    ``nan`` compares false with everything, so a naive ``> 0`` check lets it through and every wait then ends at
    once; ``inf`` is no timeout at all. Both are rejected, like zero, negatives, bools and non-numbers.
    """
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
        raise ConfigurationError(f"{name} must be a finite number of seconds > 0, got {value!r}")
    return float(value)


__all__ = ["check_int", "check_positive_int", "check_timeout", "is_int"]
