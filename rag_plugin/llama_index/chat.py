"""A chat turn over a numbered context: condense the follow-up question, answer with history.

The chatbot seed answers from "System + Context + History" (SPEC R6). One turn is three steps,
the middle one the caller's (the portal retrieves with a profile's collections):

1. :func:`condense_question` — with history, one LLM call rewrites the latest question as a
   stand-alone query (LlamaIndex's own condense prompt by default, as its
   ``CondensePlusContextChatEngine`` uses); without an LLM, :func:`heuristic_query` joins the
   previous user message to the latest one;
2. retrieval for that query, numbered as a :class:`~rag_plugin.citations.ContextResult`;
3. :func:`chat_answer` (or :func:`stream_chat_answer`, delta by delta) — the system prompt
   with the numbered context, then the history and the question as chat messages; the
   answer's ``[N]`` citations are mapped to the sources.

A LlamaIndex pipeline that wants all of it inside LlamaIndex can use the stock
``CondensePlusContextChatEngine`` over :class:`~rag_plugin.llama_index.RagRetriever`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from llama_index.core.chat_engine.condense_plus_context import DEFAULT_CONDENSE_PROMPT_TEMPLATE
from llama_index.core.llms import LLM, ChatMessage, MessageRole
from llama_index.core.prompts import PromptTemplate

from rag_plugin.citations import ContextResult
from rag_plugin.exceptions import InvalidInputError
from rag_plugin.llama_index.query_engine import NO_CONTEXT, AnswerResult, answer_result

__all__ = [
    "DEFAULT_CHAT_SYSTEM_PROMPT",
    "DEFAULT_CONDENSE_PROMPT",
    "ChatAnswer",
    "chat_answer",
    "condense_question",
    "heuristic_query",
    "stream_chat_answer",
    "validate_condense_prompt",
    "validate_messages",
]

DEFAULT_CONDENSE_PROMPT = DEFAULT_CONDENSE_PROMPT_TEMPLATE.strip()
"""LlamaIndex's condense prompt; a replacement must use ``{chat_history}`` and ``{question}``."""

DEFAULT_CHAT_SYSTEM_PROMPT = (
    "You are a helpful assistant. Answer the user's latest question using only the numbered "
    "documents below and the conversation so far. Cite every statement with the number of the "
    "document it comes from in square brackets, for example [1] or [2][3]. Do not cite "
    "documents that are not listed. If the documents do not contain the answer, say that you "
    "do not know.\n\nDocuments:\n{context_str}"
)
"""The chat's system prompt; a replacement must use ``{context_str}``."""

ROLES = (MessageRole.USER, MessageRole.ASSISTANT)


@dataclass(frozen=True, slots=True)
class ChatAnswer:
    """The answer of one chat turn and the LLM's token usage when it reported one."""

    result: AnswerResult
    usage: dict[str, int] | None


def validate_messages(messages: Sequence[ChatMessage]) -> None:
    """Raise :class:`InvalidInputError` unless ``messages`` are user/assistant turns with
    text, the last one the user's question."""
    if not messages:
        raise InvalidInputError("messages is empty; the last message must be the user's question.")
    for position, message in enumerate(messages):
        if message.role not in ROLES:
            raise InvalidInputError(
                f"messages[{position}].role must be 'user' or 'assistant', got {message.role!r}."
            )
        if not (message.content or "").strip():
            raise InvalidInputError(f"messages[{position}].content is empty.")
    if messages[-1].role is not MessageRole.USER:
        raise InvalidInputError("The last message must be the user's question (role 'user').")


def validate_condense_prompt(prompt: str) -> str:
    """``prompt`` if it names both ``{chat_history}`` and ``{question}``; else an error."""
    missing = [name for name in ("chat_history", "question") if "{" + name + "}" not in prompt]
    if missing:
        raise InvalidInputError(
            f"The condense prompt must contain {', '.join('{' + m + '}' for m in missing)}."
        )
    return prompt


def _history_text(messages: Sequence[ChatMessage]) -> str:
    return "\n".join(f"{message.role.value}: {message.content}" for message in messages)


