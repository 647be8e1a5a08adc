"""The portal's shared runtime objects: the answering LLM's connections."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from django.conf import settings

from portal.rag import runtime
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
