"""Tenant-admin pages for RAG data (SPEC T5, F3, T6): browse collections and documents, upload
files into the tenant's shared collections, re-index and delete, and the retrieval playground.

The data lives in the tenant's RAG store, not in Django models, so these are plain admin
views wrapped by ``admin.site.admin_view`` (staff only) rather than ModelAdmins. Uploads and
re-indexing are the same jobs the REST API makes (:mod:`portal.rag.jobs`), submitted as the
acting admin; their state is on the pages and in the jobs admin.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from django.conf import settings
from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect, QueryDict
from django.shortcuts import render
from django.urls import path, reverse
from django.views.decorators.http import require_http_methods, require_POST

from portal.api.files import download
from portal.rag import services
from portal.rag.errors import ForbiddenError
from portal.rag.files import collection_original, collection_originals
from portal.rag.jobs import Upload, document_reindex, file_jobs_submit
from portal.rag.passages import chunk_row
from portal.rag.playground import (
    PlaygroundCollection,
    PlaygroundQuery,
    playground_collections,
    playground_profiles,
    playground_run,
    playground_users,
)
from portal.rag.playground_result import PlaygroundResult
from portal.rag.scope import Scope, admin_scope
from rag_plugin.chunking import ChunkingStrategy
from rag_plugin.exceptions import InvalidInputError, NotFoundError, RagError
from rag_plugin.files import SUPPORTED_MEDIA_TYPES
from rag_plugin.rerank import RerankMode
from rag_plugin.stores.base import CollectionInfo
from tenants.models import IngestJob, StoredFile

SHARED = "shared"
JOBS_SHOWN = 20
"""The newest jobs a page lists; the jobs admin has them all."""


@dataclass(frozen=True)
class Owner:
    """A collection owner as the admin shows it: the URL slug, the label and the user (None
    for the tenant's shared collections)."""

    slug: str
    label: str
    user: AbstractBaseUser | None

    @property
    def shared(self) -> bool:
        return self.user is None

    @property
    def user_id(self) -> int | None:
        return self.user.pk if self.user is not None else None


def _owners() -> list[Owner]:
    users = get_user_model().objects.order_by("username")
    return [Owner(SHARED, "(shared)", None)] + [
        Owner(f"user-{u.pk}", u.get_username(), u) for u in users
    ]


def _owner(slug: str) -> Owner:
    for owner in _owners():
        if owner.slug == slug:
            return owner
    raise Http404(f"No owner {slug}")


def _scope(request: HttpRequest, owner: Owner | None = None) -> Scope:
    """The acting admin's view of ``owner``'s collections (the shared ones by default)."""
    try:
        return admin_scope(actor=_admin(request), owner=owner.user if owner else None)
    except ForbiddenError as exc:
        raise PermissionDenied(str(exc)) from None


def _collection(scope: Scope, name: str) -> CollectionInfo:
    try:
        return scope.store.get_collection(name, owner=scope.owner)
    except NotFoundError as exc:
        raise Http404(str(exc)) from None


def _context(request: HttpRequest, title: str, **extra: object) -> dict[str, object]:
    return {**admin.site.each_context(request), "title": title, **extra}


def _admin(request: HttpRequest) -> AbstractBaseUser:
    return cast(AbstractBaseUser, request.user)


def _jobs(owner: Owner | None = None, collection: str | None = None) -> list[IngestJob]:
    """The newest jobs of the tenant, or of one owner's collection."""
    jobs = IngestJob.objects.select_related("user", "file").defer(
        "file__data", *IngestJob.INPUT_FIELDS
    )
    if owner is not None:
        jobs = jobs.filter(collection=collection, shared=owner.shared)
        if owner.user_id is not None:
            jobs = jobs.filter(user_id=owner.user_id)
    return list(jobs.order_by("-created_at", "id")[:JOBS_SHOWN])


def _originals(owner: Owner, info: CollectionInfo) -> dict[str, StoredFile]:
    return collection_originals(collection=info.name, shared=owner.shared, owner_id=owner.user_id)


def _original(owner: Owner, info: CollectionInfo, document_id: str) -> StoredFile | None:
    return collection_original(
        collection=info.name, shared=owner.shared, owner_id=owner.user_id, document_id=document_id
    )


@require_http_methods(["GET", "POST"])
def collections_view(request: HttpRequest) -> HttpResponse:
    """Every collection of the tenant, by owner, the newest jobs and the upload form; POST
    deletes a collection."""
    _scope(request)  # a tenant admin's page
    if request.method == "POST":
        owner = _owner(request.POST.get("owner", ""))
        name = request.POST.get("collection", "")
        try:
            deleted = services.admin_collection_delete(
                actor=_admin(request), owner=owner.user, collection=name
            )
        except NotFoundError as exc:
            messages.error(request, str(exc))
        else:
            messages.success(
                request, f"Deleted collection '{name}' of {owner.label} ({deleted} documents)."
            )
        return HttpResponseRedirect(reverse("rag-admin-collections"))
    rows = [
        (owner, info)
        for owner, scope in ((owner, _scope(request, owner)) for owner in _owners())
        for info in scope.store.list_collections(owner=scope.owner)
    ]
    return render(
        request,
        "admin/rag/collections.html",
        _context(
            request,
            "RAG collections",
            rows=rows,
            shared_names=[info.name for owner, info in rows if owner.shared],
            jobs=_jobs(),
            strategies=[strategy.value for strategy in ChunkingStrategy],
            media_types=", ".join(SUPPORTED_MEDIA_TYPES),
            max_upload_mib=int(settings.RAG_FILES["MAX_UPLOAD_BYTES"]) // (1024 * 1024),
            max_files=int(settings.RAG_FILES["MAX_FILES"]),
        ),
    )


@require_POST
def upload_view(request: HttpRequest) -> HttpResponse:
    """Upload files into a shared collection of the tenant: one ingestion job per file (the
    REST upload's :func:`~portal.rag.jobs.file_jobs_submit`, as the acting admin)."""
    _scope(request)  # a tenant admin's page
    collection = request.POST.get("collection", "").strip()
    strategy = request.POST.get("chunking_strategy") or None
    files = request.FILES.getlist("file")
    back = HttpResponseRedirect(reverse("rag-admin-collections"))
    if not files:
        messages.error(request, "Choose at least one file to upload.")
        return back
    try:
        jobs = file_jobs_submit(
            user=_admin(request),
            collection=collection,
            shared=True,
            chunking_strategy=strategy,
            uploads=[Upload(filename=f.name or "upload", data=f.read()) for f in files],
        )
    except RagError as exc:
        messages.error(request, f"Nothing was uploaded: {exc}")
        return back
    names = ", ".join(job.file.filename for job in jobs if job.file is not None)
    messages.success(
        request,
        f"Queued {len(jobs)} file(s) for the shared collection '{collection}': {names}. "
        "Their jobs are listed below.",
    )
    return back


@require_http_methods(["GET", "POST"])
def collection_view(request: HttpRequest, owner: str, name: str) -> HttpResponse:
    """The documents of one collection with their originals and the collection's jobs; POST
    deletes a document, or (shared collections) re-indexes one from its original."""
    who = _owner(owner)
    scope = _scope(request, who)
    info = _collection(scope, name)
    if request.method == "POST":
        document_id = request.POST.get("document", "")
        if request.POST.get("action") == "reindex":
            _reindex(request, who, document_id)
        else:
            _delete(request, who, info, document_id)
        return HttpResponseRedirect(reverse("rag-admin-collection", args=[owner, name]))
    originals = _originals(who, info)
    documents = [
        (document, originals.get(document.id))
        for document in scope.store.list_documents(info, limit=1000)
    ]
    return render(
        request,
        "admin/rag/collection.html",
        _context(
            request,
            f"Collection {name} of {who.label}",
            owner=who,
            info=info,
            documents=documents,
            jobs=_jobs(who, name),
        ),
    )


def _reindex(request: HttpRequest, owner: Owner, document_id: str) -> None:
    if not owner.shared:
        messages.error(
            request,
            "Only shared collections are re-indexed here; users re-index "
            "their own documents through the API.",
        )
        return
    try:
        job = document_reindex(user=_admin(request), document_id=document_id, shared=True)
    except RagError as exc:
        messages.error(request, f"Not re-indexed: {exc}")
    else:
        messages.success(request, f"Re-indexing document {document_id}: job {job.id}.")


def _delete(request: HttpRequest, owner: Owner, info: CollectionInfo, document_id: str) -> None:
    try:
        services.admin_document_delete(
            actor=_admin(request), owner=owner.user, collection=info.name, document_id=document_id
        )
    except NotFoundError as exc:
        messages.error(request, str(exc))
        return
    messages.success(request, f"Deleted document {document_id}.")


def document_view(request: HttpRequest, owner: str, name: str, document_id: str) -> HttpResponse:
    """One document: its metadata, its original and the jobs that read it, and its chunks with
    their pages and exact offsets (read-only)."""
    who = _owner(owner)
    scope = _scope(request, who)
    info = _collection(scope, name)
    try:
        document = scope.store.get_document(info, document_id)
    except NotFoundError as exc:
        raise Http404(str(exc)) from None
    original = _original(who, info, document_id)
    jobs = []
    if original is not None:
        jobs = list(IngestJob.objects.filter(file_id=original.id).order_by("-created_at"))
    return render(
        request,
        "admin/rag/document.html",
        _context(
            request,
            f"Document {document.title or document.id}",
            owner=who,
            info=info,
            document=document,
            metadata=sorted(document.metadata.items()),
            original=original,
            jobs=jobs,
            chunks=[chunk_row(chunk) for chunk in scope.store.document_chunks(info, document_id)],
        ),
    )


def file_view(request: HttpRequest, owner: str, name: str, document_id: str) -> HttpResponse:
    """The document's uploaded original, as an attachment."""
    who = _owner(owner)
    info = _collection(_scope(request, who), name)
    original = _original(who, info, document_id)
    if original is None:
        raise Http404(f"Document {document_id} has no uploaded original.")
    return download(original)


@require_http_methods(["GET"])
def playground_view(request: HttpRequest) -> HttpResponse:
    """The retrieval playground (SPEC T6): a question run as the context endpoint runs it,
    each leg's ranked list, the fusion, the rerank and the numbered context; read-only, so a
    GET form (a run can be bookmarked and shared)."""
    _scope(request)  # a tenant admin's page
    form = request.GET
    result: PlaygroundResult | None = None
    error = ""
    if "q" in form:
        try:
            result = playground_run(actor=_admin(request), request=_playground_query(form))
        except RagError as exc:
            error = str(exc)
    collections = playground_collections()
    chosen = set(form.getlist("collection"))
    return render(
        request,
        "admin/rag/playground.html",
        _context(
            request,
            "Retrieval playground",
            form=form,
            profiles=playground_profiles(),
            users=playground_users(),
            collections=[(c, c.value in chosen) for c in collections],
            rerank_modes=[mode.value for mode in RerankMode],
            result=result,
            error=error,
            me=request.user.pk,
        ),
    )


def _playground_query(form: QueryDict) -> PlaygroundQuery:
    """The playground's question and settings from its form; unreadable values are refused."""
    as_user = form.get("as_user", "")
    k = form.get("k", "").strip()
    if as_user and not as_user.isdigit():
        raise InvalidInputError(f"'As user' must be a user of this tenant, got {as_user!r}.")
    if k and not k.isdigit():
        raise InvalidInputError(f"Passages (k) must be a whole number from 1 to 100, got {k!r}.")
    return PlaygroundQuery(
        query=form.get("q", ""),
        profile=form.get("profile") or None,
        as_user_id=int(as_user) if as_user else None,
        collections=[PlaygroundCollection.parse(value) for value in form.getlist("collection")],
        correct_typos=form.get("correct_typos") == "on",
        filters_json=form.get("filters", ""),
        rerank=form.get("rerank") or None,
        retrieval_k=int(k) if k else None,
    )


urlpatterns = [
    path("", admin.site.admin_view(collections_view), name="rag-admin-collections"),
    path("upload/", admin.site.admin_view(upload_view), name="rag-admin-upload"),
    path("playground/", admin.site.admin_view(playground_view), name="rag-admin-playground"),
    path(
        "<slug:owner>/<str:name>/",
        admin.site.admin_view(collection_view),
        name="rag-admin-collection",
    ),
    path(
        "<slug:owner>/<str:name>/<str:document_id>/",
        admin.site.admin_view(document_view),
        name="rag-admin-document",
    ),
    path(
        "<slug:owner>/<str:name>/<str:document_id>/file/",
        admin.site.admin_view(file_view),
        name="rag-admin-file",
    ),
]
