"""The report of :mod:`bench.ingest_jobs`: each measurement summed over its rounds, and the
table ``bench/ingest.py --jobs`` prints."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from bench import measure

NEW_WORDS = "new_words"
REPORT_ROWS: dict[int | str, tuple[str, str]] = {
    NEW_WORDS: ("jobs_1_worker_new_words", "1 worker, new words"),
    1: ("jobs_1_worker", "jobs, 1 worker"),
    2: ("jobs_2_workers", "jobs, 2 workers"),
}
"""Each measurement's key in the report and its line in the table."""


def quantiles(samples: Sequence[float]) -> dict[str, float]:
    """p50 / p95 / p99 / max (:func:`bench.measure.quantiles`), rounded to 0.1."""
    return {key: round(value, 1) for key, value in measure.quantiles(samples).items()}


def summary(runs: list[dict[str, float]], chunks: int) -> dict[str, Any]:
    """One worker count's measurements, summed over the rounds."""
    jobs_s = sum(run["s"] for run in runs)
    model_s = sum(run["model_s"] for run in runs)
    return {
        "s": round(jobs_s / len(runs), 2),
        "model_s": round(model_s / len(runs), 2),
        "chunks_per_s": round(chunks * len(runs) / jobs_s, 1),
        "overhead": _ratio(runs, "s", "model_s"),
        "overheads": [_ratio([run], "s", "model_s") for run in runs],
        "submit_s": round(statistics.mean(run["submit_s"] for run in runs), 2),
        "first_start_s": round(statistics.mean(run["first_start_s"] for run in runs), 3),
        "in_jobs_s": round(statistics.mean(run["in_jobs_s"] for run in runs), 2),
        "model_in_jobs_s": round(statistics.mean(run["model_in_jobs_s"] for run in runs), 2),
        "beyond_model_in_jobs": _ratio(runs, "in_jobs_s", "model_in_jobs_s"),
        "beyonds": [_ratio([run], "in_jobs_s", "model_in_jobs_s") for run in runs],
    }


def _ratio(runs: list[dict[str, float]], measured: str, base: str) -> float:
    """(Σ measured − Σ base) / Σ base over ``runs``, to 0.1 %."""
    total = sum(run[base] for run in runs)
    return round((sum(run[measured] for run in runs) - total) / total, 3)


def table(report: dict[str, Any]) -> str:
    """The report as a readable table."""
    lines = [
        f"{report['documents']} documents, {report['documents_per_job']} per job: "
        f"{report['jobs']} jobs, {report['chunks']} chunks "
        f"({report['distinct_texts_embedded']} distinct texts embedded), "
        f"{report['rounds']} round(s), each worker running {report['worker_concurrency']} "
        "job(s) at once",
        "embedding threads per worker: "
        + ", ".join(
            f"{workers} worker(s) {threads or 'a thread per core'}"
            for workers, threads in report["embedding_threads_per_worker"].items()
        ),
        "",
        f"{'':22} {'seconds':>8} {'chunks/s':>9} {'model s':>8} {'overhead':>9} "
        f"{'submit s':>9} {'1st start':>9} {'in jobs s':>9} {'model':>6} {'beyond':>7}",
    ]
    bare = report["bare_model"]
    lines.append(
        f"{'bare model':22} {bare['s']:8.2f} {bare['chunks_per_s']:9.1f} {'':8} {'':9} "
        f"   passes: {', '.join(f'{s:.2f}' for s in bare['passes_s'])}"
    )
    for key, name in REPORT_ROWS.values():
        if key not in report:  # one round has no steady-state measurement of one worker
            continue
        row = report[key]
        lines.append(
            f"{name:22} {row['s']:8.2f} {row['chunks_per_s']:9.1f} {row['model_s']:8.2f} "
            f"{100 * row['overhead']:8.1f}% {row['submit_s']:9.2f} {row['first_start_s']:9.3f} "
            f"{row['in_jobs_s']:9.2f} {row['model_in_jobs_s']:6.2f} "
            f"{100 * row['beyond_model_in_jobs']:6.1f}%   rounds: "
            + ", ".join(f"{100 * overhead:.1f}%" for overhead in row["overheads"])
            + "; beyond: "
            + ", ".join(f"{100 * beyond:.1f}%" for beyond in row["beyonds"])
        )
    lines += ["", f"{'submit latency, ms':22} {'n':>4} {'p50':>7} {'p95':>7} {'p99':>7} {'max':>7}"]
    for label, q in report["submit_latency_ms"].items():
        lines.append(
            f"{label:22} {q['n']:4d} {q['p50']:7.1f} {q['p95']:7.1f} {q['p99']:7.1f} "
            f"{q['max']:7.1f}"
        )
    return "\n".join(lines)
