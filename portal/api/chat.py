"""``POST /api/rag/chat``: one turn of a conversation over a profile or collections (SPEC R6).

The request is a context request (``portal.api.context.ContextInput``) whose question is
the last of ``messages``; the others are the history. The answer's sources list the footnotes
it cites first, in citation order, then the rest. With ``"stream": true`` the answer comes as
Server-Sent Events (``EVENTS`` below says which), from a thread of a threaded gunicorn worker.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.conf import settings
from django.http import HttpResponseBase
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiResponse,
    extend_schema,
    extend_schema_serializer,
)
from rest_framework import serializers
from rest_framework.authentication import SessionAuthentication
from rest_framework.permissions import IsAuthenticated
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from portal.api.authentication import BearerTokenAuthentication
from portal.api.common import (
    STREAM_ERRORS,
    EventStreamRenderer,
    caller,
    event,
    event_schema,
    event_stream,
)
from portal.api.context import (
    AnswerOutput,
    ContextInput,
    ContextOutput,
    SourceOutput,
    retrieval_request,
)
from portal.api.errors import rag_status, request_id_of, server_error_body
from portal.api.fields import (
    BoundedListField,
    InputSerializer,
    StrictBooleanField,
    StrictCharField,
)
from portal.rag.chat import ChatStream, profile_chat, profile_chat_stream
from portal.rag.errors import LlmError
from portal.throttling import ChatRateThrottle

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
class ChatInput(ContextInput):
    query = None  # type: ignore[assignment]  # the question is the last message
    messages = BoundedListField(
        child=ChatMessageInput(),
        min_length=1,
        max_length=MAX_CHAT_MESSAGES,
        help_text="The conversation, oldest first; the last message is the user's question.",
        too_long="{length} messages; the limit is {max_length} (RAG_MAX_CHAT_MESSAGES).",
    )

    stream = StrictBooleanField(
        required=False,
        default=False,
        help_text="Answer as Server-Sent Events (text/event-stream) instead of one JSON body.",
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


class ChatOutput(AnswerOutput):
    # Renders a ChatTurn, whose sources list the footnotes it cites first.
    sources = SourceOutput(
        many=True,
        help_text="The footnotes the answer cites first (in citation order), then the others.",
    )
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


EVENTS = """With `"stream": true` the answer comes as Server-Sent Events, in this order:

- `sources`: what a JSON answer holds besides the answer (`sources` in footnote order,
  `context`, `profile`, `relevance_fallback`, `skipped_collections`, `condensed_query`,
  `condense`);
- `delta`, any number: `{"text": ...}`, the answer's next piece as the LLM writes it;
- `done`: `{"answer", "cited", "usage", "message"}` (the whole answer, the footnotes it cites
  in citation order; without an LLM `answer` is null and `message` says why);
- or, if the LLM fails after the stream started, `error`: `{"error", "code", "request_id"}`
  (a 5xx body: the cause is logged under the request id) instead of `done`.

Errors before the stream starts (validation, the condensing LLM call, retrieval) are the
usual error responses: JSON, or one `error` event with the same body for a client that accepts
only `text/event-stream`."""


class SourcesEvent(ContextOutput):
    # The "sources" event: a ChatStream's retrieval (sources in footnote order: the answer is
    # still to come) and how its query was made.
    context_at = "found"

    condensed_query = serializers.CharField()
    condense = serializers.CharField()


class DoneEvent(serializers.Serializer):  # type: ignore[type-arg]
    # The "done" event: the whole answer of a ChatTurn.
    answer = serializers.CharField(allow_null=True)
    cited = serializers.ListField(child=serializers.IntegerField())
    usage = UsageOutput(allow_null=True)
    message = serializers.CharField(allow_null=True)


def _events(stream: ChatStream, request_id: str) -> Iterator[bytes]:
    """The turn as Server-Sent Events (``EVENTS``); closing it closes the LLM's stream."""
    try:
        yield event("sources", SourcesEvent(stream).data)
        try:
            for delta in stream.deltas:
                yield event("delta", {"text": delta})
            turn = stream.finish()
        except Exception as exc:  # the LLM client's errors, after the response has started
            failed = LlmError(f"The LLM service failed: {exc}")
            body = server_error_body(
                failed, rag_status(failed), failed.code, request_id, "ChatView"
            )
            yield event("error", body)
            return
        yield event("done", DoneEvent(turn).data)
    finally:
        close = getattr(stream.deltas, "close", None)
        if close is not None:  # a client that went away stops the upstream request
            close()


class ChatView(APIView):
    """Answer the last message with the conversation as history and [N] citations (R6).

    Besides a bearer token it takes the workspace's login session (SPEC U1), whose chat
    page streams its answers from here; DRF's session authentication then requires the
    CSRF token (``X-CSRFToken``), as the workspace's own forms do.
    """

    permission_classes = (IsAuthenticated,)
    throttle_classes = (ChatRateThrottle,)
    authentication_classes = (BearerTokenAuthentication, SessionAuthentication)
    renderer_classes = (JSONRenderer, EventStreamRenderer)

    # Documented for API clients, who send a bearer token: the session is the workspace's own
    # page calling its server (and a fuzzer would otherwise send made-up cookies).
    @extend_schema(
        auth=[{"bearerAuth": []}],  # type: ignore[list-item]  # security requirements
        request=ChatInput,
        responses={
            (200, "application/json"): ChatOutput,
            (200, "text/event-stream"): OpenApiResponse(
                event_schema("sources", "delta", "done", "error"), description=EVENTS
            ),
            **STREAM_ERRORS,
        },
        description=EVENTS,
    )
    def post(self, request: Request) -> HttpResponseBase:
        body = ChatInput(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        turn_request: dict[str, Any] = {
            "user": caller(request),
            "messages": [(m["role"], m["content"]) for m in data["messages"]],
            **retrieval_request(data),
        }
        if data["stream"]:
            request_id = request_id_of({"request": request})
            return event_stream(_events(profile_chat_stream(**turn_request), request_id))
        return Response(ChatOutput(profile_chat(**turn_request)).data)
