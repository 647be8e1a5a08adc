"""What a worker does with an ingestion job (SPEC J2): claim it, ingest, record how it ended.

The queue is procrastinate's (its tables in the public schema); this module holds its one task.
A queue job carries only the tenant schema and the job's id: everything else — the documents,
the state users see, the attempts — is the tenant's :class:`~tenants.models.IngestJob` row.

Every change to the row is conditional: a run claims the job by writing a fresh ``run_token``,
and its progress and its end are written only while the row still carries that token. A worker
that lost its job (it was taken for dead and the job ran again elsewhere, or the job was
cancelled) finds its next write refused and stops there, before the store write. The store
write is one transaction, so a worker killed at any point leaves the document whole or absent;
the run that follows finds it unchanged (if it was written) or writes it.
"""

from __future__ import annotations

import logging
import os
import time
import uuid
from dataclasses import dataclass
from typing import Any

import psycopg
from django.conf import settings
from django.db import DatabaseError, close_old_connections
from django.db.models import Case, F, Value, When
from django.db.models.functions import Coalesce
from django.utils import timezone
from django_tenants.utils import schema_context
from procrastinate import JobContext, RetryStrategy
from procrastinate.contrib.django import app

from portal.rag import files, metrics, services
from portal.rag.consistency import mark_writes, user_reads
from portal.rag.errors import ForbiddenError, database_unavailable
from rag_plugin import exceptions as rag
from rag_plugin.files import ExtractedDocument, extract_isolated
from tenants.models import IngestJob

logger = logging.getLogger("portal.rag")

TASK_NAME = "rag.ingest_job"
PROGRESS_EVERY_S = 0.5
"""Progress reaches the row at most this often (and at every change of stage)."""


class RunAgain(Exception):
    """Raised out of the task so that procrastinate runs the job again after a delay."""


class JobCancelled(Exception):
    """The job was cancelled while it ran; raised at a stage boundary to stop it there."""


class RunLost(Exception):
    """This run no longer owns the job (it runs elsewhere now, or has ended)."""


def _jobs_setting(name: str) -> Any:
    return settings.RAG_JOBS[name]


@app.task(
    name=TASK_NAME,
    pass_context=True,
    # Our row decides whether a job runs again (RunAgain), so procrastinate never gives up
    # on its own; the delay grows with each run.
    retry=RetryStrategy(
        max_attempts=None,
        linear_wait=int(_jobs_setting("RETRY_DELAY_S")),
        retry_exceptions={RunAgain},
    ),
)
def ingest_job(context: JobContext, schema: str, job_id: str) -> None:
    """Run one ingestion job of the tenant ``schema`` (the procrastinate task)."""
    close_old_connections()
    try:
        # user_reads: with standbys, the job's reads see its user's writes; its own become
        # their mark (mark_writes, before the job says it succeeded; see execute).
        with schema_context(schema), user_reads():
            run_job(uuid.UUID(job_id), queue_job_id=int(context.job.id or 0))
    except (DatabaseError, psycopg.Error) as exc:
        # The database failed where the run could not record it: claiming the row, writing its
        # end, giving it back after an error. Ended with that error, the queue job would be
        # over for good and the row left queued or running; the next run claims the row as it
        # finds it (and a document this run wrote is found unchanged).
        code = "DATABASE_UNAVAILABLE" if database_unavailable(exc) else "DATABASE_ERROR"
        _log("rag.job_retry", uuid.UUID(job_id), level=logging.WARNING, exc=exc, code=code)
        raise RunAgain(f"job {job_id}: {code}") from exc
    finally:
        close_old_connections()


def run_job(job_id: uuid.UUID, *, queue_job_id: int) -> None:
    """Claim the job for this run and carry it to its end (or back to the queue)."""
    token = uuid.uuid4()
    claimed = IngestJob.objects.filter(
        id=job_id,
        queue_job_id=queue_job_id,
        state__in=(IngestJob.State.QUEUED, IngestJob.State.RUNNING),
    ).update(
        state=IngestJob.State.RUNNING,
        run_token=token,
        attempts=F("attempts") + 1,
        # A file is parsed first; a text job's first stage is embedding.
        stage=Case(
            When(kind=IngestJob.Kind.FILE, then=Value(IngestJob.Stage.PARSING)),
            default=Value(IngestJob.Stage.EMBEDDING),
        ),
        progress_done=0,
        progress_total=0,
        started_at=Coalesce(F("started_at"), timezone.now()),
        updated_at=timezone.now(),
    )
    if not claimed:
        _log("rag.job_skipped", job_id, queue_job=queue_job_id)
        return
    job = IngestJob.objects.select_related("user", "file").get(id=job_id)
    _log("rag.job_started", job_id, attempt=job.attempts, queue_job=queue_job_id)
    run = JobRun(job, token, _told_at=time.monotonic(), _stage=job.stage)  # the claim told
    if job.cancel_requested:
        run.end(IngestJob.State.CANCELLED)
        return
    if job.attempts > job.max_attempts:
        # Only a run that never came back gets here: a failure that stays is recorded below.
        run.fail(
            "WORKER_LOST",
            f"The job was started {job.max_attempts} times and its worker stopped each time "
            "before it finished (RAG_JOB_MAX_ATTEMPTS).",
        )
        return
    run.execute()


