"""The collections page: the user's own and the tenant's shared collections, creating one and
deleting one of the user's."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from portal.rag import selectors, services
from portal.rag.errors import SourceNotAllowedError
from portal.workspace.access import member, user_of
from portal.workspace.forms import CollectionForm
from rag_plugin.exceptions import RagError
from tenants.selectors import enabled_rag_sources, tenant_admins


def _page(request: HttpRequest, form: CollectionForm, status: int = 200) -> HttpResponse:
    user = user_of(request)
    own = selectors.collection_list(user=user)
    taken = {info.name for info in own}
    return render(
        request,
        "workspace/collections.html",
        {
            "own": own,
            "shared": selectors.collection_list(user=user, shared=True),
            "form": form,
            # Names a new collection may have: allowed, and not one of the user's yet.
            "allowed": sorted(enabled_rag_sources() - taken),
        },
        status=status,
    )


@require_GET
@member
def collections_view(request: HttpRequest) -> HttpResponse:
    """The user's collections and the tenant's shared ones, with their counts."""
    return _page(request, CollectionForm())


@require_POST
@member
def collection_create_view(request: HttpRequest) -> HttpResponse:
    """Create an empty collection of the user's; a name the allowlist lacks is refused with
    whom to ask."""
    form = CollectionForm(request.POST)
    if not form.is_valid():
        return _page(request, form, status=400)
    name = form.cleaned_data["name"]
    try:
        services.collection_create(user=user_of(request), collection=name)
    except SourceNotAllowedError as exc:
        admins = tenant_admins()
        ask = f" Ask {', '.join(admins)}." if admins else ""
        form.add_error("name", f"{exc}{ask}")
        return _page(request, form, status=403)
    except RagError as exc:
        form.add_error("name", str(exc))
        return _page(request, form, status=400)
    messages.success(request, f"Created the collection '{name}'. Add documents to it below.")
    return HttpResponseRedirect(reverse("workspace:collection", args=[name]))


@require_POST
@member
def collection_delete_view(request: HttpRequest, name: str) -> HttpResponse:
    """Delete one of the user's collections with all its documents and their files."""
    deleted = services.collection_delete(user=user_of(request), collection=name)
    messages.success(request, f"Deleted the collection '{name}' and its {deleted} documents.")
    return HttpResponseRedirect(reverse("workspace:collections"))
