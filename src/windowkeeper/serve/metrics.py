"""The gateway's counters, served as Prometheus text on ``GET /metrics``.

Kept by hand (a few counters and one histogram): the process exposes only what the gateway itself does, and the
text format is four lines per series.
"""

from __future__ import annotations

import bisect
import threading
from collections import defaultdict
from collections.abc import Sequence

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)


class Metrics:
    """Counters per route; thread-safe (uvicorn runs one loop, but tests read from other threads)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.requests: defaultdict[tuple[str, str], int] = defaultdict(int)
        self.tokens_before: defaultdict[str, int] = defaultdict(int)
        self.tokens_after: defaultdict[str, int] = defaultdict(int)
        self.cuts: defaultdict[str, int] = defaultdict(int)
        self.summaries: defaultdict[str, int] = defaultdict(int)
        self.managed: defaultdict[str, int] = defaultdict(int)
        self.prefix_stable: defaultdict[str, int] = defaultdict(int)
        self.recall_calls: defaultdict[str, int] = defaultdict(int)
        self.fail_open: defaultdict[str, int] = defaultdict(int)
        self.unmanaged: defaultdict[str, int] = defaultdict(int)
        self.upstream_errors: defaultdict[str, int] = defaultdict(int)
        self.early_forwards: defaultdict[str, int] = defaultdict(int)
        self.early_misses: defaultdict[str, int] = defaultdict(int)
        self.early_recounts: defaultdict[str, int] = defaultdict(int)
        self.body_reuses: defaultdict[str, int] = defaultdict(int)
        self._buckets: defaultdict[str, list[int]] = defaultdict(lambda: [0] * (len(LATENCY_BUCKETS) + 1))
        self._latency_sum: defaultdict[str, float] = defaultdict(float)

    def request(self, route: str, outcome: str) -> None:
        with self._lock:
            self.requests[(route, outcome)] += 1

    def managed_call(self, route: str, before: int, after: int, *, cut: bool, summarized: bool, stable: bool) -> None:
        with self._lock:
            self.managed[route] += 1
            self.tokens_before[route] += before
            self.tokens_after[route] += after
            self.cuts[route] += cut
            self.summaries[route] += summarized
            self.prefix_stable[route] += stable

    def count(self, name: str, route: str) -> None:
        with self._lock:
            getattr(self, name)[route] += 1

    def upstream_latency(self, route: str, seconds: float) -> None:
        with self._lock:
            self._buckets[route][bisect.bisect_left(LATENCY_BUCKETS, seconds)] += 1
            self._latency_sum[route] += seconds

    def render(self, process: Sequence[tuple[str, str, str, int]] = ()) -> str:
        """The Prometheus text exposition of every series, after ``process``: series of the whole process (name,
        kind, help, value) that its owner reads when asked (`Threads.series`), not counted here."""
        out: list[str] = []

        def family(name: str, kind: str, help_text: str) -> None:
            out.append(f"# HELP {name} {help_text}")
            out.append(f"# TYPE {name} {kind}")

        for name, kind, help_text, value in process:
            family(name, kind, help_text)
            out.append(f"{name} {value}")

        with self._lock:
            family("windowkeeper_requests_total", "counter", "Requests by route and outcome.")
            for (route, outcome), n in sorted(self.requests.items()):
                out.append(f'windowkeeper_requests_total{{route="{route}",outcome="{outcome}"}} {n}')
            simple = (
                ("windowkeeper_managed_requests_total", self.managed, "Requests whose conversation was managed."),
                ("windowkeeper_tokens_before_total", self.tokens_before, "Prompt tokens as the client sent them."),
                ("windowkeeper_tokens_after_total", self.tokens_after, "Prompt tokens as sent upstream."),
                ("windowkeeper_cuts_total", self.cuts, "Requests whose message list the gateway changed."),
                ("windowkeeper_summaries_total", self.summaries, "Requests whose running summary changed."),
                ("windowkeeper_prefix_stable_total", self.prefix_stable, "Requests whose sent prefix was unchanged."),
                ("windowkeeper_recall_calls_total", self.recall_calls, "Recall tool calls answered by the gateway."),
                ("windowkeeper_fail_open_total", self.fail_open, "Requests forwarded unmanaged after an error."),
                (
                    "windowkeeper_unmanaged_total",
                    self.unmanaged,
                    "Requests forwarded unmanaged because their tools and system text alone fill the budget.",
                ),
                ("windowkeeper_upstream_errors_total", self.upstream_errors, "Upstream connection failures."),
                (
                    "windowkeeper_early_forwards_total",
                    self.early_forwards,
                    "Unchanged requests sent upstream and answered before the window's bookkeeping.",
                ),
                (
                    "windowkeeper_early_misses_total",
                    self.early_misses,
                    "Requests sent early that the window then changed (should stay 0).",
                ),
                (
                    "windowkeeper_early_recounts_total",
                    self.early_recounts,
                    "Requests sent early whose header count differs from the window's (a calibration moved).",
                ),
                (
                    "windowkeeper_body_reuses_total",
                    self.body_reuses,
                    "Request bodies parsed only where they continue the client's previous body.",
                ),
            )
            for name, series, help_text in simple:
                family(name, "counter", help_text)
                for route, n in sorted(series.items()):
                    out.append(f'{name}{{route="{route}"}} {n}')
            family("windowkeeper_prefix_stable_ratio", "gauge", "Share of managed requests that were prefix-stable.")
            for route, n in sorted(self.managed.items()):
                out.append(f'windowkeeper_prefix_stable_ratio{{route="{route}"}} {self.prefix_stable[route] / n:.4f}')
            family("windowkeeper_upstream_latency_seconds", "histogram", "Time to the upstream's response headers.")
            for route, buckets in sorted(self._buckets.items()):
                total = 0
                for bound, n in zip((*LATENCY_BUCKETS, float("inf")), buckets, strict=True):
                    total += n
                    le = "+Inf" if bound == float("inf") else repr(bound)
                    out.append(f'windowkeeper_upstream_latency_seconds_bucket{{route="{route}",le="{le}"}} {total}')
                out.append(
                    f'windowkeeper_upstream_latency_seconds_sum{{route="{route}"}} {self._latency_sum[route]:.6f}'
                )
                out.append(f'windowkeeper_upstream_latency_seconds_count{{route="{route}"}} {total}')
        return "\n".join(out) + "\n"
