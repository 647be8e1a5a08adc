"""The retrieval playground (SPEC T6) in process: what the page shows is the library's own
explanation of the context endpoint's retrieval, bad input is a message on the page, and a
run writes nothing anywhere in the database.

Documents are ingested with the deterministic fake embedder (the dense leg's order does not
matter here; the lexical legs' and the fusion's arithmetic do).
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django_tenants.utils import schema_context

from portal.rag.context_retrieval import profile_context
from portal.rag.playground import PlaygroundCollection, PlaygroundQuery, playground_run
from portal.rag.services import NewDocument, documents_ingest
from rag_plugin.exceptions import InvalidInputError
from tenants.models import AuditEvent, ProfileCollection, RetrievalProfile

pytestmark = [
    pytest.mark.django_db(transaction=False),
    pytest.mark.usefixtures("rag_pool_closed_after", "fake_embedder"),
]

ACME = "acme.localhost"
PAGE = "/admin/rag/playground/"
DOCUMENTS = [
    NewDocument(
        "Refunds are paid within thirty days of a written request to the billing team.",
        title="Refunds",
        source="refunds.md",
        metadata={"topic": "billing"},
    ),
    NewDocument(
        "Invoices are sent by the billing team on the first day of every month.",
        title="Invoices",
        source="invoices.md",
        metadata={"topic": "billing"},
    ),
    NewDocument(
        "Holiday requests go to the team lead at least two weeks ahead.",
        title="Holidays",
        source="holidays.md",
        metadata={"topic": "people"},
    ),
]


@pytest.fixture
def admin_user(acme: None) -> User:
    return User.objects.create(username="pg_admin", is_staff=True, is_superuser=True)


@pytest.fixture
def alice(acme: None) -> User:
    return User.objects.create(username="pg_alice")


@pytest.fixture
def shared(admin_user: User, source: str) -> str:
    """A shared collection holding DOCUMENTS."""
    documents_ingest(user=admin_user, collection=source, documents=DOCUMENTS, shared=True)
    return source


@pytest.fixture
def profile(shared: str) -> RetrievalProfile:
    made = RetrievalProfile.objects.create(name=f"p-{shared}", min_relevance=0.0)
    ProfileCollection.objects.create(profile=made, collection=shared, shared=True)
    return made


@pytest.fixture
def admin_client(admin_user: User) -> Client:
    client = Client(HTTP_HOST=ACME)
    with schema_context("acme"):
        client.force_login(admin_user)
    return client


def fingerprint() -> dict[str, tuple[int, str]]:
    """Every table of the tenant's and the public schema: its rows and a digest of them."""
    found = {}
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT schemaname, tablename FROM pg_tables WHERE schemaname IN ('acme', 'public')"
        )
        for schema, table in cursor.fetchall():
            name = f"{connection.ops.quote_name(schema)}.{connection.ops.quote_name(table)}"
            cursor.execute(
                f"SELECT count(*), md5(coalesce(string_agg(t::text, '|' ORDER BY t::text), '')) "  # noqa: S608
                f"FROM {name} t"
            )
            found[f"{schema}.{table}"] = tuple(cursor.fetchone())
    return found


def test_the_page_explains_a_profile_and_writes_nothing(
    admin_client: Client, admin_user: User, profile: RetrievalProfile, shared: str
) -> None:
    before = fingerprint()
    events = AuditEvent.objects.count()
    page = admin_client.get(
        PAGE, {"q": "refunds billing", "profile": profile.name, "as_user": admin_user.pk}
    )
    assert page.status_code == 200
    assert fingerprint() == before  # not a row added, changed or removed, cache included
    assert AuditEvent.objects.count() == events

    result = page.context["result"]
    assert page.context["error"] == ""
    (view,) = result.collections
    assert view.label == shared
    assert [(leg.leg, leg.name) for leg in view.legs] == [
        ("semantic", "dense"),
        ("bm25", "BM25"),
        ("fuzzy", "fuzzy"),
    ]
    assert [leg.weight for leg in view.legs] == [0.5, 0.5, 0.1]
    bm25 = view.legs[1]
    assert [row.chunk.title for row in bm25.rows][:2] == ["Refunds", "Invoices"]
    for row in view.fused:
        assert math.fsum(c.value for c in row.contributions) == pytest.approx(row.score, abs=0)
        for c in row.contributions:
            assert c.value == c.weight / (view.rrf_k + c.rank)
    # The context is the context endpoint's, numbered as the LLM gets it.
    asked = profile_context(user=admin_user, query="refunds billing", profile=profile.name)
    assert result.context == asked.context.context
    # The context endpoint caches the question's embedding: the digest sees such a write.
    assert fingerprint() != before
    assert result.context.startswith("[Document 1]")
    assert "Question: refunds billing" in result.prompt
    assert result.context in result.prompt
    html = page.content.decode()
    assert 'data-leg="bm25"' in html
    assert "[Document 1]" in html


