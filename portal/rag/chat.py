"""One chat turn (SPEC R6): condense the question, retrieve as the context endpoint does, answer.

The steps are the library's (``rag_plugin.llama_index.chat``); this module picks the LLM, the
condense prompt and the limits of the deployment, and retrieves with
:func:`~portal.rag.profiles.profile_context`, so a chat searches exactly as
``/api/rag/context`` does (profile, weights, rerank, relevance fallback, filters).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ImproperlyConfigured
from llama_index.core.llms import ChatMessage

from portal.api.errors import UpstreamError
from portal.rag.profiles import NO_LLM_MESSAGE, ProfileContext, RequestedCollection, profile_context
from portal.rag.runtime import llm
from rag_plugin.exceptions import InvalidInputError
from rag_plugin.llama_index.chat import (
    DEFAULT_CONDENSE_PROMPT,
    chat_answer,
    condense_question,
    heuristic_query,
    validate_condense_prompt,
)

logger = logging.getLogger("portal.rag")

T = TypeVar("T")


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


def condense_prompt() -> str:
    """The deployment's condense prompt (``RAG_CHAT_CONDENSE_PROMPT``) or LlamaIndex's."""
    configured = str(settings.RAG.get("CHAT_CONDENSE_PROMPT", ""))
    if not configured:
        return DEFAULT_CONDENSE_PROMPT
    try:
        return validate_condense_prompt(configured)
    except InvalidInputError as exc:  # the deployment's mistake, not the caller's
        raise ImproperlyConfigured(f"RAG_CHAT_CONDENSE_PROMPT: {exc}") from exc


def _llm_call(call: Callable[[], T]) -> T:
    try:
        return call()
    except Exception as exc:  # the LLM client's own errors: connection, HTTP, timeout, parsing
        logger.warning("LLM call failed: %s", exc)
        raise UpstreamError(f"The LLM service failed: {exc}") from exc


def _bounded(query: str) -> str:
    """At most ``RAG_MAX_QUERY_WORDS`` words: a condensed query is the LLM's, not the user's."""
    words = query.split()
    limit = int(settings.RAG_API["MAX_QUERY_WORDS"])
    return " ".join(words[:limit]) if len(words) > limit else query


def profile_chat(
    *,
    user: AbstractBaseUser,
    messages: Sequence[ChatMessage],
    profile: str | None = None,
    collections: Sequence[RequestedCollection] = (),
    overrides: dict[str, Any] | None = None,
) -> ChatTurn:
    """Answer the last of ``messages`` from the collections, with the others as history."""
    model = llm()
    question = str(messages[-1].content)
    if len(messages) == 1:
        query, how = question, Condense.NONE
    elif model is not None:
        query = _llm_call(lambda: condense_question(model, messages, prompt=condense_prompt()))
        how = Condense.LLM
    else:
        query, how = heuristic_query(messages), Condense.PREVIOUS_USER_MESSAGE
    query = _bounded(query)
    found = profile_context(
        user=user, query=query, profile=profile, collections=collections, overrides=overrides
    )
    if model is None:
        return ChatTurn(found, query, how, None, (), None, NO_LLM_MESSAGE)
    reply = _llm_call(lambda: chat_answer(model, messages, found.context))
    return ChatTurn(found, query, how, reply.result.answer, reply.result.cited, reply.usage, None)
