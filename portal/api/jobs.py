"""Ingestion jobs over REST (SPEC J3): list, read, cancel, retry, and follow one as it runs."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from django.db import DatabaseError
from django.http import HttpResponseBase
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.permissions import IsAuthenticated
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from portal.api.common import (
    ERRORS,
    STREAM_ERRORS,
    EventStreamRenderer,
    caller,
    event,
    event_schema,
    event_stream,
)
from portal.api.fields import QueryBooleanField, QueryInput
from portal.api.job_outputs import JobOutput
from portal.api.serializers import CollectionField, ErrorOutput
from portal.rag import jobs, selectors
from tenants.models import IngestJob

EVENTS_POLL_S = 0.5
"""How often the events stream reads the job."""
EVENTS_KEEPALIVE_S = 15.0
"""A comment line this often keeps proxies from closing a quiet stream."""
EVENTS_MAX_S = 600.0
"""A stream ends after this long even if its job has not (a queue with no worker): the client
connects again to follow on (browsers' EventSource does so by itself)."""


class JobListQuery(QueryInput):
    state = serializers.ChoiceField(choices=IngestJob.State.values, required=False)
    collection = CollectionField(required=False)
    shared = QueryBooleanField(required=False)
    limit = serializers.IntegerField(required=False, default=50, min_value=1, max_value=1000)
    offset = serializers.IntegerField(required=False, default=0, min_value=0, max_value=2**31)


class JobListOutput(serializers.Serializer):  # type: ignore[type-arg]
    jobs = JobOutput(many=True)
    total = serializers.IntegerField()
    limit = serializers.IntegerField()
    offset = serializers.IntegerField()


JOB_ID_PARAM = OpenApiParameter(
    "job_id",
    {"type": "string", "format": "uuid"},
    OpenApiParameter.PATH,
    description="The job's id, as the ingest request returned it.",
)


class JobListView(APIView):
    """Your ingestion jobs (a tenant admin: the tenant's), newest first."""

    permission_classes = (IsAuthenticated,)

    @extend_schema(
        operation_id="rag_jobs_list",
        parameters=[JobListQuery],
        responses={200: JobListOutput, **ERRORS},
    )
    def get(self, request: Request) -> Response:
        query = JobListQuery(data=request.query_params.dict())
        query.is_valid(raise_exception=True)
        found, total = selectors.job_list(user=caller(request), **query.validated_data)
        return Response(
            JobListOutput(
                {
                    "jobs": found,
                    "total": total,
                    "limit": query.validated_data["limit"],
                    "offset": query.validated_data["offset"],
                }
            ).data
        )


class JobView(APIView):
    """One ingestion job: its state, stage, progress, results or error."""

    permission_classes = (IsAuthenticated,)

    @extend_schema(parameters=[JOB_ID_PARAM], responses={200: JobOutput, **ERRORS})
    def get(self, request: Request, job_id: str) -> Response:
        return Response(JobOutput(selectors.job_get(user=caller(request), job_id=job_id)).data)


class JobCancelView(APIView):
    """Cancel a job: a queued one at once, a running one before it writes anything."""

    permission_classes = (IsAuthenticated,)

    @extend_schema(
        request=None,
        parameters=[JOB_ID_PARAM],
        responses={200: JobOutput, 409: ErrorOutput, **ERRORS},
    )
    def post(self, request: Request, job_id: str) -> Response:
        return Response(JobOutput(jobs.job_cancel(user=caller(request), job_id=job_id)).data)


class JobRetryView(APIView):
    """Queue a failed or cancelled job again."""

    permission_classes = (IsAuthenticated,)

    @extend_schema(
        request=None,
        parameters=[JOB_ID_PARAM],
        responses={202: JobOutput, 409: ErrorOutput, **ERRORS},
    )
    def post(self, request: Request, job_id: str) -> Response:
        job = jobs.job_retry(user=caller(request), job_id=job_id)
        return Response(JobOutput(job).data, status=202)


EVENTS = """Server-Sent Events of one job until it ends:

- `progress`, whenever the job changes: the job (as `GET /api/rag/jobs/{job_id}`);
- `done`, once, when it has ended (succeeded, failed or cancelled): the job; the stream ends;
- `error`, if the job can no longer be read (e.g. the database went away): `{"error", "code"}`.

A comment line every 15 s keeps a quiet stream open through proxies. A stream ends after
10 minutes without `done` (a job still queued or running): connect again to follow on."""


def _job_events(request: Request, job_id: str) -> Iterator[bytes]:
    user = caller(request)
    last: dict[str, Any] | None = None
    started = quiet_since = time.monotonic()
    while time.monotonic() - started < EVENTS_MAX_S:
        try:
            job = selectors.job_get(user=user, job_id=job_id)
        except DatabaseError:
            yield event(
                "error",
                {"error": "The job could not be read; try again.", "code": "DATABASE_UNAVAILABLE"},
            )
            return
        body = JobOutput(job).data
        if job.ended:
            yield event("done", body)
            return
        if body != last:
            yield event("progress", body)
            last, quiet_since = body, time.monotonic()
        elif time.monotonic() - quiet_since > EVENTS_KEEPALIVE_S:
            yield b": keep-alive\n\n"
            quiet_since = time.monotonic()
        time.sleep(EVENTS_POLL_S)


class JobEventsView(APIView):
    """Follow one job as it runs, as Server-Sent Events."""

    permission_classes = (IsAuthenticated,)
    renderer_classes = (JSONRenderer, EventStreamRenderer)

    @extend_schema(
        parameters=[JOB_ID_PARAM],
        responses={
            (200, "text/event-stream"): OpenApiResponse(
                event_schema("progress", "done"), description=EVENTS
            ),
            **STREAM_ERRORS,
        },
        description=EVENTS,
    )
    def get(self, request: Request, job_id: str) -> HttpResponseBase:
        selectors.job_get(user=caller(request), job_id=job_id)  # 404 before the stream starts
        return event_stream(_job_events(request, job_id))
