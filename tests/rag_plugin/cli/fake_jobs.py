"""The fake portal's ingestion jobs: the REST contract's job object, its routes and its
state machine.

A job moves one step each time someone reads it (``GET /api/rag/jobs/<id>``, or a listing of
the owner's jobs), the way time passes on the real portal between two polls:

    queued → running/parsing → running/embedding → running/writing → succeeded

Like the portal, which locks a collection while one of its jobs runs, a job starts only when
no other job of the same user and collection is running and none older is queued. A job
holding a source named in ``FakeJobQueue.errors`` fails instead of writing; a job asked to
cancel stops at its next step (a stage boundary), or at once while still queued.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

STATES = ("queued", "running", "succeeded", "failed", "cancelled")
ENDED = frozenset({"succeeded", "failed", "cancelled"})
MAX_ATTEMPTS = 3
EPOCH = datetime(2025, 1, 1, tzinfo=UTC)


def job_id(number: int) -> str:
    """The fake's job ids: valid UUIDs, numbered in order, readable in assertions."""
    return f"00000000-0000-4000-8000-{number:012d}"


def timestamp(tick: int) -> str:
    """The fake's clock: ``tick`` seconds after 2025-01-01, written as DRF writes times."""
    return (EPOCH + timedelta(seconds=tick)).isoformat().replace("+00:00", "Z")


@dataclass
class FakeJob:
    """One job as the fake keeps it: its input and everything the contract reports."""

    number: int
    user: str
    collection: str
    shared: bool
    kind: str
    documents: list[dict[str, Any]]
    chunking_strategy: str | None
    reason: str
    created_at: str
    state: str = "queued"
    stage: str | None = None
    done: int = 0
    total: int = 0
    attempts: int = 0
    cancel_requested: bool = False
    results: list[dict[str, Any]] = field(default_factory=list)
    error: dict[str, str] | None = None
    started_at: str | None = None
    finished_at: str | None = None
    reads: int = 0

    @property
    def id(self) -> str:
        return job_id(self.number)

    @property
    def ended(self) -> bool:
        return self.state in ENDED

    def accepted(self) -> dict[str, Any]:
        """The 202 body of the ingest request that made the job."""
        return {
            "job_id": self.id,
            "status_url": f"/api/rag/jobs/{self.id}",
            "state": self.state,
            "reason": self.reason,
        }

    def json(self) -> dict[str, Any]:
        """The contract's JOB object."""
        return {
            "id": self.id,
            "state": self.state,
            "stage": self.stage,
            "progress": {"done": self.done, "total": self.total},
            "collection": self.collection,
            "shared": self.shared,
            "kind": self.kind,
            "user": self.user,
            "documents": len(self.documents),
            "input_bytes": input_bytes(self.documents),
            "attempts": self.attempts,
            "max_attempts": MAX_ATTEMPTS,
            "cancel_requested": self.cancel_requested,
            "results": self.results,
            "document_ids": [result["document_id"] for result in self.results],
            "error": self.error,
            "created_at": self.created_at,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
        }

    def retry(self) -> None:
        """Back to the queue with a fresh count of attempts, as the portal's retry does."""
        self.state, self.stage, self.done, self.total = "queued", None, 0, 0
        self.attempts, self.cancel_requested, self.error = 0, False, None
        self.results, self.started_at, self.finished_at = [], None, None


def input_bytes(documents: list[dict[str, Any]]) -> int:
    return sum(len(str(document.get("content", "")).encode()) for document in documents)


Answer = tuple[int, Any]
Writer = Callable[[str, dict[str, Any], "str | None"], dict[str, Any]]