def _log(
    event: str,
    job_id: uuid.UUID,
    *,
    level: int = logging.INFO,
    exc: BaseException | None = None,
    **fields: object,
) -> None:
    """One structured line per step of a job (SPEC O3), with the worker's pid and the time to
    the microsecond, so one job's runs can be told apart across processes."""
    logger.log(
        level,
        event,
        exc_info=exc,
        extra={"event": event, "job": str(job_id), "pid": os.getpid(), "at": time.time(), **fields},
    )


@dataclass
class JobRun:
    """One attempt at a job, holding the row's ``run_token`` for its writes."""

    job: IngestJob
    token: uuid.UUID
    _told_at: float = 0.0
    _stage: str = ""
    _started: float = 0.0

    def _mine(self) -> Any:
        return IngestJob.objects.filter(id=self.job.id, run_token=self.token)

    def execute(self) -> None:
        job = self.job
        started = self._started = time.perf_counter()
        payload = job.payload
        extracted: ExtractedDocument | None = None
        try:
            if job.kind == IngestJob.Kind.FILE:
                extracted = self._extracted()
                documents = [self._file_document(extracted)]
            else:
                documents = [
                    services.NewDocument(**document, content=content)
                    for document, content in zip(payload["documents"], job.contents, strict=True)
                ]
            self.progress(IngestJob.Stage.EMBEDDING, 0, 0)
            ingested = services.documents_ingest(
                user=job.user,
                collection=job.collection,
                documents=documents,
                chunking_strategy=payload.get("chunking_strategy"),
                shared=job.shared,
                progress=self.progress,
                chunk_metadata=[extracted.chunk_metadata] if extracted is not None else None,
            )
            if job.file is not None:
                files.file_ingested(job.file, ingested.results[0].document.id)
            # Before the job says it succeeded: a client that sees it has and searches finds
            # what it wrote, on whichever standby serves the search.
            mark_writes(job.user_id)
        except JobCancelled:
            self.end(IngestJob.State.CANCELLED)
            return
        except RunLost:
            _log("rag.job_lost", job.id)
            return
        except Exception as exc:
            self._failed(exc)
            return
        results = [
            {
                "document_id": result.document.id,
                "source": result.document.source,
                "chunks_created": len(result.chunks),
                "unchanged": result.unchanged,
                **(_file_result(extracted) if extracted is not None else {}),
            }
            for result in ingested.results
        ]
        self.end(
            IngestJob.State.SUCCEEDED,
            results=results,
            payload={},
            contents=[],
            progress_done=F("progress_total"),
        )
        _log(
            "rag.job_succeeded",
            job.id,
            attempt=job.attempts,
            documents=len(results),
            chunks=sum(len(result.chunks) for result in ingested.results),
            duration_ms=round((time.perf_counter() - started) * 1000, 1),
        )

    def _extracted(self) -> ExtractedDocument:
        """The job's file as text with pages, parsed in a child process under the
        deployment's limits (a hostile file fails the job with its code, never the worker)."""
        stored = self.job.file
        if stored is None:
            raise rag.NotFoundError(
                "The job's uploaded file was deleted (with its document or collection) before "
                "the job ran; upload it again."
            )
        extracted = extract_isolated(
            bytes(stored.data), filename=stored.filename, limits=files.extraction_limits()
        )
        if not extracted.text.strip():
            missing = extracted.needs_ocr_pages
            raise rag.InvalidInputError(
                f"The file {stored.filename!r} has no text"
                + (
                    f": its pages {', '.join(map(str, missing))} are images and Tesseract is "
                    "not installed where the job ran (install tesseract-ocr and "
                    "tesseract-ocr-eng), or upload a file with a text layer."
                    if missing
                    else "; upload one that has."
                )
            )
        return extracted

    def _file_document(self, extracted: ExtractedDocument) -> services.NewDocument:
        stored = self.job.file
        assert stored is not None  # _extracted() has checked
        payload = self.job.payload
        return services.NewDocument(
            content=extracted.text,
            title=payload.get("title") or extracted.title,
            source=stored.source,
            tags=payload.get("tags", []),
            metadata={
                **payload.get("metadata", {}),
                **extracted.metadata,
                "filename": stored.filename,
                "media_type": stored.media_type,
            },
        )

    def progress(self, stage: str, done: int, total: int) -> None:
        """Record the stage and progress, at every change of stage and otherwise at most
        every :data:`PROGRESS_EVERY_S`, and stop if the job was cancelled or taken from this
        run. Entering ``writing`` always checks: it is the last way out. (The last count of a
        stage may go unwritten: the next stage follows at once.)"""
        now = time.monotonic()
        if stage == self._stage and now - self._told_at < PROGRESS_EVERY_S:
            return
        self._stage, self._told_at = stage, now
        # One statement in the usual case: the row is written while this run holds it and
        # nobody asked to cancel. Otherwise a second one writes it if this run still holds it
        # (a cancelled job shows where it stopped) and says which of the two it was.
        fields = {
            "stage": stage,
            "progress_done": done,
            "progress_total": total,
            "updated_at": timezone.now(),
        }
        if self._mine().filter(cancel_requested=False).update(**fields):
            return
        raise JobCancelled if self._mine().update(**fields) else RunLost

    def end(self, state: str, **fields: Any) -> bool:
        """Move the job to an ended state, if this run still holds it (and count it)."""
        ended = bool(
            self._mine().update(
                state=state,
                stage=IngestJob.Stage.NONE,
                run_token=None,
                finished_at=timezone.now(),
                updated_at=timezone.now(),
                **fields,
            )
        )
        if ended:
            mark_writes(self.job.user_id)  # the job's end, for its user's next listing
            metrics.JOBS_ENDED.labels(self.job.kind, state).inc()
            if self._started:
                elapsed = time.perf_counter() - self._started
                metrics.JOB_DURATION.labels(self.job.kind).observe(elapsed)
        return ended

    def fail(self, code: str, message: str) -> None:
        self.end(IngestJob.State.FAILED, error_code=code, error_message=message)
        _log("rag.job_failed", self.job.id, level=logging.WARNING, code=code)

    def _failed(self, exc: Exception) -> None:
        code, message, transient = failure_of(exc, self.job)
        if transient and self.job.attempts < self.job.max_attempts:
            _log("rag.job_retry", self.job.id, level=logging.WARNING, exc=exc, code=code)
            back = self._mine().update(
                state=IngestJob.State.QUEUED,
                stage=IngestJob.Stage.NONE,
                run_token=None,
                error_code=code,
                error_message=message,
                updated_at=timezone.now(),
            )
            if back:
                raise RunAgain(f"job {self.job.id}: {code}") from exc
            return
        if not transient:
            _log("rag.job_refused", self.job.id, code=code)
        else:
            _log("rag.job_error", self.job.id, level=logging.ERROR, exc=exc)
        self.fail(code, message)


