"""Tenant-admin pages for RAG data (SPEC T5): browse collections and documents, delete them.

The data lives in the tenant's RAG store, not in Django models, so these are plain admin
views wrapped by ``admin.site.admin_view`` (staff only) rather than ModelAdmins.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.db import connection
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import path, reverse
from django.views.decorators.http import require_http_methods

from portal.rag.runtime import store_for
from rag_plugin.exceptions import NotFoundError
from rag_plugin.stores.base import CollectionInfo, Store

SHARED = "shared"


@dataclass(frozen=True)
class Owner:
    """A collection owner as the admin shows it: the URL slug, the label, the store key."""

    slug: str
    label: str
    key: str | None


def _owners() -> list[Owner]:
    users = get_user_model().objects.order_by("username")
    return [Owner(SHARED, "(shared)", None)] + [
        Owner(f"user-{u.pk}", u.get_username(), f"user:{u.pk}") for u in users
    ]


def _owner(slug: str) -> Owner:
    for owner in _owners():
        if owner.slug == slug:
            return owner
    raise Http404(f"No owner {slug}")


def _store(request: HttpRequest) -> Store:
    if not request.user.is_superuser:
        raise PermissionDenied("Only tenant admins manage RAG data.")
    return store_for(connection.schema_name)  # type: ignore[attr-defined]


def _collection(store: Store, owner: Owner, name: str) -> CollectionInfo:
    try:
        return store.get_collection(name, owner=owner.key)
    except NotFoundError as exc:
        raise Http404(str(exc)) from None


def _context(request: HttpRequest, title: str, **extra: object) -> dict[str, object]:
    return {**admin.site.each_context(request), "title": title, **extra}


@require_http_methods(["GET", "POST"])
def collections_view(request: HttpRequest) -> HttpResponse:
    """Every collection of the tenant, by owner; POST deletes one."""
    store = _store(request)
    if request.method == "POST":
        owner = _owner(request.POST.get("owner", ""))
        name = request.POST.get("collection", "")
        try:
            deleted = store.delete_collection(name, owner=owner.key)
        except NotFoundError as exc:
            messages.error(request, str(exc))
        else:
            messages.success(
                request, f"Deleted collection '{name}' of {owner.label} ({deleted} documents)."
            )
        return HttpResponseRedirect(reverse("rag-admin-collections"))
    rows = [
        (owner, info) for owner in _owners() for info in store.list_collections(owner=owner.key)
    ]
    return render(
        request, "admin/rag/collections.html", _context(request, "RAG collections", rows=rows)
    )


@require_http_methods(["GET", "POST"])
def collection_view(request: HttpRequest, owner: str, name: str) -> HttpResponse:
    """The documents of one collection; POST deletes one document."""
    store = _store(request)
    who = _owner(owner)
    info = _collection(store, who, name)
    if request.method == "POST":
        document_id = request.POST.get("document", "")
        try:
            store.delete_document(info, document_id)
        except NotFoundError as exc:
            messages.error(request, str(exc))
        else:
            messages.success(request, f"Deleted document {document_id}.")
        return HttpResponseRedirect(reverse("rag-admin-collection", args=[owner, name]))
    documents = store.list_documents(info, limit=1000)
    return render(
        request,
        "admin/rag/collection.html",
        _context(
            request, f"Collection {name} of {who.label}", owner=who, info=info, documents=documents
        ),
    )


def document_view(request: HttpRequest, owner: str, name: str, document_id: str) -> HttpResponse:
    """One document with its chunks and their exact offsets (read-only)."""
    store = _store(request)
    who = _owner(owner)
    info = _collection(store, who, name)
    try:
        document = store.get_document(info, document_id)
    except NotFoundError as exc:
        raise Http404(str(exc)) from None
    chunks = store.document_chunks(info, document_id)
    return render(
        request,
        "admin/rag/document.html",
        _context(
            request,
            f"Document {document.title or document.id}",
            owner=who,
            info=info,
            document=document,
            chunks=chunks,
        ),
    )


urlpatterns = [
    path("", admin.site.admin_view(collections_view), name="rag-admin-collections"),
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
]
