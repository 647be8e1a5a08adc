"""Ingestion jobs as users see them (SPEC J1, J3): submit (texts, or uploaded files: SPEC F3),
cancel and retry; listing and reading them are selectors (:func:`~portal.rag.selectors.job_list`,
:func:`~portal.rag.selectors.job_get`).

A job is a row of the tenant's schema (:class:`~tenants.models.IngestJob`) and an entry in the
queue (procrastinate's tables in the public schema), written in one transaction, so a job is
never queued without its row or the other way round. Workers (``manage.py rag_worker``) run
it: :mod:`portal.rag.job_runner`.

A user sees and acts on their own jobs; a tenant admin (staff) on every job of the tenant.
Someone else's job is answered as missing (404), never as forbidden.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import psycopg
from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import connection, transaction
from django.utils import timezone
from procrastinate.contrib.django import app
from psycopg import sql
from psycopg.types.json import Jsonb

from portal.rag import audit
from portal.rag.errors import ConflictError
from portal.rag.files import original_of, upload_description
from portal.rag.job_runner import ingest_job, lock_key
from portal.rag.quotas import check_file_bytes, check_queued_jobs
from portal.rag.scope import check_grant, scope_for
from portal.rag.selectors import document_find, job_get
from portal.rag.services import NewDocument
from rag_plugin.chunking import ChunkingStrategy, TextChunker, api_chunker_config
from rag_plugin.exceptions import InvalidInputError
from rag_plugin.files import detect_media_type
from rag_plugin.ingest import content_too_small
from tenants.models import IngestJob, StoredFile


def sync_max_bytes() -> int:
    """Content above this many UTF-8 bytes is ingested as a job even when not asked."""
    return int(settings.RAG_JOBS["SYNC_MAX_BYTES"])


def content_bytes(documents: Sequence[NewDocument]) -> int:
    return sum(len(document.content.encode("utf-8")) for document in documents)


@transaction.atomic
def job_submit(
    *,
    user: AbstractBaseUser,
    collection: str,
    documents: Sequence[NewDocument],
    kind: str,
    chunking_strategy: str | None = None,
    shared: bool = False,
) -> IngestJob:
    """Queue an ingest of ``documents`` into the caller's collection and return its job.

    The allowlist (and, for a shared collection, the caller's right to write it) is checked
    now, and again when the job runs.
    """
    scope = scope_for(user=user, collection=collection, shared=shared, write=True)
    check_chunkable(documents, chunking_strategy)
    return _queued(
        user=user,
        collection=collection,
        shared=shared,
        owner=scope.owner,
        kind=kind,
        payload={
            "documents": [_described(d) for d in documents],
            "chunking_strategy": chunking_strategy,
        },
        contents=[d.content for d in documents],
        documents=len(documents),
        input_bytes=content_bytes(documents),
    )


@dataclass(frozen=True)
class Upload:
    """One uploaded file: its name, its bytes and how its document is described."""

    filename: str
    data: bytes
    source: str = ""
    """The document's source; the file name when empty."""
    title: str = ""
    """The document's title; the file's own (PDF metadata, first heading) when empty."""
    tags: Sequence[str] = ()
    metadata: Mapping[str, Any] = field(default_factory=dict)


@transaction.atomic
def file_jobs_submit(
    *,
    user: AbstractBaseUser,
    collection: str,
    uploads: Sequence[Upload],
    chunking_strategy: str | None = None,
    shared: bool = False,
) -> list[IngestJob]:
    """Keep each file (SPEC F3) and queue a job that ingests it into the caller's collection;
    return the jobs in the uploads' order. Every file of the upload or none.

    The allowlist (and for a shared collection the caller's right to write it) is checked
    now and again when each job runs. Only the type is told here, from the first bytes: a
    file of a type no extractor reads is refused (``UnsupportedFileTypeError``, naming the
    file). Parsing, which a hostile file can make slow, huge or crash, is the job's, in a child
    process under limits.
    """
    scope = scope_for(user=user, collection=collection, shared=shared, write=True)
    if chunking_strategy:
        ChunkingStrategy.parse(chunking_strategy)
    most = int(settings.RAG_FILES["MAX_FILES"])
    if len(uploads) > most:
        raise InvalidInputError(
            f"file: {len(uploads)} files; the limit is {most} per upload (RAG_MAX_UPLOAD_FILES)."
        )
    limit = int(settings.RAG_FILES["MAX_UPLOAD_BYTES"])
    typed = []
    for upload in uploads:
        if not upload.data:
            raise InvalidInputError(f"The file {upload.filename!r} is empty; upload its content.")
        if len(upload.data) > limit:
            raise InvalidInputError(
                f"The file {upload.filename!r} is {len(upload.data)} bytes; the limit is {limit} "
                "(RAG_MAX_UPLOAD_BYTES)."
            )
        typed.append((upload, detect_media_type(upload.data, upload.filename)))
    check_file_bytes(user, shared=shared, adding=sum(len(u.data) for u, _ in typed))
    jobs = []
    for upload, media_type in typed:
        stored = StoredFile.objects.create(
            id=uuid.uuid4(),
            user_id=user.pk,
            collection=collection,
            shared=shared,
            filename=upload.filename,
            source=upload.source or upload.filename,
            media_type=media_type,
            size=len(upload.data),
            sha256=hashlib.sha256(upload.data).hexdigest(),
            data=upload.data,
        )
        job = _queued(
            user=user,
            collection=collection,
            shared=shared,
            owner=scope.owner,
            kind=IngestJob.Kind.FILE,
            file=stored,
            payload={
                "title": upload.title,
                "tags": list(upload.tags),
                "metadata": dict(upload.metadata),
                "chunking_strategy": chunking_strategy,
            },
            documents=1,
            input_bytes=len(upload.data),
        )
        jobs.append(job)
    return jobs


@transaction.atomic
def document_reindex(
    *,
    user: AbstractBaseUser,
    document_id: str,
    shared: bool = False,
    chunking_strategy: str | None = None,
) -> IngestJob:
    """Queue a job that parses a document's uploaded original again and ingests it over the
    document (SPEC F3), e.g. once OCR is installed or to chunk it another way.

    The document's title, tags, metadata and chunking are kept, but ``chunking_strategy``
    when given. A run that extracts the same text and chunks it the same way finds the
    document unchanged and writes nothing. A document ingested as text has no original
    (404): send its text again instead.
    """
    found = document_find(user=user, document_id=document_id, shared=shared, write=True)
    stored = original_of(found)
    if chunking_strategy:
        ChunkingStrategy.parse(chunking_strategy)
    # A run empties its job's payload when it succeeds; the document keeps what was asked.
    payload = upload_description(found.document)
    if chunking_strategy:
        payload["chunking_strategy"] = chunking_strategy
    return _queued(
        user=user,
        collection=stored.collection,
        shared=shared,
        owner=found.scope.owner,
        kind=IngestJob.Kind.FILE,
        file=stored,
        payload=payload,
        documents=1,
        input_bytes=stored.size,
    )


CHUNK_CHECK_MAX_CHARS = 64 * 1024
"""Texts up to this long are chunked at submit to refuse one too small with a 400 now; a
longer text always makes chunks (unless it is blank), and chunking it would slow the submit."""


def check_chunkable(documents: Sequence[NewDocument], chunking_strategy: str | None) -> None:
    """Raise ``InvalidInputError`` (400) naming the first document that would make no chunk,
    as the ingest itself would, but without embedding anything."""
    strategy = ChunkingStrategy.parse(chunking_strategy) if chunking_strategy else None
    chunker = TextChunker(api_chunker_config(strategy))
    for position, document in enumerate(documents):
        text = document.content
        if not text.strip() or (len(text) <= CHUNK_CHECK_MAX_CHARS and not chunker.chunk(text)):
            raise content_too_small(position, len(documents))


def _described(document: NewDocument) -> dict[str, Any]:
    """A document of a text job's payload: all but its text, which goes to ``contents``."""
    described = {**asdict(document), "tags": list(document.tags)}
    del described["content"]
    return described


def _store_payload(job: IngestJob, payload: dict[str, Any], contents: list[str]) -> None:
    """Write the job's input (in the caller's transaction) with its values bound by the
    server, the texts in binary: Django's psycopg backend binds parameters on the client,
    quoting a 1 MB text character by character (a 1 MB JSON value: 22 against 10–15 ms to
    insert, measured)."""
    if not payload and not contents:
        return
    connection.ensure_connection()
    schema = connection.schema_name  # type: ignore[attr-defined]
    table = sql.Identifier(schema, IngestJob._meta.db_table)
    with psycopg.Cursor(connection.connection) as cursor:
        cursor.execute(
            sql.SQL("UPDATE {} SET payload = %s, contents = %b WHERE id = %s").format(table),
            [Jsonb(payload), contents, job.id],
        )
    job.payload = payload
    job.contents = contents


def _queued(
    *, user: AbstractBaseUser, collection: str, shared: bool, owner: str | None, **fields: Any
) -> IngestJob:
    """A new job of ``user``'s on the collection (its ``kind``, ``payload``, ``contents``, sizes
    and file in ``fields``), queued in the caller's transaction, within the queue quotas."""
    check_queued_jobs(user, 1)
    payload = fields.pop("payload", {})
    contents = fields.pop("contents", [])
    job = IngestJob.objects.create(
        id=uuid.uuid4(),
        user_id=user.pk,
        collection=collection,
        shared=shared,
        max_attempts=int(settings.RAG_JOBS["MAX_ATTEMPTS"]),
        **fields,
    )
    _store_payload(job, payload, contents)
    _enqueue(job, owner=owner)
    stored = job.file
    audit.record(
        "job.submit",
        actor=user,
        object_type="job",
        object_id=str(job.id),
        after={
            "collection": collection,
            "shared": shared,
            "kind": job.kind,
            "documents": job.documents,
            "input_bytes": job.input_bytes,
            **(
                {
                    "filename": stored.filename,
                    "media_type": stored.media_type,
                    "sha256": stored.sha256,
                }
                if stored is not None
                else {}
            ),
        },
    )
    return job


def _enqueue(job: IngestJob, *, owner: str | None) -> None:
    """Put the job in the queue (in the caller's transaction) and remember its queue id."""
    schema = connection.schema_name  # type: ignore[attr-defined]
    job.queue_job_id = ingest_job.configure(
        lock=lock_key(schema=schema, owner=owner, collection=job.collection)
    ).defer(schema=schema, job_id=str(job.id))
    job.save(update_fields=["queue_job_id"])


@transaction.atomic
def job_cancel(*, user: AbstractBaseUser, job_id: str) -> IngestJob:
    """Cancel a queued job at once, or a running one at its next stage boundary (before it
    writes); an ended job is a conflict."""
    job = job_get(user=user, job_id=job_id, for_update=True)
    check_grant(user, job.collection, job.shared, write=True)
    if job.ended:
        raise ConflictError(
            f"Job '{job.id}' has already ended ({job.state}); only a queued or running job "
            "can be cancelled."
        )
    job.cancel_requested = True
    fields = ["cancel_requested", "updated_at"]
    if job.state == IngestJob.State.QUEUED:
        job.state = IngestJob.State.CANCELLED
        job.finished_at = timezone.now()
        fields += ["state", "finished_at"]
        if job.queue_job_id is not None:
            # Out of the queue; if a worker has just taken it, the run sees the state and stops.
            app.job_manager.cancel_job_by_id(job.queue_job_id)
    job.save(update_fields=fields)
    audit.record("job.cancel", actor=user, object_type="job", object_id=str(job.id))
    return job


@transaction.atomic
def job_retry(*, user: AbstractBaseUser, job_id: str) -> IngestJob:
    """Queue a failed or cancelled job again, with a fresh count of attempts."""
    job = job_get(user=user, job_id=job_id, for_update=True)
    if job.state not in (IngestJob.State.FAILED, IngestJob.State.CANCELLED):
        raise ConflictError(
            f"Job '{job.id}' is {job.state}; only a failed or cancelled job can be retried."
        )
    check_grant(user, job.collection, job.shared, write=True)
    scope = scope_for(user=job.user, collection=job.collection, shared=job.shared, write=True)
    check_queued_jobs(job.user, 1)
    reset: dict[str, Any] = {
        "state": IngestJob.State.QUEUED,
        "stage": IngestJob.Stage.NONE,
        "progress_done": 0,
        "progress_total": 0,
        "attempts": 0,
        "cancel_requested": False,
        "error_code": "",
        "error_message": "",
        "results": [],
        "run_token": None,
        "started_at": None,
        "finished_at": None,
    }
    for name, value in reset.items():
        setattr(job, name, value)
    job.save(update_fields=[*reset, "updated_at"])
    _enqueue(job, owner=scope.owner)
    audit.record("job.retry", actor=user, object_type="job", object_id=str(job.id))
    return job
