"""One chat turn (SPEC R6): condense the question, retrieve as the context endpoint does, answer.

The steps are the library's (``rag_plugin.llama_index.chat``); this module picks the LLM, the
condense prompt and the limits of the deployment, and retrieves with
:func:`~portal.rag.context_retrieval.profile_context`, so a chat searches exactly as
``/api/rag/context`` does (profile, weights, rerank, relevance fallback, filters).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ImproperlyConfigured
from llama_index.core.llms import LLM, ChatMessage, MessageRole

from portal.rag.context_retrieval import (
    NO_LLM_MESSAGE,
    ProfileContext,
    RequestedCollection,
    llm_call,
    profile_context,
    resolve_request,
)
from portal.rag.runtime import llm, llm_http_client
from rag_plugin.citations import Source
from rag_plugin.exceptions import InvalidInputError
from rag_plugin.llama_index.chat import (
    DEFAULT_CONDENSE_PROMPT,
    chat_answer,
    condense_question,
    heuristic_query,
    stream_chat_answer,
    validate_condense_prompt,
)


class Condense:
    """How the retrieval query was made from the conversation (the response's ``condense``)."""

    NONE = "none"  # no history: the question itself
    LLM = "llm"  # the LLM rewrote the question from the history
    PREVIOUS_USER_MESSAGE = "previous_user_message"  # no LLM: the last two user messages


@dataclass(frozen=True)
class ChatTurn:
    found: ProfileContext
    condensed_query: str
    condense: str
    answer: str | None
    cited: tuple[int, ...]
    usage: dict[str, int] | None
    message: str | None

    @property
    def sources(self) -> tuple[Source, ...]:
        """The retrieval's sources, those the answer cites first (in citation order), then
        the others in footnote order."""
        by_id = {source.footnote_id: source for source in self.found.sources}
        order = dict.fromkeys(self.cited)
        first = [by_id[n] for n in order if n in by_id]
        return (*first, *(s for s in self.found.sources if s.footnote_id not in order))


Message = tuple[str, str]
"""One message of a conversation: its role (``user`` or ``assistant``) and its text."""


def _chat_messages(messages: Sequence[Message]) -> list[ChatMessage]:
    return [ChatMessage(role=MessageRole(role), content=text) for role, text in messages]


def condense_prompt() -> str:
    """The deployment's condense prompt (``RAG_CHAT_CONDENSE_PROMPT``) or LlamaIndex's."""
    configured = str(settings.RAG.get("CHAT_CONDENSE_PROMPT", ""))
    if not configured:
        return DEFAULT_CONDENSE_PROMPT
    try:
        return validate_condense_prompt(configured)
    except InvalidInputError as exc:  # the deployment's mistake, not the caller's
        raise ImproperlyConfigured(f"RAG_CHAT_CONDENSE_PROMPT: {exc}") from exc


def _bounded(query: str) -> str:
    """At most ``RAG_MAX_QUERY_WORDS`` words: a condensed query is the LLM's, not the user's."""
    words = query.split()
    limit = int(settings.RAG_API["MAX_QUERY_WORDS"])
    return " ".join(words[:limit]) if len(words) > limit else query


@dataclass(frozen=True)
class ChatStream:
    """A turn whose answer is still to come: the retrieval is done, the deltas are not read."""

    found: ProfileContext
    condensed_query: str
    condense: str
    deltas: Iterator[str]
    """Empty when no LLM is configured (then :attr:`message` says so)."""
    finish: Callable[[], ChatTurn]
    """The whole turn (answer, citations, usage) once :attr:`deltas` are read."""
    message: str | None


def _prepare(
    model: LLM | None,
    user: AbstractBaseUser,
    messages: Sequence[ChatMessage],
    profile: str | None,
    collections: Sequence[RequestedCollection],
    overrides: dict[str, Any] | None,
) -> tuple[ProfileContext, str, str]:
    """The retrieval for the condensed question, the query, and how it was made.

    The collections are checked first: a request the caller may not make ends before the
    history reaches the LLM.
    """
    resolved = resolve_request(
        user=user, profile=profile, collections=collections, overrides=overrides
    )
    question = str(messages[-1].content)
    if len(messages) == 1:
        query, how = question, Condense.NONE
    elif model is not None:
        query = llm_call(lambda: condense_question(model, messages, prompt=condense_prompt()))
        how = Condense.LLM
    else:
        query, how = heuristic_query(messages), Condense.PREVIOUS_USER_MESSAGE
    query = _bounded(query)
    found = profile_context(user=user, query=query, resolved=resolved)
    return found, query, how


def profile_chat(
    *,
    user: AbstractBaseUser,
    messages: Sequence[Message],
    profile: str | None = None,
    collections: Sequence[RequestedCollection] = (),
    overrides: dict[str, Any] | None = None,
) -> ChatTurn:
    """Answer the last of ``messages`` from the collections, with the others as history."""
    model = llm()
    chat = _chat_messages(messages)
    found, query, how = _prepare(model, user, chat, profile, collections, overrides)
    if model is None:
        return ChatTurn(found, query, how, None, (), None, NO_LLM_MESSAGE)
    reply = llm_call(lambda: chat_answer(model, chat, found.context))
    return ChatTurn(found, query, how, reply.result.answer, reply.result.cited, reply.usage, None)


def profile_chat_stream(
    *,
    user: AbstractBaseUser,
    messages: Sequence[Message],
    profile: str | None = None,
    collections: Sequence[RequestedCollection] = (),
    overrides: dict[str, Any] | None = None,
) -> ChatStream:
    """Like :func:`profile_chat`, with the answer streamed: condensing and retrieval happen
    here (their errors are the request's), the LLM's answer as the deltas are read.

    The LLM gets connections of its own, closed when the deltas are (read to the end, or
    closed early because the client went away): that ends the upstream request at once,
    which closing LlamaIndex's stream alone does not (the OpenAI client's stream closes its
    response only when the garbage collector gets to it).
    """
    chat = _chat_messages(messages)
    client = llm_http_client()
    try:
        model = llm(http_client=client)
        found, query, how = _prepare(model, user, chat, profile, collections, overrides)
    except BaseException:
        client.close()
        raise
    if model is None:
        client.close()
        turn = ChatTurn(found, query, how, None, (), None, NO_LLM_MESSAGE)
        return ChatStream(found, query, how, iter(()), lambda: turn, NO_LLM_MESSAGE)
    answer_deltas, result = stream_chat_answer(model, chat, found.context)

    def deltas() -> Iterator[str]:
        try:
            yield from answer_deltas
        finally:
            client.close()

    def finish() -> ChatTurn:
        reply = result()
        answer = reply.result
        return ChatTurn(found, query, how, answer.answer, answer.cited, reply.usage, None)

    return ChatStream(found, query, how, deltas(), finish, None)
