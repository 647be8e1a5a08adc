"""Latency and memory as the query benches measure them: the time of each call in ms,
summarised as percentiles, and the resident memory of the process.

bench/store_query.py reports p50 / p95 (:func:`percentiles`, of :func:`timed` calls);
bench/real_query.py and the benches built on its corpus p50 / p95 / p99 / max
(:func:`quantiles`). The two take p95 at different ranks (the index truncated, or rounded): each
bench keeps its own, so its figures stay comparable with those it has published.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence


def percentiles(samples: Sequence[float]) -> tuple[float, float]:
    """(p50, p95) of ``samples``."""
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[int(0.95 * (len(ordered) - 1))]


def timed(run: Callable[[int], object], count: int) -> tuple[float, float]:
    """(p50, p95) in ms of ``run(i)`` for i in 0 .. count - 1, one call at a time."""
    samples = []
    for i in range(count):
        started = time.perf_counter()
        run(i)
        samples.append((time.perf_counter() - started) * 1000)
    return percentiles(samples)


def rss_mib() -> float:
    """This process's resident memory (VmRSS) in MiB."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def quantiles(samples: Sequence[float]) -> dict[str, float]:
    """p50, p95, p99 and max of ``samples``."""
    ordered = sorted(samples)

    def at(q: float) -> float:
        return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]

    return {
        "p50": statistics.median(ordered),
        "p95": at(0.95),
        "p99": at(0.99),
        "max": ordered[-1],
    }
