"""A collection's page (its documents, uploads, pasted texts and their jobs) and a document's
page (pages, chunks, metadata; re-index and delete).

Uploads and pasted texts are ingestion jobs, as the API's (:mod:`portal.rag.jobs`); the
jobs panel is an htmx fragment that reloads itself while a job is unfinished.
"""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from portal.api.files import download
from portal.rag import jobs, selectors, services
from portal.rag.files import original_of
from portal.rag.passages import chunk_row, page_passage
from portal.rag.selectors import FoundDocument
from portal.workspace.access import is_fragment, member, user_of
from portal.workspace.forms import PasteForm, UploadForm
from rag_plugin.exceptions import NotFoundError, RagError
from tenants.models import StoredFile

PAGE_SIZE = 20
"""Documents a page of the list shows."""
JOBS_SHOWN = 10
"""The newest jobs of a collection its page shows."""
MAX_FILTER_CHARS = 200
"""The longest text the document list is filtered by."""


def _page_number(request: HttpRequest) -> int:
    try:
        return max(1, min(int(request.GET.get("page", "1")), 10**6))
    except ValueError:
        return 1


def _documents_context(request: HttpRequest, name: str, shared: bool) -> dict[str, object]:
    """The collection with its counts and a page of its documents (``q`` filters them)."""
    text = request.GET.get("q", "").strip()[:MAX_FILTER_CHARS]
    number = _page_number(request)
    user = user_of(request)
    info = selectors.collection_find(user=user, collection=name, shared=shared)
    found = selectors.document_page(
        user=user,
        collection=name,
        shared=shared,
        text=text,
        limit=PAGE_SIZE,
        offset=(number - 1) * PAGE_SIZE,
    )
    return {
        "info": info,
        "name": name,
        "shared": shared,
        "q": text,
        "page": found,
        "number": number,
    }


def _collection_page(
    request: HttpRequest,
    name: str,
    *,
    shared: bool,
    upload: UploadForm | None = None,
    paste: PasteForm | None = None,
    status: int = 200,
) -> HttpResponse:
    # The jobs before the documents: a job that ends between the two reads is then either
    # shown running (its panel follows it and reloads the list when it ends) or already in the
    # list (a job stores its documents before it says it succeeded). The other order could
    # show it ended without its documents, and nothing would reload them.
    context: dict[str, object] = {} if shared else _jobs(request, name)
    context.update(
        {
            **_documents_context(request, name, shared),
            "upload": upload or UploadForm(initial={"collection": name}),
            "paste": paste or PasteForm(),
        }
    )
    return render(request, "workspace/collection.html", context, status=status)


@require_GET
@member
def collection_view(request: HttpRequest, name: str, shared: bool = False) -> HttpResponse:
    """A collection: its documents (searchable, paginated); for the user's own, the upload
    and paste forms and the jobs."""
    return _collection_page(request, name, shared=shared)


@require_GET
@member
def documents_fragment(request: HttpRequest, name: str, shared: bool = False) -> HttpResponse:
    """The document list alone, for the search box that filters it as one types."""
    return render(request, "workspace/_documents.html", _documents_context(request, name, shared))


def _jobs(request: HttpRequest, name: str) -> dict[str, object]:
    found, _ = selectors.job_list(
        user=user_of(request), collection=name, shared=False, own=True, limit=JOBS_SHOWN
    )
    # While a job is unfinished the panel asks for itself again (see _jobs.html).
    return {"name": name, "jobs": found, "running": any(not job.ended for job in found)}


@require_GET
@member
def jobs_fragment(request: HttpRequest, name: str) -> HttpResponse:
    """The newest jobs the user submitted on one of their collections, with their progress."""
    selectors.collection_find(user=user_of(request), collection=name)
    context = _jobs(request, name)
    response = render(request, "workspace/_jobs.html", context)
    if not context["running"]:
        # The last job has ended: the document list reloads itself (see _documents.html).
        response["HX-Trigger"] = "jobs-ended"
    return response


