"""Uploaded originals (SPEC F3): kept in PostgreSQL beside their documents, downloaded by
whoever may read the document, deleted with it.

Submitting an upload is :func:`portal.rag.jobs.file_jobs_submit`; parsing it is the job's
(:mod:`portal.rag.job_runner`).
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db.models import QuerySet

from portal.rag.selectors import FoundDocument, document_find
from rag_plugin.chunking import ChunkingStrategy
from rag_plugin.exceptions import NotFoundError
from rag_plugin.files import ExtractionLimits
from rag_plugin.ingest import CHUNKING_METADATA_KEY
from rag_plugin.stores.base import DocumentRecord
from tenants.models import StoredFile

FILE_METADATA_KEYS = frozenset(
    {
        # a chunk's place in the file
        "page_number",
        "page_end",
        "has_image",
        "section",
        # the file's own, on the document
        "filename",
        "media_type",
        "page_count",
        "author",
        "created",
    }
)
"""Metadata an upload's extraction sets on the document or its chunks; a client's may not."""


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


def _collection_files(
    *, collection: str, shared: bool, owner_id: int | None
) -> QuerySet[StoredFile]:
    """The originals of one collection: the tenant's shared one, or ``owner_id``'s own."""
    files = StoredFile.objects.filter(collection=collection, shared=shared)
    if shared:
        return files
    if owner_id is None:
        raise ValueError(f"The originals of a private collection ({collection!r}) need its owner.")
    return files.filter(user_id=owner_id)


def file_of_document(
    *, user: AbstractBaseUser, document_id: str, shared: bool = False
) -> StoredFile:
    """The uploaded original of a document the caller may read (404 when the document is not
    theirs, or was not ingested from a file)."""
    return original_of(document_find(user=user, document_id=document_id, shared=shared))


def original_of(found: FoundDocument) -> StoredFile:
    """The uploaded original of a document found in the caller's scope (404 when it was not
    ingested from a file)."""
    document_id = found.document.id
    shared = found.scope.owner is None
    stored = collection_original(
        collection=found.collection.name,
        shared=shared,
        owner_id=None if shared else found.scope.user.pk,
        document_id=document_id,
    )
    if stored is None:
        raise NotFoundError(
            f"Document '{document_id}' was not ingested from an uploaded file, so there is no "
            f"file to download; its text is at /api/rag/documents/{document_id}."
        )
    return stored


def upload_description(document: DocumentRecord) -> dict[str, Any]:
    """What an upload said of a document (title, tags, its own metadata, how to chunk it), read
    back from the document: a re-index keeps it. The keys the file sets are left out."""
    signature = document.metadata.get(CHUNKING_METADATA_KEY)
    strategy = signature.split(":", 1)[0] if isinstance(signature, str) else ""
    return {
        "title": document.title,
        "tags": list(document.tags),
        "metadata": {
            key: value
            for key, value in document.metadata.items()
            if key not in FILE_METADATA_KEYS and key != CHUNKING_METADATA_KEY
        },
        "chunking_strategy": strategy if strategy in ChunkingStrategy.names() else None,
    }


def file_ingested(stored: StoredFile, document_id: str) -> None:
    """Record that ``stored`` is now the document's original, and drop the originals of the
    versions of that source it replaced."""
    stored.document_id = document_id
    stored.save(update_fields=["document_id"])
    _collection_files(
        collection=stored.collection, shared=stored.shared, owner_id=stored.user_id
    ).filter(source=stored.source).exclude(id=stored.id).exclude(document_id="").delete()


def collection_original(
    *, collection: str, shared: bool, owner_id: int | None, document_id: str
) -> StoredFile | None:
    """The original of one document of a collection, if it came from a file. Its bytes are
    read when used (a download), not here (a re-index, a page that names it)."""
    files = _collection_files(collection=collection, shared=shared, owner_id=owner_id)
    return files.filter(document_id=document_id).defer("data").order_by("-created_at").first()


def collection_originals(
    *, collection: str, shared: bool, owner_id: int | None
) -> dict[str, StoredFile]:
    """The originals of a collection's documents by document id, without their bytes (for a
    listing: a file may be tens of megabytes)."""
    files = _collection_files(collection=collection, shared=shared, owner_id=owner_id)
    ingested = files.exclude(document_id="").defer("data").order_by("created_at")
    return {stored.document_id: stored for stored in ingested}


def files_forget(
    *, collection: str, shared: bool, owner_id: int | None, document_id: str | None = None
) -> None:
    """Delete the originals of a deleted document, or of every document of a deleted
    collection (``document_id`` None). ``owner_id`` is the collection's owner (None, or
    anyone, for a shared collection)."""
    files = _collection_files(collection=collection, shared=shared, owner_id=owner_id)
    if document_id is not None:
        files = files.filter(document_id=document_id)
    files.delete()
