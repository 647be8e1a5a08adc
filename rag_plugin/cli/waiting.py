"""Waiting for ingestion jobs: when to look again, and which jobs to ask about each time."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

from rag_plugin.cli.errors import ApiError
from rag_plugin.cli.job import Job

__all__ = ["JobWatch", "Pacer"]


class Pacer:
    """Sleeps between looks: ``first`` seconds, then twice as long each time up to ``most``,
    never past the deadline. ``clock`` and ``sleep`` are the seams tests swap."""

    clock: Callable[[], float] = staticmethod(time.monotonic)
    sleep: Callable[[float], None] = staticmethod(time.sleep)
    first = 0.05
    most = 2.0

    def __init__(self, timeout: float | None = None, *, most: float | None = None) -> None:
        self.deadline = None if timeout is None else self.clock() + timeout
        self._most = self.most if most is None else most
        self._next = min(self.first, self._most)
        self._at_deadline = False

    def wait(self) -> bool:
        """Sleep until the next look; False, without sleeping, once the deadline has passed.

        The last look is at the deadline itself.
        """
        delay = self._next
        if self.deadline is not None:
            remaining = self.deadline - self.clock()
            if self._at_deadline or remaining <= 0:
                return False
            if delay >= remaining:
                delay, self._at_deadline = remaining, True
        self.sleep(delay)
        self._next = min(self._next * 2, self._most)
        return True


class JobWatch:
    """The jobs a run waits for, by id, in the order they were submitted.

    Each :meth:`poll` asks about every job last seen running and the oldest ``queued_polled``
    of the others: a portal runs one collection's jobs one after another, so asking about the
    whole queue every time would cost requests and tell nothing new.
    """

    queued_polled = 3

    def __init__(self, fetch: Callable[[str], Job]) -> None:
        self._fetch = fetch
        self.last_seen: dict[str, Job | None] = {}

    @property
    def pending(self) -> list[str]:
        """The ids of the jobs not seen to end yet, oldest first."""
        return list(self.last_seen)

    def add(self, job_ids: Iterable[str]) -> None:
        for job_id in job_ids:
            self.last_seen.setdefault(job_id, None)

    def poll(self) -> list[tuple[str, Job | ApiError]]:
        """Ask about the jobs worth asking about; those that ended (or vanished: 404) leave
        the watch and are returned. An answer that may be passing (no connection, 429, 5xx)
        is asked again next time; any other error is raised."""
        running = [job_id for job_id, job in self.last_seen.items() if _running(job)]
        others = [job_id for job_id, job in self.last_seen.items() if not _running(job)]
        ended: list[tuple[str, Job | ApiError]] = []
        for job_id in running + others[: self.queued_polled]:
            try:
                job = self._fetch(job_id)
            except ApiError as exc:
                if exc.status is None or exc.status == 429 or exc.status >= 500:
                    continue
                if exc.status != 404:
                    raise
                ended.append((job_id, exc))
                del self.last_seen[job_id]
                continue
            if job.ended:
                ended.append((job_id, job))
                del self.last_seen[job_id]
            else:
                self.last_seen[job_id] = job
        return ended


def _running(job: Job | None) -> bool:
    return job is not None and job.state == "running"