@require_POST
@member
def upload_view(request: HttpRequest) -> HttpResponse:
    """Upload files into one of the user's collections: a job per file (the API's upload)."""
    form = UploadForm(request.POST, request.FILES)
    name = request.POST.get(form.add_prefix("collection"), "")
    if not form.is_valid():
        return _collection_page(request, name, shared=False, upload=form, status=400)
    try:
        submitted = jobs.file_jobs_submit(
            user=user_of(request),
            collection=form.cleaned_data["collection"],
            chunking_strategy=form.cleaned_data["chunking_strategy"] or None,
            uploads=[
                jobs.Upload(filename=upload.name or "upload", data=upload.read())
                for upload in form.cleaned_data["file"]
            ],
        )
    except RagError as exc:
        form.add_error("file", f"Nothing was uploaded: {exc}")
        return _collection_page(request, name, shared=False, upload=form, status=400)
    names = ", ".join(job.file.filename for job in submitted if job.file is not None)
    messages.success(request, f"Uploading {names}: follow the jobs below.")
    return HttpResponseRedirect(reverse("workspace:collection", args=[name]))


@require_POST
@member
def paste_view(request: HttpRequest, name: str) -> HttpResponse:
    """Ingest a pasted text into one of the user's collections, as a job."""
    form = PasteForm(request.POST)
    if not form.is_valid():
        return _collection_page(request, name, shared=False, paste=form, status=400)
    data = form.cleaned_data
    document = services.NewDocument(data["content"], data["title"], data["source"])
    try:
        jobs.job_submit(
            user=user_of(request),
            collection=name,
            documents=[document],
            kind="document",
            chunking_strategy=data["chunking_strategy"] or None,
        )
    except RagError as exc:
        form.add_error("content", str(exc))
        return _collection_page(request, name, shared=False, paste=form, status=400)
    messages.success(request, f"Adding '{data['title'] or 'the text'}': follow the job below.")
    return HttpResponseRedirect(reverse("workspace:collection", args=[name]))


def _original(found: FoundDocument) -> StoredFile | None:
    try:
        return original_of(found)
    except NotFoundError:  # ingested as text: there is no file
        return None


@require_GET
@member
def document_view(request: HttpRequest, document_id: str) -> HttpResponse:
    """One document the user may read: its metadata, its original, its chunks and pages."""
    found = selectors.document_readable(user=user_of(request), document_id=document_id)
    document = found.document
    return render(
        request,
        "workspace/document.html",
        {
            "document": document,
            "collection": found.collection,
            "shared": found.scope.owner is None,
            "metadata": sorted(document.metadata.items()),
            "original": _original(found),
            "chunks": [chunk_row(c) for c in selectors.document_chunks(found=found)],
        },
    )


@require_GET
@member
def file_view(request: HttpRequest, document_id: str) -> HttpResponse:
    """The document's uploaded original, as an attachment (never shown as a page)."""
    found = selectors.document_readable(user=user_of(request), document_id=document_id)
    stored = original_of(found)
    return download(stored)


@require_POST
@member
def reindex_view(request: HttpRequest, document_id: str) -> HttpResponse:
    """Parse one of the user's documents again from its original, as a job."""
    job = jobs.document_reindex(user=user_of(request), document_id=document_id)
    messages.success(request, "Re-indexing the document from its file: follow the job below.")
    return HttpResponseRedirect(reverse("workspace:collection", args=[job.collection]))


@require_POST
@member
def document_delete_view(request: HttpRequest, document_id: str) -> HttpResponse:
    """Delete one of the user's documents, its chunks and its original."""
    collection = services.document_delete(user=user_of(request), document_id=document_id)
    messages.success(request, "Deleted the document.")
    return HttpResponseRedirect(reverse("workspace:collection", args=[collection]))


@require_GET
@member
def passage_view(request: HttpRequest, document_id: str, index: int) -> HttpResponse:
    """A chunk of a document on its page, the chunk highlighted: where a search hit or an
    answer's footnote leads. htmx gets the passage alone (the chat's footnote dialog)."""
    found = selectors.document_readable(user=user_of(request), document_id=document_id)
    chunks = selectors.document_chunks(found=found)
    template = "workspace/_passage.html" if is_fragment(request) else "workspace/passage.html"
    return render(
        request,
        template,
        {
            "document": found.document,
            "collection": found.collection,
            "shared": found.scope.owner is None,
            "passage": page_passage(chunks, index),
            "count": len(chunks),
        },
    )
