"""The chat page: a conversation over a retrieval profile or the collections the user picks.

The page holds the conversation; each turn is a streamed ``POST /api/rag/chat`` (the API's
chat, with the login session and the CSRF token), read by ``static/workspace/chat.js``: the
sources first, the answer as it is written, then its footnotes as links to the cited
passages at their pages. Without an LLM the sources come with the API's message that no LLM
is configured.
"""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET

from portal.rag.context_retrieval import profile_list
from portal.rag.runtime import llm_configured
from portal.workspace.access import member, user_of
from portal.workspace.search import collection_choices

PASSAGE_PLACEHOLDER = ("DOCUMENT", 0)
"""The arguments of the passage URL the page gives its script, which puts in a source's own."""


@require_GET
@member
def chat_view(request: HttpRequest) -> HttpResponse:
    """The chat form: the profiles and collections to ask, and the conversation so far."""
    return render(
        request,
        "workspace/chat.html",
        {
            "profiles": profile_list(),
            "choices": collection_choices(user_of(request)),
            "llm_configured": llm_configured(),
            "chat_url": reverse("api-chat"),
            "passage_url": reverse("workspace:passage", args=PASSAGE_PLACEHOLDER),
            "max_messages": int(settings.RAG_API["MAX_CHAT_MESSAGES"]),
            "max_chars": int(settings.RAG_API["MAX_CHAT_MESSAGE_CHARS"]),
        },
    )
