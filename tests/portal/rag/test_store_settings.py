"""``RAG_STORE`` and ``RAG_QDRANT_*``: which store the portal builds, and bad settings named."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.conf import settings
from django.db.models.signals import post_delete

from portal.checks import embedding_settings, rag_store_settings, replica_settings
from portal.rag import runtime
from rag_plugin.embedding.cache import InMemoryEmbeddingCache
from rag_plugin.embedding.fastembed_backend import FastEmbedEmbedder
from rag_plugin.exceptions import ConfigurationError
from rag_plugin.stores.qdrant import QdrantEmbeddingCache, QdrantStore
from tenants.models import Tenant


@pytest.fixture
def configure(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Set ``RAG["STORE"]`` and ``RAG["QDRANT"]`` for one test; the process's stores and
    Qdrant client are forgotten before and after."""

    def apply(store: str, **qdrant: Any) -> None:
        block = {**settings.RAG["QDRANT"], "URL": "", "PATH": "", "API_KEY_ENV": "", **qdrant}
        monkeypatch.setattr(settings, "RAG", {**settings.RAG, "STORE": store, "QDRANT": block})
        forget()

    def forget() -> None:
        if runtime.backend_store.cache_info().currsize:
            runtime.backend_store().close()
        runtime.backend_store.cache_clear()
        for schema in [s for s, store in runtime._stores.items() if isinstance(store, QdrantStore)]:
            del runtime._stores[schema]
        for schema in [
            s for s, cache in runtime._caches.items() if isinstance(cache, QdrantEmbeddingCache)
        ]:
            del runtime._caches[schema]

    yield apply
    forget()


def test_an_unknown_store_is_named(configure: Any) -> None:
    configure("qdrnt")
    with pytest.raises(
        ConfigurationError, match=r"Unknown RAG_STORE: 'qdrnt'\. Use: postgres, qdrant"
    ):
        runtime.store_for("acme_settings_test")
    [error] = rag_store_settings()
    assert error.id == "portal.E001"
    assert "RAG_STORE" in error.msg


def test_qdrant_needs_exactly_one_of_url_and_path(configure: Any) -> None:
    configure("qdrant")
    with pytest.raises(ConfigurationError, match=r"RAG_QDRANT_URL .* RAG_QDRANT_PATH"):
        runtime.store_for("acme_settings_test")
    configure("qdrant", URL="http://localhost:6334", PATH="/tmp/q")
    assert "RAG_QDRANT_URL" in rag_store_settings()[0].msg


