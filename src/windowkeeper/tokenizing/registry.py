"""Which counter a model gets, and the process-wide shared counters.

Counters are shared so their per-message memo is shared too: every manager that counts the same history for the
same tokenizer hits one cache. OpenAI models get an exact counter for their encoding; any other model gets a
`CalibratedCounter` over ``o200k_base`` (one per model name, so the calibration learned from that model's reported
usage is reused by everything that talks to it).
"""

from __future__ import annotations

import logging
import threading

from .calibration import CalibratedCounter
from .counters import TiktokenCounter, TokenCounter
from .encodings import bare_model_name, encoding_name_for_model

logger = logging.getLogger(__name__)

_lock = threading.Lock()
_exact: dict[str, TiktokenCounter] = {}
_calibrated: dict[str, CalibratedCounter] = {}


def exact_counter(encoding_name: str) -> TiktokenCounter:
    """The shared exact counter of an OpenAI encoding."""
    counter = _exact.get(encoding_name)
    if counter is None:
        with _lock:
            counter = _exact.get(encoding_name)
            if counter is None:
                counter = _exact[encoding_name] = TiktokenCounter(encoding_name)
    return counter


def default_counter() -> TiktokenCounter:
    """The shared exact ``o200k_base`` counter (what every budget uses when none is given)."""
    return exact_counter("o200k_base")


def counter_for_model(model: str) -> TokenCounter:
    """An exact counter for OpenAI models, a calibrated ``o200k_base`` estimate for everything else."""
    encoding = encoding_name_for_model(model)
    if encoding is not None:
        return exact_counter(encoding)
    key = bare_model_name(model)
    counter = _calibrated.get(key)
    if counter is None:
        with _lock:
            counter = _calibrated.get(key)
            if counter is None:
                logger.debug("no exact tokenizer for %r: using a calibrated o200k_base estimate", model)
                counter = _calibrated[key] = CalibratedCounter(default_counter(), model=key)
    return counter