def _file_result(extracted: ExtractedDocument) -> dict[str, Any]:
    """What a file job's result adds: its pages, and those that still need OCR."""
    return {
        "media_type": extracted.media_type,
        "pages": len(extracted.pages),
        "needs_ocr_pages": list(extracted.needs_ocr_pages),
    }


def failure_of(exc: BaseException, job: IngestJob) -> tuple[str, str, bool]:
    """``(code, message, transient)`` of a run's error: a transient one may not happen again,
    so the job runs again (up to its attempts). A message that could show internals (SQL, an
    upstream's reply) is replaced by a fixed one; the worker's log has the details."""
    if isinstance(exc, rag.EmbeddingError):
        # Before InvalidInputError (a refused input is both): the message is the service's
        # reply and address, for the log only. A refusal happens again; a failure may not.
        refused = rag.EmbeddingAuthError | rag.EmbeddingNotFoundError | rag.EmbeddingInputError
        return _internal(exc.code, job, transient=not isinstance(exc, refused))
    if isinstance(
        exc, ForbiddenError | rag.InvalidInputError | rag.NotFoundError | rag.QuotaExceededError
    ):
        # Refusals that would happen again: a quota stays full until someone deletes.
        return exc.code, str(exc), False
    if isinstance(exc, rag.ConfigurationError):
        return _internal(exc.code, job, transient=False)
    if database_unavailable(exc):
        return _internal("DATABASE_UNAVAILABLE", job, transient=True)
    if isinstance(exc, rag.StoreError | DatabaseError | psycopg.Error):
        return _internal("DATABASE_ERROR", job, transient=True)
    return _internal("INTERNAL_ERROR", job, transient=True)


def _internal(code: str, job: IngestJob, *, transient: bool) -> tuple[str, str, bool]:
    return code, _INTERNAL_MESSAGES[code].format(job=job.id), transient


_INTERNAL_MESSAGES = {
    "EXTERNAL_SERVICE_ERROR": "The embedding service failed; the worker's log has the details "
    "under job {job}.",
    "DATABASE_UNAVAILABLE": "The database could not be reached.",
    "DATABASE_ERROR": "The database failed; the worker's log has the details under job {job}.",
    "CONFIGURATION_ERROR": "The deployment's RAG settings do not work; the worker's log has the "
    "details under job {job}.",
    "INTERNAL_ERROR": "The worker failed; its log has the details under job {job}.",
}


def lock_key(*, schema: str, owner: str | None, collection: str) -> str:
    """The queue lock of a collection: its jobs run one after another, never side by side,
    so two jobs never write the same source at once."""
    return f"rag:{schema}:{owner or '~shared'}:{collection}"
