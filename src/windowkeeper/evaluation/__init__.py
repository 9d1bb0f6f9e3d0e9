"""Replaying sessions through context strategies and measuring them (tokens, cache hits, cost, validity, facts).

This sits at the CLI layer: it drives the context managers and the memory like an agent would, one model call at
a time, so the CLI and the benchmarks report the same numbers.
"""

from .lineup import standard_lineup
from .loaders import load_trajectories
from .pricing import Prices
from .replay import CallRecord, ReplayReport, StrategyReport, replay
from .strategies import FullHistory, ManagedStrategy, MemoryStrategy, SlidingWindow, Strategy, View

__all__ = [
    "CallRecord",
    "FullHistory",
    "ManagedStrategy",
    "MemoryStrategy",
    "Prices",
    "ReplayReport",
    "SlidingWindow",
    "Strategy",
    "StrategyReport",
    "View",
    "load_trajectories",
    "replay",
    "standard_lineup",
]