def condense_question(
    llm: LLM, messages: Sequence[ChatMessage], *, prompt: str = DEFAULT_CONDENSE_PROMPT
) -> str:
    """The latest question rewritten from the history as a stand-alone query (one LLM call);
    the question itself when there is no history or the LLM answers with nothing."""
    validate_messages(messages)
    question = str(messages[-1].content)
    if len(messages) == 1:
        return question
    template = PromptTemplate(validate_condense_prompt(prompt))
    condensed = llm.predict(
        template, chat_history=_history_text(messages[:-1]), question=question
    ).strip()
    return condensed or question


def heuristic_query(messages: Sequence[ChatMessage]) -> str:
    """Without an LLM: the previous user message, if any, then the latest one."""
    validate_messages(messages)
    users = [str(m.content) for m in messages if m.role is MessageRole.USER]
    return "\n".join(users[-2:])


def chat_answer(
    llm: LLM,
    messages: Sequence[ChatMessage],
    context: ContextResult,
    *,
    system_prompt: str = DEFAULT_CHAT_SYSTEM_PROMPT,
) -> ChatAnswer:
    """Answer the last message from ``context`` with the conversation as chat history."""
    chat = _answer_messages(messages, context, system_prompt)
    response = llm.chat(chat)
    reply = response.message.content or ""
    return ChatAnswer(answer_result(reply, context, _history_text(chat)), _usage(response.raw))


def stream_chat_answer(
    llm: LLM,
    messages: Sequence[ChatMessage],
    context: ContextResult,
    *,
    system_prompt: str = DEFAULT_CHAT_SYSTEM_PROMPT,
) -> tuple[Iterator[str], Callable[[], ChatAnswer]]:
    """Like :func:`chat_answer`, streamed: the answer's text deltas as the LLM sends them, and
    a function that returns the :class:`ChatAnswer` (citations, usage) once they are read.

    Closing the delta iterator early closes LlamaIndex's stream with it. That alone does not
    end the HTTP request of an OpenAI-compatible LLM (its client's response stays open until
    the garbage collector gets to it): a caller that must end it at once gives the LLM an
    ``http_client`` of its own and closes that, as the portal's chat does.
    """
    chat = _answer_messages(messages, context, system_prompt)
    parts: list[str] = []
    usage: list[dict[str, int]] = []

    def deltas() -> Iterator[str]:
        stream = llm.stream_chat(chat)
        try:
            for response in stream:
                found = _usage(response.raw)
                if found:
                    usage[:] = [found]
                if response.delta:
                    parts.append(response.delta)
                    yield response.delta
        finally:
            close = getattr(stream, "close", None)
            if close is not None:
                close()

    def result() -> ChatAnswer:
        reply = answer_result("".join(parts), context, _history_text(chat))
        return ChatAnswer(reply, usage[0] if usage else None)

    return deltas(), result


def _answer_messages(
    messages: Sequence[ChatMessage], context: ContextResult, system_prompt: str
) -> list[ChatMessage]:
    """The system prompt with the numbered context, then the conversation."""
    validate_messages(messages)
    if "{context_str}" not in system_prompt:
        raise InvalidInputError("The chat system prompt must contain {context_str}.")
    system = system_prompt.replace(
        "{context_str}", context.context if context.sources else NO_CONTEXT
    )
    return [ChatMessage(role=MessageRole.SYSTEM, content=system), *messages]


def _usage(raw: Any) -> dict[str, int] | None:
    """OpenAI's ``usage`` (prompt, completion and total tokens) from a raw chat response."""
    usage = raw.get("usage") if isinstance(raw, dict) else getattr(raw, "usage", None)
    if usage is None:
        return None
    if not isinstance(usage, dict):
        usage = {key: getattr(usage, key, None) for key in _USAGE_KEYS}
    found = {key: usage.get(key) for key in _USAGE_KEYS}
    return {key: int(value) for key, value in found.items() if isinstance(value, int)} or None


_USAGE_KEYS = ("prompt_tokens", "completion_tokens", "total_tokens")