def test_the_rerank_s_effect_is_each_passage_s_rank_before_and_after(
    admin_user: User, profile: RetrievalProfile
) -> None:
    def run(rerank: str) -> Any:
        return playground_run(
            actor=admin_user,
            request=PlaygroundQuery("refunds billing", profile=profile.name, rerank=rerank),
        )

    off, lexical = run("off"), run("lexical")
    assert [row.rank_before_rerank for row in off.context_rows] == [1, 2, 3]
    assert all(row.rerank is None for row in off.context_rows)
    assert sorted(row.rank_before_rerank for row in lexical.context_rows) == [1, 2, 3]
    assert all(row.rerank and row.rerank["mode"] == "lexical" for row in lexical.context_rows)
    assert (off.settings["rerank"], lexical.settings["rerank"]) == ("off", "lexical")


def test_collections_of_any_owner_typo_correction_and_filters(
    admin_user: User, alice: User, shared: str, source: str
) -> None:
    documents_ingest(user=alice, collection=source, documents=DOCUMENTS[2:])
    result = playground_run(
        actor=admin_user,
        request=PlaygroundQuery(
            "refnds",
            collections=[PlaygroundCollection(source), PlaygroundCollection(source, alice.pk)],
            correct_typos=True,
            filters_json='{"key": "topic", "operator": "==", "value": "billing"}',
            rerank="off",
        ),
    )
    assert [view.label for view in result.collections] == [source, f"{source} (pg_alice)"]
    mine, hers = result.collections
    assert (mine.corrected_query, mine.corrections) == ("refunds", ["refnds → refunds"])
    assert [leg.query for leg in mine.legs] == ["refnds", "refunds", "refunds"]
    # The filter keeps billing passages only: alice's one document is about people.
    assert {row.chunk.title for row in mine.fused} == {"Refunds", "Invoices"}
    assert hers.fused == []
    assert [row.chunk.title for row in result.context_rows] == ["Refunds", "Invoices"]
    assert result.settings["correct_typos"] is True


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({"q": "  "}, "Type a question"),
        ({"q": "x"}, "Choose a retrieval profile or at least one collection."),
        ({"q": "x", "collection": "shared/dcos"}, "RAG source 'dcos' is not allowed"),
        ({"q": "x", "collection": "nowhere"}, "'nowhere' names no collection"),
        ({"q": "x", "profile": "nope"}, "Retrieval profile 'nope' not found"),
        ({"q": "x", "k": "many"}, "Passages (k) must be a whole number"),
        ({"q": "x", "k": "0", "collection": "shared/{src}"}, "retrieval_k must be an integer"),
        ({"q": "x", "collection": "shared/{src}", "filters": "{topic"}, "not valid JSON"),
        (
            {"q": "x", "collection": "shared/{src}", "filters": '{"key": "a", "operator": "~"}'},
            "operator",
        ),
        ({"q": "x", "collection": "shared/{src}", "rerank": "best"}, "lexical, cross-encoder"),
        ({"q": "x", "profile": "{profile}", "collection": "shared/{src}"}, "not both"),
    ],
)
def test_bad_input_is_a_message_on_the_page(
    admin_client: Client,
    profile: RetrievalProfile,
    shared: str,
    query: dict[str, str],
    message: str,
) -> None:
    params = {
        key: value.replace("{src}", shared).replace("{profile}", profile.name)
        for key, value in query.items()
    }
    page = admin_client.get(PAGE, params)
    assert page.status_code == 200
    assert message in page.context["error"]
    assert page.context["result"] is None
    assert "playground-error" in page.content.decode()


def test_an_unknown_collection_of_an_allowlisted_source_is_named(
    admin_client: Client, source: str
) -> None:
    page = admin_client.get(PAGE, {"q": "x", "collection": f"shared/{source}"})
    assert f"Collection '{source}' not found" in page.context["error"]


def test_only_tenant_admins_run_it(alice: User, shared: str) -> None:
    alice.is_staff = True
    alice.save()
    client = Client(HTTP_HOST=ACME)
    with schema_context("acme"):
        client.force_login(alice)
    assert client.get(PAGE, {"q": "x", "collection": f"shared/{shared}"}).status_code == 403
    with pytest.raises(InvalidInputError, match="Type a question"):
        playground_run(actor=User(is_superuser=True), request=PlaygroundQuery(" "))
