"""The answer path (SPEC R4, R5) against a real OpenAI-compatible HTTP server on loopback."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from llama_index.core.base.response.schema import StreamingResponse
from llama_index.core.llms import LLM
from llama_index.core.prompts import PromptTemplate

from rag_plugin.citations import build_context_result
from rag_plugin.engine import CollectionSearcher
from rag_plugin.exceptions import InvalidInputError
from rag_plugin.llama_index.query_engine import (
    NO_CONTEXT,
    RagQueryEngine,
    answer,
    openai_compatible_llm,
)
from rag_plugin.retrieval import (
    CollectionRef,
    MultiCollectionRetriever,
    RetrievalProfile,
)
from rag_plugin.stores.base import CollectionInfo
from rag_plugin.stores.memory import MemoryStore
from tests.rag_plugin.llama_index.fake_llm_server import FakeLLMServer, fake_llm_server
from tests.rag_plugin.llama_index.policies import CHUNKS, add_policies
from tests.rag_plugin.table_embedder import TableEmbedder

QUESTION = "How long do refunds and shipping take?"
REPLY = "Refunds are paid within 30 days [1]. Shipping takes five working days [2]."


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with fake_llm_server(REPLY) as running:
        yield running


@pytest.fixture
def llm(server: FakeLLMServer) -> LLM:
    return openai_compatible_llm(server.api_base, "test-model", max_retries=0, timeout=10)


@pytest.fixture
def store() -> MemoryStore:
    return MemoryStore()


@pytest.fixture
def collection(store: MemoryStore) -> CollectionInfo:
    return add_policies(store)


@pytest.fixture
def retriever(store: MemoryStore) -> MultiCollectionRetriever:
    table = {**CHUNKS, QUESTION: [1.0, 0.2, 0.0], "Unrelated?": [0.0, 0.0, 1.0]}
    return MultiCollectionRetriever(CollectionSearcher(store, TableEmbedder(table)))


# The dense leg alone: the table embedder decides the order these tests expect.
PROFILE = RetrievalProfile(retrieval_k=2, rerank="off", strategy="semantic")


def test_answer_sends_numbered_context_and_maps_citations(
    server: FakeLLMServer,
    llm: LLM,
    retriever: MultiCollectionRetriever,
    collection: CollectionInfo,
) -> None:
    chunks = retriever.retrieve(QUESTION, [CollectionRef(collection, label="Policies")], PROFILE)
    context = build_context_result(chunks)
    result = answer(llm, QUESTION, context)

    assert server.paths == ["/v1/chat/completions"]
    assert server.requests[0]["model"] == "test-model"
    (prompt,) = server.prompts()
    assert (
        "[Document 1]\nRefunds are paid within 30 days.\n\n---\n\n"
        "[Document 2]\nShipping takes five working days." in prompt
    )
    assert f"Question: {QUESTION}" in prompt
    assert "The office closes" not in prompt
    assert prompt == result.prompt

    assert result.answer == REPLY
    assert result.cited == (1, 2)
    assert [(s.footnote_id, s.excerpt) for s in result.cited_sources] == [
        (1, "Refunds are paid within 30 days."),
        (2, "Shipping takes five working days."),
    ]
    assert [s.chunk_id for s in result.sources] == [c.id for c in chunks]


def test_citations_without_a_source_are_not_mapped(
    retriever: MultiCollectionRetriever, collection: CollectionInfo
) -> None:
    with fake_llm_server("It is 30 days [2], see also [7] and [1].") as server:
        llm = openai_compatible_llm(server.api_base, "m", max_retries=0)
        chunks = retriever.retrieve(QUESTION, [CollectionRef(collection)], PROFILE)
        result = answer(llm, QUESTION, build_context_result(chunks))
    assert result.cited == (2, 1)
    assert [s.footnote_id for s in result.cited_sources] == [2, 1]


def test_without_documents_the_prompt_says_so(server: FakeLLMServer, llm: LLM) -> None:
    result = answer(llm, QUESTION, build_context_result([]))
    assert f"Documents:\n{NO_CONTEXT}\n" in server.prompts()[0]
    assert result.cited == ()  # the canned reply cites [1] and [2], which do not exist
    assert result.sources == ()


def test_custom_prompt(server: FakeLLMServer, llm: LLM) -> None:
    prompt = "Context:\n{context_str}\nQ: {query_str}\nCite as [N]."
    answer(llm, "Why?", build_context_result([]), prompt=prompt)
    assert server.prompts() == [f"Context:\n{NO_CONTEXT}\nQ: Why?\nCite as [N]."]


@pytest.mark.parametrize(
    ("prompt", "message"),
    [
        ("Answer {query_str}", "it lacks {context_str}."),
        (PromptTemplate("Nothing"), "it lacks {context_str}, {query_str}."),
    ],
)
def test_prompts_must_carry_context_and_question(
    llm: LLM, prompt: str | PromptTemplate, message: str
) -> None:
    with pytest.raises(InvalidInputError) as caught:
        answer(llm, "Why?", build_context_result([]), prompt=prompt)
    assert str(caught.value).endswith(message)


def test_empty_question_is_refused(llm: LLM, server: FakeLLMServer) -> None:
    with pytest.raises(InvalidInputError, match="The question is empty"):
        answer(llm, " ", build_context_result([]))
    assert server.requests == []


def test_query_engine_returns_sources_in_footnote_order(
    server: FakeLLMServer,
    llm: LLM,
    retriever: MultiCollectionRetriever,
    collection: CollectionInfo,
) -> None:
    engine = RagQueryEngine(
        retriever,
        [CollectionRef(collection, label="Policies")],
        llm,
        profile=RetrievalProfile(retrieval_k=2, strategy="semantic"),
    )
    response = engine.query(QUESTION)

    assert str(response) == REPLY
    assert response.metadata is not None
    sources = response.metadata["sources"]
    assert [s["footnote_id"] for s in sources] == [1, 2]
    assert [n.node.node_id for n in response.source_nodes] == [s["chunk_id"] for s in sources]
    assert [n.node.get_content() for n in response.source_nodes] == [
        "Refunds are paid within 30 days.",
        "Shipping takes five working days.",
    ]
    assert [n.node.metadata["collection"] for n in response.source_nodes] == ["Policies"] * 2
    # node scores are the rerank scores (lexical by default); relevance stays post-weight
    assert [n.score for n in response.source_nodes] == [s["rerank"]["score"] for s in sources]
    assert [s["relevance"] for s in sources] == [0.981, 0.902]  # cosines 1/1.0198 and 0.92/1.0198
    assert response.metadata["cited"] == [1, 2]
    assert "[Document 2]\nShipping takes five working days." in server.prompts()[0]


def test_a_streaming_query_engine_yields_the_answer_then_its_citations(
    server: FakeLLMServer, llm: LLM, retriever: MultiCollectionRetriever, collection: CollectionInfo
) -> None:
    engine = RagQueryEngine(
        retriever,
        [CollectionRef(collection, label="Policies")],
        llm,
        profile=PROFILE,
        streaming=True,
    )
    response = engine.query(QUESTION)

    assert isinstance(response, StreamingResponse)
    assert response.metadata is not None
    # The sources are known before the first delta; the citations once the stream ends.
    assert [s["footnote_id"] for s in response.metadata["sources"]] == [1, 2]
    assert response.metadata["cited"] == []
    deltas = list(response.response_gen)
    assert len(deltas) > 1  # the server sent a delta per word, and they came one by one
    assert "".join(deltas) == REPLY
    assert response.metadata["cited"] == [1, 2]
    assert server.requests[0]["stream"] is True
    assert "[Document 2]\nShipping takes five working days." in server.prompts()[0]
    assert [n.node.get_content() for n in response.source_nodes] == [
        "Refunds are paid within 30 days.",
        "Shipping takes five working days.",
    ]


def test_query_engine_prompts_can_be_replaced(
    server: FakeLLMServer, llm: LLM, retriever: MultiCollectionRetriever, collection: CollectionInfo
) -> None:
    engine = RagQueryEngine(retriever, [CollectionRef(collection)], llm, profile=PROFILE)
    assert set(engine.get_prompts()) == {"answer_prompt"}
    engine.update_prompts({"answer_prompt": PromptTemplate("{context_str}||{query_str}")})
    engine.query("Unrelated?")
    # "Unrelated?" is nearest to the office chunk (cosine 1.0); refunds score 0 and are dropped
    assert server.prompts() == ["[Document 1]\nThe office closes at five.||Unrelated?"]


@pytest.mark.parametrize(
    ("api_base", "model", "message"),
    [("", "m", "api_base must be a URL"), ("http://127.0.0.1:1/v1", " ", "model must be")],
)
def test_openai_compatible_llm_validates(api_base: str, model: str, message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        openai_compatible_llm(api_base, model)