@dataclass
class FakeJobQueue:
    """The job routes and the jobs behind them; ``write`` stores one document of a job that
    succeeded and returns its entry in the job's results."""

    write: Writer
    # Every job, in the order they were made; the first has the id job_id(1).
    jobs: list[FakeJob] = field(default_factory=list)
    # Sources whose jobs fail with (code, message) instead of writing.
    errors: dict[str, tuple[str, str]] = field(default_factory=dict)
    # While True no job moves, as when no worker runs.
    hold: bool = False
    clock: int = 0

    def submit(self, user: str, body: Any, documents: list[dict[str, Any]], kind: str) -> Answer:
        """``202`` for an ingest request that became a job."""
        self.clock += 1
        job = FakeJob(
            number=len(self.jobs) + 1,
            user=user,
            collection=body["collection"],
            shared=body.get("shared") is True,
            kind=kind,
            documents=[dict(document) for document in documents],
            chunking_strategy=body.get("chunking_strategy"),
            reason="requested" if body.get("async") is True else "size",
            created_at=timestamp(self.clock),
        )
        self.jobs.append(job)
        return 202, job.accepted()

    def listing(self, user: str, query: dict[str, str]) -> Answer:
        """``GET /api/rag/jobs``: newest first, filtered; a listing is a read, so every job of
        the caller moves."""
        try:
            limit, offset = int(query.get("limit", "50")), int(query.get("offset", "0"))
        except ValueError:
            limit = offset = -1
        state, shared = query.get("state"), query.get("shared")
        valid = state in (None, *STATES) and shared in (None, "true", "false")
        if not valid or not 1 <= limit <= 1000 or offset < 0:
            return 400, {"error": f"Invalid input: {query}", "code": "INVALID_INPUT"}
        mine = [job for job in reversed(self.jobs) if job.user == user]
        for job in mine:
            self.advance(job)
        matching = [
            job
            for job in mine
            if state in (None, job.state)
            and query.get("collection") in (None, job.collection)
            and shared in (None, "true" if job.shared else "false")
        ]
        return 200, {
            "jobs": [job.json() for job in matching[offset : offset + limit]],
            "total": len(matching),
            "limit": limit,
            "offset": offset,
        }

    def route(self, method: str, user: str, key: str, action: str | None) -> Answer:
        """``GET /api/rag/jobs/<id>`` and ``POST .../cancel`` or ``.../retry``; someone
        else's job is missing (404), never forbidden."""
        job = next((job for job in self.jobs if job.id == key and job.user == user), None)
        routes = {("GET", None), ("POST", "cancel"), ("POST", "retry")}
        if job is None or (method, action) not in routes:
            error = f"Job '{key}' not found; GET /api/rag/jobs lists the jobs you can see."
            return 404, {"error": error, "code": "NOT_FOUND"}
        if action is None:
            self.advance(job)
            return 200, job.json()
        if action == "cancel":
            if job.ended:
                return _conflict(
                    f"Job '{job.id}' has already ended ({job.state}); only a queued or running "
                    "job can be cancelled."
                )
            job.cancel_requested = True
            if job.state == "queued":
                self._end(job, "cancelled")
            return 200, job.json()
        if job.state not in ("failed", "cancelled"):
            return _conflict(
                f"Job '{job.id}' is {job.state}; only a failed or cancelled job can be retried."
            )
        job.retry()
        return 202, job.json()

    def advance(self, job: FakeJob) -> None:
        """One step of the job's state machine (see the module's docstring)."""
        job.reads += 1
        if job.ended or self.hold or (job.state == "queued" and self._waits_for_lock(job)):
            return
        self.clock += 1
        if job.state == "queued":
            job.state, job.stage, job.attempts = "running", "parsing", job.attempts + 1
            job.done, job.total, job.started_at = 0, len(job.documents), timestamp(self.clock)
        elif job.cancel_requested:
            self._end(job, "cancelled")
        elif job.stage == "parsing":
            job.stage, job.done = "embedding", len(job.documents)
        elif job.stage == "embedding":
            failing = [
                (position, document["source"])
                for position, document in enumerate(job.documents)
                if document.get("source") in self.errors
            ]
            if failing:
                position, source = failing[0]
                code, message = self.errors[source]
                # A document the server cannot take is named by its place in a batch.
                named = code == "INVALID_INPUT" and job.kind == "batch"
                prefix = f"documents[{position}]: " if named else ""
                self._end(job, "failed", {"code": code, "message": prefix + message})
            else:
                job.stage, job.done = "writing", 0
        else:
            job.results = [
                self.write(job.collection, document, job.chunking_strategy)
                for document in job.documents
            ]
            job.done = len(job.documents)
            self._end(job, "succeeded")

    def _waits_for_lock(self, job: FakeJob) -> bool:
        """Whether another job of the same collection runs now, or is queued before it."""
        key = (job.user, job.collection, job.shared)
        return any(
            (other.user, other.collection, other.shared) == key
            and (
                other.state == "running" or (other.state == "queued" and other.number < job.number)
            )
            for other in self.jobs
            if other is not job
        )

    def _end(self, job: FakeJob, state: str, error: dict[str, str] | None = None) -> None:
        self.clock += 1
        job.state, job.stage, job.error, job.finished_at = state, None, error, timestamp(self.clock)


def _conflict(message: str) -> Answer:
    return 409, {"error": message, "code": "CONFLICT"}