def test_a_missing_api_key_variable_is_named_at_start_up(
    configure: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RAG_TEST_MISSING_KEY", raising=False)
    configure("qdrant", URL="http://localhost:6334", API_KEY_ENV="RAG_TEST_MISSING_KEY")
    [error] = rag_store_settings()
    assert "RAG_QDRANT_API_KEY_ENV" in error.msg
    assert "RAG_TEST_MISSING_KEY" in error.msg


def test_an_unreachable_qdrant_is_named_at_first_use(configure: Any) -> None:
    configure("qdrant", URL="http://127.0.0.1:9")
    assert rag_store_settings() == []
    store = runtime.store_for("acme_settings_test")
    with pytest.raises(ConfigurationError, match=r"http://127\.0\.0\.1:9.*cannot be reached"):
        store.list_collections()


def test_each_tenant_is_a_namespace_of_one_qdrant_client(configure: Any) -> None:
    configure("qdrant", PATH=":memory:")
    acme, globex = runtime.store_for("acme_settings_test"), runtime.store_for("globex_test")
    assert isinstance(acme, QdrantStore)
    assert isinstance(globex, QdrantStore)
    assert (acme.namespace, globex.namespace) == ("acme_settings_test", "globex_test")
    assert runtime.store_for("acme_settings_test") is acme
    acme.create_collection("docs", dimensions=4, embedding_model="m")
    assert globex.list_collections() == []
    runtime.drop_tenant_data("acme_settings_test")
    assert runtime.store_for("acme_settings_test").list_collections() == []


def test_with_qdrant_the_embedding_cache_is_kept_in_the_tenants_namespace(
    configure: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(settings, "RAG", {**settings.RAG, "EMBEDDER": "fake"})
    configure("qdrant", PATH=":memory:")
    runtime.embedder_for("acme_settings_test").embed(["walrus tusks"])
    again = runtime.embedder_for("acme_settings_test")
    again.embed(["walrus tusks"])
    other = runtime.embedder_for("globex_test")
    other.embed(["walrus tusks"])
    assert (again.stats.cache_hits, other.stats.cache_hits) == (1, 0)
    assert isinstance(runtime._caches["acme_settings_test"], QdrantEmbeddingCache)
    runtime.drop_tenant_data("acme_settings_test")
    qdrant = runtime.backend_store()
    assert isinstance(qdrant, QdrantStore)
    assert len(qdrant.for_namespace("acme_settings_test").embedding_cache()) == 0
    assert len(qdrant.for_namespace("globex_test").embedding_cache()) == 1


@pytest.mark.django_db
def test_deleting_a_tenant_deletes_its_qdrant_namespace(configure: Any) -> None:
    configure("qdrant", PATH=":memory:")
    store = runtime.store_for("gone_tenant_test")
    store.create_collection("docs", dimensions=4, embedding_model="m")
    # What Tenant.delete() sends once django-tenants has dropped the schema.
    post_delete.send(sender=Tenant, instance=Tenant(schema_name="gone_tenant_test"))
    assert runtime.store_for("gone_tenant_test").list_collections() == []


def test_bad_replica_settings_are_named(monkeypatch: pytest.MonkeyPatch) -> None:
    replicas = {
        "URLS": ["postgresql://replica1/portal", "host=replica2 port"],
        "MAX_LAG_S": 0.0,
        "WAIT_S": -1.0,
        "CHECK_EVERY_S": 1.0,
    }
    monkeypatch.setattr(settings, "RAG", {**settings.RAG, "REPLICAS": replicas})
    errors = replica_settings()
    assert [(e.id, e.msg.split(":")[0].split(" ")[0]) for e in errors] == [
        ("portal.E002", "DATABASE_REPLICA_URLS"),
        ("portal.E003", "RAG_REPLICA_MAX_LAG_S"),
        ("portal.E003", "RAG_REPLICA_WAIT_S"),
    ]
    assert "entry 2" in errors[0].msg
    monkeypatch.setattr(
        settings,
        "RAG",
        {
            **settings.RAG,
            "STORE": "qdrant",
            "REPLICAS": {
                **replicas,
                "URLS": ["postgresql://replica1/portal"],
                "MAX_LAG_S": 5.0,
                "WAIT_S": 0.2,
            },
        },
    )
    assert [e.id for e in replica_settings()] == ["portal.E004"]
    assert runtime.replica_set.__wrapped__() is None  # Qdrant: no standbys to read on


def test_embedding_threads_reach_the_model_and_bad_ones_are_named(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(
        settings, "RAG", {**settings.RAG, "EMBEDDER": "fastembed", "EMBEDDING_THREADS": 1}
    )
    embedder = runtime._new_embedder(InMemoryEmbeddingCache())
    assert isinstance(embedder, FastEmbedEmbedder)
    assert embedder.threads == 1
    assert embedding_settings() == []
    monkeypatch.setattr(settings, "RAG", {**settings.RAG, "EMBEDDING_THREADS": 0})
    assert runtime._new_embedder(InMemoryEmbeddingCache()).threads is None  # type: ignore[attr-defined]
    monkeypatch.setattr(settings, "RAG", {**settings.RAG, "EMBEDDING_THREADS": -2})
    assert [e.id for e in embedding_settings()] == ["portal.E005"]
