"""The business layer's writes in process (``portal.rag.services``): a user's own deletes go
through the allowlist and their scope; a tenant admin's (the admin pages') reach any owner's
collection whatever the allowlist says, and only a tenant admin's; each is audited with who
acted and whose data it was.

Documents are ingested with the deterministic fake embedder (vector values don't matter here).
"""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from portal.rag import services
from portal.rag.errors import ForbiddenError, SourceNotAllowedError
from portal.rag.runtime import store_for
from portal.rag.scope import owner_for
from portal.rag.services import NewDocument, documents_ingest
from rag_plugin.exceptions import CollectionNotFoundError, DocumentNotFoundError
from tenants.models import AuditEvent, RagSource

pytestmark = [
    pytest.mark.django_db(transaction=False),
    pytest.mark.usefixtures("rag_pool_closed_after", "fake_embedder"),
]

DOCUMENTS = [
    NewDocument("Refunds are paid within thirty days.", title="Refunds", source="refunds.md"),
    NewDocument("Invoices are sent on the first day.", title="Invoices", source="invoices.md"),
]


@pytest.fixture
def admin_user(acme: None) -> User:
    return User.objects.create(username="sv_admin", is_staff=True, is_superuser=True)


@pytest.fixture
def staff_user(acme: None) -> User:
    """Staff (may write shared collections through the API) but not a tenant admin."""
    return User.objects.create(username="sv_staff", is_staff=True)


@pytest.fixture
def alice(acme: None) -> User:
    return User.objects.create(username="sv_alice")


def _document_ids(owner: str | None, collection: str) -> set[str]:
    store = store_for("acme")
    info = store.get_collection(collection, owner=owner)
    return {document.id for document in store.list_documents(info)}


def _last_event(action: str) -> AuditEvent:
    return AuditEvent.objects.filter(action=action).order_by("-id")[0]


def test_a_user_deletes_their_own_collection_and_the_audit_names_them(
    alice: User, source: str
) -> None:
    documents_ingest(user=alice, collection=source, documents=DOCUMENTS)

    assert services.collection_delete(user=alice, collection=source) == 2

    with pytest.raises(CollectionNotFoundError):
        store_for("acme").get_collection(source, owner=owner_for(alice))
    event = _last_event("collection.delete")
    assert (event.actor_name, event.object_id) == ("sv_alice", source)
    assert event.before == {"owner": "sv_alice", "shared": False, "documents": 2}


def test_a_users_delete_is_refused_once_the_source_is_disabled(alice: User, source: str) -> None:
    documents_ingest(user=alice, collection=source, documents=DOCUMENTS)
    RagSource.objects.filter(name=source).update(enabled=False)

    with pytest.raises(SourceNotAllowedError):
        services.collection_delete(user=alice, collection=source)
    assert len(_document_ids(owner_for(alice), source)) == 2


def test_a_tenant_admin_deletes_a_users_collection_whatever_the_allowlist_says(
    admin_user: User, alice: User, source: str
) -> None:
    documents_ingest(user=alice, collection=source, documents=DOCUMENTS)
    RagSource.objects.filter(name=source).update(enabled=False)

    deleted = services.admin_collection_delete(actor=admin_user, owner=alice, collection=source)

    assert deleted == 2
    with pytest.raises(CollectionNotFoundError):
        store_for("acme").get_collection(source, owner=owner_for(alice))
    event = _last_event("collection.delete")
    assert event.actor_name == "sv_admin"
    assert event.before == {"owner": "sv_alice", "shared": False, "documents": 2}


def test_only_a_tenant_admin_deletes_as_one(staff_user: User, alice: User, source: str) -> None:
    documents_ingest(user=alice, collection=source, documents=DOCUMENTS)
    events = AuditEvent.objects.count()

    with pytest.raises(ForbiddenError, match="Only tenant admins"):
        services.admin_collection_delete(actor=staff_user, owner=alice, collection=source)
    with pytest.raises(ForbiddenError, match="Only tenant admins"):
        services.admin_document_delete(
            actor=alice, owner=alice, collection=source, document_id="any"
        )

    assert len(_document_ids(owner_for(alice), source)) == 2
    assert AuditEvent.objects.count() == events


def test_a_tenant_admin_deletes_one_document_of_a_shared_collection(
    admin_user: User, source: str
) -> None:
    ingested = documents_ingest(
        user=admin_user, collection=source, documents=DOCUMENTS, shared=True
    )
    refunds, invoices = (result.document.id for result in ingested.results)

    services.admin_document_delete(
        actor=admin_user, owner=None, collection=source, document_id=refunds
    )

    assert _document_ids(None, source) == {invoices}
    event = _last_event("document.delete")
    assert (event.actor_name, event.object_id) == ("sv_admin", refunds)
    assert event.before == {
        "collection": source,
        "owner": "(shared)",
        "shared": True,
        "source": "refunds.md",
        "title": "Refunds",
    }


def test_an_admin_delete_of_a_missing_document_or_collection_changes_nothing(
    admin_user: User, alice: User, source: str
) -> None:
    documents_ingest(user=alice, collection=source, documents=DOCUMENTS)
    events = AuditEvent.objects.count()

    with pytest.raises(DocumentNotFoundError):
        services.admin_document_delete(
            actor=admin_user, owner=alice, collection=source, document_id="missing"
        )
    with pytest.raises(CollectionNotFoundError):  # alice's collection is not a shared one
        services.admin_collection_delete(actor=admin_user, owner=None, collection=source)

    assert len(_document_ids(owner_for(alice), source)) == 2
    assert AuditEvent.objects.count() == events


def test_a_user_deletes_a_document_found_among_their_collections(alice: User, source: str) -> None:
    ingested = documents_ingest(user=alice, collection=source, documents=DOCUMENTS)
    refunds, invoices = (result.document.id for result in ingested.results)

    assert services.document_delete(user=alice, document_id=refunds) == source

    assert _document_ids(owner_for(alice), source) == {invoices}
    with pytest.raises(DocumentNotFoundError):
        services.document_delete(user=alice, document_id=refunds)
    assert _last_event("document.delete").before["owner"] == "sv_alice"
