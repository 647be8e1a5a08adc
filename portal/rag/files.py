"""Uploaded originals (SPEC F3): kept in PostgreSQL beside their documents, downloaded by
whoever may read the document, deleted with it.

Submitting an upload is :func:`portal.rag.jobs.file_jobs_submit`; parsing it is the job's
(:mod:`portal.rag.job_runner`).
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db.models import QuerySet
from rest_framework.exceptions import NotFound

from portal.rag.selectors import document_find
from rag_plugin.files import ExtractionLimits
from tenants.models import StoredFile


def extraction_limits() -> ExtractionLimits:
    """The deployment's limits on parsing one file (``RAG_FILES``)."""
    files = settings.RAG_FILES
    return ExtractionLimits(
        max_bytes=int(files["MAX_UPLOAD_BYTES"]),
        max_pages=int(files["MAX_PAGES"]),
        timeout_s=float(files["TIMEOUT_S"]),
        memory_mb=int(files["MEMORY_MB"]),
        ocr=bool(files["OCR"]),
    )


def _collection_files(*, collection: str, shared: bool, owner_id: int) -> QuerySet[StoredFile]:
    """The originals of one collection: the tenant's shared one, or ``owner_id``'s own."""
    files = StoredFile.objects.filter(collection=collection, shared=shared)
    return files if shared else files.filter(user_id=owner_id)


def file_of_document(
    *, user: AbstractBaseUser, document_id: str, shared: bool = False
) -> StoredFile:
    """The uploaded original of a document the caller may read (404 when the document is not
    theirs, or was not ingested from a file)."""
    found = document_find(user=user, document_id=document_id, shared=shared)
    stored = (
        _collection_files(collection=found.collection.name, shared=shared, owner_id=user.pk)
        .filter(document_id=document_id)
        .order_by("-created_at")
        .first()
    )
    if stored is None:
        raise NotFound(
            f"Document '{document_id}' was not ingested from an uploaded file, so there is no "
            f"file to download; its text is at /api/rag/documents/{document_id}."
        )
    return stored


def file_ingested(stored: StoredFile, document_id: str) -> None:
    """Record that ``stored`` is now the document's original, and drop the originals of the
    versions of that source it replaced."""
    stored.document_id = document_id
    stored.save(update_fields=["document_id"])
    _collection_files(
        collection=stored.collection, shared=stored.shared, owner_id=stored.user_id
    ).filter(source=stored.source).exclude(id=stored.id).exclude(document_id="").delete()


def files_forget(
    *, collection: str, shared: bool, user: AbstractBaseUser, document_id: str | None = None
) -> None:
    """Delete the originals of a deleted document, or of every document of a deleted
    collection (``document_id`` None)."""
    files = _collection_files(collection=collection, shared=shared, owner_id=user.pk)
    if document_id is not None:
        files = files.filter(document_id=document_id)
    files.delete()
