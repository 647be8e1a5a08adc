"""The ingestion worker process (``manage.py rag_worker``): procrastinate's worker, kept alive.

Around procrastinate's own worker this adds the two things a durable queue needs and the
library leaves to its user:

- **Dead workers' jobs run again.** Every worker writes a heartbeat; a job whose worker has
  been silent for ``RAG_JOB_STALLED_AFTER_S`` (killed, its machine gone) is put back in the
  queue by whichever worker notices first (procrastinate's ``get_stalled_jobs`` and
  ``retry_job``, the recipe of its documentation, run here every few seconds).
- **The database going away does not end the process.** The worker's connections are checked
  before use (procrastinate's pool does); when the database fails under it, the worker stops,
  waits and starts again with a new registration (its old one stops beating, so the job it
  held runs again).

The embedding model is loaded once per process and run at its largest input shape before the
first job, so no job pays for either.
Then what the process has built so far (Django, the model, their imports: about 220,000
objects) is moved out of the garbage collector's sight (:func:`portal.heap.settle_heap`).
"""

from __future__ import annotations

import asyncio
import logging
import os
from typing import Any

import psycopg
from django.conf import settings
from procrastinate import exceptions as procrastinate_errors
from procrastinate import psycopg_connector
from procrastinate.contrib.django import app
from procrastinate.contrib.django.utils import connector_params
from procrastinate.worker import Worker

from portal.heap import settle_heap
from portal.rag.job_runner import TASK_NAME

logger = logging.getLogger("portal.rag.worker")

RESTART_DELAY_S = 2.0
"""Seconds between a worker stopped by a database failure and its next start."""


def _setting(name: str) -> float:
    return float(settings.RAG_JOBS[name])


def warm_up() -> None:
    """Load the deployment's embedding model and take its memory now, not in the first jobs."""
    from portal.rag.runtime import warm_embedder

    warm_embedder()


async def sweep_stalled(interval: float) -> None:
    """Put back in the queue the jobs of workers whose heartbeat stopped, every ``interval``."""
    stalled_after = _setting("STALLED_AFTER_S")
    while True:
        await asyncio.sleep(interval)
        try:
            jobs = await app.job_manager.get_stalled_jobs(
                task_name=TASK_NAME, seconds_since_heartbeat=stalled_after
            )
            for job in jobs:
                try:
                    await app.job_manager.retry_job(job)
                except procrastinate_errors.ConnectorException:
                    continue  # another worker put it back first
                logger.warning(
                    "rag.job_requeued",
                    extra={"event": "rag.job_requeued", "queue_job": job.id},
                )
        except (procrastinate_errors.ConnectorException, psycopg.Error, OSError) as exc:
            logger.warning("stalled-job sweep failed (%s); next in %s s", exc, interval)


HEARTBEAT_AGE = (
    "SELECT extract(epoch FROM now() - last_heartbeat)::float AS age "
    "FROM procrastinate_workers WHERE id = %(worker_id)s"
)


async def guard_heartbeat(worker: Worker, interval: float, stalled_after: float) -> None:
    """Return once this worker's heartbeat has stopped being written (or its registration
    was pruned by another worker), so that it stops and starts again.

    procrastinate writes the heartbeat in a side task, and only watches its side tasks while
    its periodic-task scheduler runs — with no periodic task, never. A heartbeat task killed
    by a long database failure would leave a worker that runs jobs while the others take it
    for dead and run its job again.
    """
    while True:
        await asyncio.sleep(interval)
        if worker.worker_id is None:
            continue
        try:
            rows = await app.connector.execute_query_all_async(
                HEARTBEAT_AGE, worker_id=worker.worker_id
            )
        except (procrastinate_errors.ConnectorException, psycopg.Error, OSError):
            continue  # the database is away; fetching jobs fails and restarts the worker
        age = rows[0]["age"] if rows else None
        if age is None or age > stalled_after / 2:
            logger.warning(
                "worker %s: heartbeat %s; stopping to start again",
                worker.worker_id,
                "pruned" if age is None else f"{age:.1f} s old",
            )
            return


async def serve(*, concurrency: int, burst: bool = False) -> None:
    """Run jobs until stopped (SIGINT/SIGTERM); with ``burst``, until the queue is empty."""
    heartbeat = _setting("HEARTBEAT_S")
    stalled_after = _setting("STALLED_AFTER_S")
    connector = psycopg_connector.PsycopgConnector(
        kwargs=connector_params(app.connector.alias),  # type: ignore[attr-defined]
        min_size=1,
        max_size=concurrency + 4,
    )
    name = f"rag-worker-{os.getpid()}"
    with app.replace_connector(connector) as worker_app:
        worker_app.perform_import_paths()  # type: ignore[no-untyped-call]
        while True:
            worker = Worker(
                worker_app,
                name=name,
                concurrency=concurrency,
                wait=not burst,
                update_heartbeat_interval=heartbeat,
                stalled_worker_timeout=stalled_after,
                listen_notify=True,
                fetch_job_polling_interval=_setting("POLL_S"),
            )
            try:
                async with worker_app.open_async():
                    if not await _run_guarded(worker, heartbeat, stalled_after):
                        return
            except (procrastinate_errors.ConnectorException, psycopg.Error, OSError) as exc:
                logger.warning(
                    "worker stopped by a database failure (%s); starting again in %s s",
                    exc,
                    RESTART_DELAY_S,
                )
            await asyncio.sleep(RESTART_DELAY_S)


async def _run_guarded(worker: Worker, heartbeat: float, stalled_after: float) -> bool:
    """Run ``worker`` with the stalled-job sweeper and the heartbeat guard beside it; True
    when the guard stopped it (start again), False when it was asked to stop."""
    run = asyncio.create_task(worker.run())  # type: ignore[no-untyped-call]
    sweeper = asyncio.create_task(sweep_stalled(max(heartbeat, 1.0)))
    guard = asyncio.create_task(guard_heartbeat(worker, max(heartbeat, 1.0), stalled_after))
    try:
        await asyncio.wait({run, guard}, return_when=asyncio.FIRST_COMPLETED)
        restart = guard.done() and not run.done()
        if restart:
            worker.stop()  # type: ignore[no-untyped-call]
        await run  # re-raises what stopped it
        return restart
    finally:
        sweeper.cancel()
        guard.cancel()


def run(*, concurrency: int, burst: bool = False, **_: Any) -> None:
    """Load the model, then serve jobs (the management command's body)."""
    warm_up()
    settle_heap()
    asyncio.run(serve(concurrency=concurrency, burst=burst))
