"""One chat turn's steps (``rag_plugin.llama_index.chat``) against the loopback LLM server."""

from __future__ import annotations

import pytest
from llama_index.core.llms import ChatMessage, MessageRole

from rag_plugin.citations import build_context_result
from rag_plugin.exceptions import InvalidInputError
from rag_plugin.llama_index.chat import (
    DEFAULT_CONDENSE_PROMPT,
    chat_answer,
    condense_question,
    heuristic_query,
    stream_chat_answer,
    validate_condense_prompt,
    validate_messages,
)
from rag_plugin.llama_index.query_engine import NO_CONTEXT, openai_compatible_llm
from tests.rag_plugin.llama_index.fake_llm_server import fake_llm_server

USER, ASSISTANT = MessageRole.USER, MessageRole.ASSISTANT
TURNS = [
    ChatMessage(role=USER, content="What is the refund policy?"),
    ChatMessage(role=ASSISTANT, content="Refunds go to the card [1]."),
    ChatMessage(role=USER, content="how long does it take?"),
]


def test_condense_sends_the_history_and_the_question_and_returns_the_rewrite() -> None:
    with fake_llm_server("  How long do refunds take?\n") as server:
        llm = openai_compatible_llm(server.api_base, "m", max_retries=0, timeout=10)
        assert condense_question(llm, TURNS) == "How long do refunds take?"
        (prompt,) = server.prompts()
    assert "user: What is the refund policy?\nassistant: Refunds go to the card [1]." in prompt
    assert "Follow Up Input: how long does it take?" in prompt
    assert "{chat_history}" in DEFAULT_CONDENSE_PROMPT


def test_condense_without_history_or_with_an_empty_reply_keeps_the_question() -> None:
    with fake_llm_server("   ") as server:
        llm = openai_compatible_llm(server.api_base, "m", max_retries=0, timeout=10)
        assert condense_question(llm, TURNS[:1]) == TURNS[0].content
        assert server.requests == []  # no history: no call
        assert condense_question(llm, TURNS) == TURNS[-1].content


def test_the_heuristic_query_is_the_previous_user_message_then_the_question() -> None:
    assert heuristic_query(TURNS) == "What is the refund policy?\nhow long does it take?"
    assert heuristic_query(TURNS[:1]) == "What is the refund policy?"


def test_the_answer_gets_the_numbered_context_as_system_prompt_then_the_turns() -> None:
    context = build_context_result([])
    with fake_llm_server("Thirty days [1], as [7] says.") as server:
        llm = openai_compatible_llm(server.api_base, "m", max_retries=0, timeout=10)
        reply = chat_answer(llm, TURNS, context)
        (request,) = server.requests
    assert [m["role"] for m in request["messages"]] == ["system", "user", "assistant", "user"]
    assert NO_CONTEXT in request["messages"][0]["content"]
    assert reply.result.answer == "Thirty days [1], as [7] says."
    assert reply.result.cited == ()  # no sources: every footnote is invented
    assert reply.usage == {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}


@pytest.mark.parametrize(
    ("messages", "says"),
    [
        ([], "empty"),
        (TURNS[:2], "last message must be the user's"),
        ([ChatMessage(role=MessageRole.SYSTEM, content="obey")], "role"),
        ([ChatMessage(role=USER, content=" ")], "content is empty"),
    ],
)
def test_bad_turns_are_refused(messages: list[ChatMessage], says: str) -> None:
    with pytest.raises(InvalidInputError, match=says):
        validate_messages(messages)


def test_a_condense_prompt_must_name_its_two_fields() -> None:
    assert validate_condense_prompt("{chat_history} / {question}") == "{chat_history} / {question}"
    with pytest.raises(InvalidInputError, match=r"\{question\}"):
        validate_condense_prompt("History: {chat_history}")


def test_a_streamed_answer_yields_the_deltas_then_gives_the_citations() -> None:
    with fake_llm_server("Thirty days [1].") as server:
        llm = openai_compatible_llm(server.api_base, "m", max_retries=0, timeout=10)
        deltas, result = stream_chat_answer(llm, TURNS, build_context_result([]))
        assert server.requests == []  # nothing is asked before the first delta is read
        assert list(deltas) == ["Thirty", " days", " [1]."]
        (request,) = server.requests
    assert request["stream"] is True
    assert [m["role"] for m in request["messages"]] == ["system", "user", "assistant", "user"]
    assert result().result.answer == "Thirty days [1]."
