"""The portal's shared runtime objects: the answering LLM's connections, the embedding model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from django.conf import settings

from portal.rag import runtime
from rag_plugin.embedding.cache import InMemoryEmbeddingCache
from rag_plugin.embedding.fastembed_backend import BUNDLED_MODEL, model_load_count
from tests.conftest import LLM_REPLY
from tests.rag_plugin.llama_index.fake_llm_server import FakeLLMServer


@pytest.fixture
def configured(fake_llm: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> FakeLLMServer:
    """The RAG settings with ``fake_llm`` as the deployment's LLM."""
    rag: dict[str, Any] = {**settings.RAG, "LLM_URL": fake_llm.api_base, "LLM_MODEL": "m"}
    monkeypatch.setattr(settings, "RAG", rag)
    return fake_llm


def test_calls_that_run_to_their_end_share_the_process_pool_of_connections(
    configured: FakeLLMServer,
) -> None:
    first, second = runtime.llm(), runtime.llm()
    assert first is not None
    assert second is not None
    # One client for the process: no certificate store loaded, no connection opened, per call.
    shared = first._http_client  # type: ignore[attr-defined]
    assert isinstance(shared, httpx.Client)
    assert second._http_client is shared  # type: ignore[attr-defined]
    assert str(first.complete("one")) == str(second.complete("two")) == LLM_REPLY


def test_a_stream_gets_the_connections_it_is_given(configured: FakeLLMServer) -> None:
    with runtime.llm_http_client() as own:
        model = runtime.llm(http_client=own)
        assert model is not None
        assert model._http_client is own  # type: ignore[attr-defined]
        assert own is not runtime.llm()._http_client  # type: ignore[union-attr]
    assert isinstance(own, httpx.Client)
    assert own.is_closed


@pytest.mark.model
def test_a_worker_loads_and_warms_the_one_model_its_jobs_use(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # A fresh models root: every load here is a new entry of the process's registry.
    monkeypatch.setenv("RAG_MODEL_DIR", str(tmp_path))
    monkeypatch.setattr(runtime, "_models", {})
    rag = {**settings.RAG, "EMBEDDER": "fastembed", "EMBEDDING_MODEL": BUNDLED_MODEL}
    monkeypatch.setattr(settings, "RAG", {**rag, "EMBEDDING_THREADS": 1})
    before = model_load_count(BUNDLED_MODEL)

    runtime.warm_embedder()
    warmed = model_load_count(BUNDLED_MODEL) - before
    runtime._new_embedder(InMemoryEmbeddingCache()).embed(["a job's text"])

    assert warmed == 1  # the name's probe and the warm-up share one load
    assert model_load_count(BUNDLED_MODEL) - before == 1  # and so does the jobs' embedder
