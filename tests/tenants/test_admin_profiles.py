"""Retrieval profiles in the tenant admin (SPEC R1, issue 34): a profile's collections are
checked when it is saved — a shared one must exist, every one must be an enabled source — and
the list of profiles shows them. A profile naming 'dcos' used to save, then answer every
question from an empty context."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django_tenants.utils import schema_context

from portal.rag.services import document_ingest
from tenants.models import RagSource, RetrievalProfile

pytestmark = [
    pytest.mark.django_db(transaction=False),
    pytest.mark.usefixtures("rag_pool_closed_after"),
]

ACME = "acme.localhost"
ADD = "/admin/tenants/retrievalprofile/add/"


@pytest.fixture(autouse=True)
def _fake_embedder(settings: Any) -> None:
    settings.RAG = {**settings.RAG, "EMBEDDER": "fake"}


@pytest.fixture
def admin_user(acme: None) -> User:
    return User.objects.create(username="profiles_admin", is_staff=True, is_superuser=True)


@pytest.fixture
def admin_client(admin_user: User) -> Client:
    client = Client(HTTP_HOST=ACME)
    with schema_context("acme"):
        client.force_login(admin_user)
    return client


@pytest.fixture
def docs(admin_user: User) -> str:
    """An allowlisted shared collection with one document."""
    name = f"docs_{uuid.uuid4().hex[:8]}"
    RagSource.objects.create(name=name, enabled=True)
    document_ingest(
        user=admin_user,
        collection=name,
        content="The handbook explains holidays and refunds in detail. " * 3,
        shared=True,
    )
    return name


def add_profile(client: Client, name: str, *collections: tuple[str, bool]) -> Any:
    form: dict[str, Any] = {
        "name": name,
        "retrieval_k": 8,
        "min_relevance": 0.05,
        "include_sources": "on",
        "strategy": "hybrid",
        "rerank": "lexical",
        "language": "english",
        "collections-TOTAL_FORMS": len(collections),
        "collections-INITIAL_FORMS": 0,
        "collections-MIN_NUM_FORMS": 0,
        "collections-MAX_NUM_FORMS": 1000,
    }
    for index, (collection, shared) in enumerate(collections):
        form[f"collections-{index}-collection"] = collection
        form[f"collections-{index}-weight"] = 1.0
        form[f"collections-{index}-priority"] = 0
        if shared:
            form[f"collections-{index}-shared"] = "on"
    return client.post(ADD, form)


def errors(page: Any) -> list[str]:
    return [
        str(error)
        for form in page.context["inline_admin_formsets"][0].formset
        for error in form.errors.get("collection", [])
    ]


def test_a_misspelt_shared_collection_is_refused_with_the_close_names(
    admin_client: Client, docs: str
) -> None:
    # Two letters swapped: of the fixed "docs", which always differ (two of the random hex
    # digits were the same in a CI run, which left the name unchanged).
    typo = docs[0] + docs[2] + docs[1] + docs[3:]
    page = add_profile(admin_client, "typo", (typo, True))
    assert page.status_code == 200
    (error,) = errors(page)
    assert error.startswith(f"The tenant has no shared collection '{typo}'")
    assert f"Did you mean '{docs}'?" in error
    assert not RetrievalProfile.objects.filter(name="typo").exists()


def test_a_shared_collection_whose_source_is_disabled_is_refused(
    admin_client: Client, docs: str
) -> None:
    RagSource.objects.filter(name=docs).update(enabled=False)
    page = add_profile(admin_client, "disabled", (docs, True))
    assert errors(page) == [
        f"RAG source '{docs}' is not allowed for this tenant; a tenant admin enables it in "
        "the RAG source allowlist."
    ]


def test_an_own_collection_needs_only_an_enabled_source(admin_client: Client, docs: str) -> None:
    # Each caller's own collection of that name: it exists or not per caller.
    refused = add_profile(admin_client, "own", ("not_enabled_anywhere", False))
    assert "is not allowed for this tenant" in errors(refused)[0]
    saved = add_profile(admin_client, "own", (docs, False), (docs, True))
    assert saved.status_code == 302, errors(saved)
    profile = RetrievalProfile.objects.get(name="own")
    assert sorted(c.shared for c in profile.collections.all()) == [False, True]


def test_the_profile_list_shows_each_profile_s_collections(admin_client: Client, docs: str) -> None:
    assert add_profile(admin_client, "listed", (docs, True)).status_code == 302
    page = admin_client.get("/admin/tenants/retrievalprofile/", {"q": "listed"})
    assert f"{docs} (shared, weight 1.0, priority 0)" in page.content.decode()
    found = admin_client.get("/admin/tenants/retrievalprofile/", {"q": docs})
    assert "listed" in found.content.decode()
