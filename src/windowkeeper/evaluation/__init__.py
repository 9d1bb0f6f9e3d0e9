"""Replaying sessions through context strategies and measuring them (tokens, cache hits, cost, validity, facts).

This sits at the CLI layer: it drives the context managers and the memory like an agent would, one model call at
a time, so the CLI and the benchmarks report the same numbers.
"""
