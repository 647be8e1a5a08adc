"""Stock LlamaIndex chat engines over our retriever (issue 19, item 2), with a real
OpenAI-compatible HTTP server on loopback as the LLM."""

from __future__ import annotations

import asyncio

from llama_index.core.chat_engine import CondensePlusContextChatEngine
from llama_index.core.llms import ChatMessage, MessageRole
from llama_index.core.memory import ChatMemoryBuffer

from rag_plugin.engine import CollectionSearcher
from rag_plugin.llama_index.query_engine import openai_compatible_llm
from rag_plugin.llama_index.retriever import RagRetriever
from rag_plugin.stores.memory import MemoryStore
from tests.rag_plugin.llama_index.fake_llm_server import fake_llm_server
from tests.rag_plugin.llama_index.policies import CHUNKS, add_policies
from tests.rag_plugin.table_embedder import TableEmbedder

CONDENSED = "How long do refunds take?"
ANSWER = "Refunds are paid within 30 days."


def test_condense_plus_context_retrieves_for_the_condensed_question_and_answers_from_it() -> None:
    store = MemoryStore()
    collection = add_policies(store)
    # The condensed question embeds next to the refunds chunk, so the retrieval shows which
    # question was searched for.
    embedder = TableEmbedder({**CHUNKS, CONDENSED: [1.0, 0.0, 0.0]})
    retriever = RagRetriever(
        CollectionSearcher(store, embedder), collection, strategy="semantic", top_k=1
    )
    history = [
        ChatMessage(role=MessageRole.USER, content="What is the refund policy?"),
        ChatMessage(role=MessageRole.ASSISTANT, content="Refunds are paid to the card."),
    ]
    with fake_llm_server(CONDENSED, ANSWER) as server:
        llm = openai_compatible_llm(server.api_base, "test-model", max_retries=0, timeout=10)
        # The in-process buffer: from_defaults' own Memory opens an aiosqlite connection that
        # LlamaIndex never closes (a ResourceWarning at exit).
        memory = ChatMemoryBuffer.from_defaults(chat_history=history, llm=llm)
        engine = CondensePlusContextChatEngine.from_defaults(
            retriever=retriever, llm=llm, memory=memory
        )
        # LlamaIndex's asyncio_run (token counting in the synthesizer) makes a default event
        # loop and never closes it; give it one this test closes.
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        try:
            response = engine.chat("And how long does that take?")
        finally:
            asyncio.set_event_loop(None)
            loop.close()

    assert response.response == ANSWER
    condense, answer = server.prompts()  # one call condenses, one answers
    assert "What is the refund policy?" in condense
    assert "And how long does that take?" in condense
    assert "Refunds are paid within 30 days." in answer
    assert "The office closes at five." not in answer
    assert [node.node.get_content() for node in response.source_nodes] == [
        "Refunds are paid within 30 days."
    ]
