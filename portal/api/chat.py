"""``POST /api/rag/chat``: one turn of a conversation over a profile or collections (SPEC R6).

The request is a context request (``portal.api.serializers.ContextInput``) whose question is
the last of ``messages``; the others are the history. The answer's sources list the footnotes
it cites first, in citation order, then the rest.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from drf_spectacular.utils import OpenApiExample, extend_schema, extend_schema_serializer
from llama_index.core.llms import ChatMessage, MessageRole
from rest_framework import serializers
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from portal.api import serializers as s
from portal.api.fields import BoundedListField, InputSerializer, StrictCharField
from portal.api.views import ERRORS, caller, context_body, profile_overrides
from portal.rag.chat import profile_chat
from portal.rag.profiles import RequestedCollection

MAX_CHAT_MESSAGES = int(settings.RAG_API["MAX_CHAT_MESSAGES"])
MAX_CHAT_MESSAGE_CHARS = int(settings.RAG_API["MAX_CHAT_MESSAGE_CHARS"])


class ChatMessageInput(InputSerializer):
    role = serializers.ChoiceField(choices=["user", "assistant"])
    content = StrictCharField(max_length=MAX_CHAT_MESSAGE_CHARS)


@extend_schema_serializer(
    examples=[
        OpenApiExample(
            "A follow-up question with a profile",
            value={
                "profile": "support",
                "messages": [
                    {"role": "user", "content": "Who owns DG Agentur?"},
                    {"role": "assistant", "content": "The Example Group owns it [1]."},
                    {"role": "user", "content": "And where is it located?"},
                ],
            },
            request_only=True,
        ),
        OpenApiExample(
            "A first question over collections with a filter",
            value={
                "collections": [{"name": "docs"}, {"name": "faq", "shared": True}],
                "messages": [{"role": "user", "content": "How do I reset my password?"}],
                "filters": {"key": "topic", "value": "accounts"},
            },
            request_only=True,
        ),
    ]
)
class ChatInput(s.ContextInput):
    query = None  # type: ignore[assignment]  # the question is the last message
    messages = BoundedListField(
        child=ChatMessageInput(),
        min_length=1,
        max_length=MAX_CHAT_MESSAGES,
        help_text="The conversation, oldest first; the last message is the user's question.",
        too_long="{length} messages; the limit is {max_length} (RAG_MAX_CHAT_MESSAGES).",
    )

    def validate_messages(self, value: list[dict[str, str]]) -> list[dict[str, str]]:
        if value and value[-1]["role"] != "user":
            raise serializers.ValidationError(
                "The last message must be the user's question (role 'user')."
            )
        return value


class UsageOutput(serializers.Serializer):  # type: ignore[type-arg]
    prompt_tokens = serializers.IntegerField(required=False)
    completion_tokens = serializers.IntegerField(required=False)
    total_tokens = serializers.IntegerField(required=False)


class ChatOutput(s.AnswerOutput):
    condensed_query = serializers.CharField(
        help_text="The query the collections were searched for."
    )
    condense = serializers.ChoiceField(
        choices=["none", "llm", "previous_user_message"],
        help_text=(
            "How the query was made: the question alone (no history), rewritten by the LLM "
            "from the history, or, without an LLM, the previous user message and the question."
        ),
    )
    usage = UsageOutput(allow_null=True)


class ChatView(APIView):
    """Answer the last message with the conversation as history and [N] citations (R6)."""

    permission_classes = (IsAuthenticated,)

    @extend_schema(request=ChatInput, responses={200: ChatOutput, **ERRORS})
    def post(self, request: Request) -> Response:
        body = ChatInput(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        turn = profile_chat(
            user=caller(request),
            messages=[
                ChatMessage(role=MessageRole(m["role"]), content=m["content"])
                for m in data["messages"]
            ],
            profile=data.get("profile"),
            collections=[RequestedCollection(**c) for c in data.get("collections", [])],
            overrides=profile_overrides(data),
        )
        found = context_body(turn.found)
        return Response(
            {
                **found,
                "sources": _cited_first(found["sources"], turn.cited),
                "answer": turn.answer,
                "cited": list(turn.cited),
                "message": turn.message,
                "condensed_query": turn.condensed_query,
                "condense": turn.condense,
                "usage": turn.usage,
            }
        )


def _cited_first(sources: list[dict[str, Any]], cited: tuple[int, ...]) -> list[dict[str, Any]]:
    """The cited footnotes in citation order, then the others in footnote order."""
    by_id = {source["footnote_id"]: source for source in sources}
    first = [by_id[n] for n in dict.fromkeys(cited) if n in by_id]
    return first + [source for source in sources if source["footnote_id"] not in set(cited)]
