"""What the API says about an ingestion job: the job itself and the 202 of a submitted one."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers
from rest_framework.response import Response

from tenants.models import IngestJob


class JobErrorOutput(serializers.Serializer):  # type: ignore[type-arg]
    code = serializers.CharField()
    message = serializers.CharField()


class JobProgressOutput(serializers.Serializer):  # type: ignore[type-arg]
    done = serializers.IntegerField(source="progress_done")
    total = serializers.IntegerField(
        source="progress_total",
        help_text="Distinct chunk texts to embed (while embedding) or documents to write.",
    )


class JobResultOutput(serializers.Serializer):  # type: ignore[type-arg]
    document_id = serializers.CharField()
    source = serializers.CharField()  # type: ignore[assignment]
    chunks_created = serializers.IntegerField()
    unchanged = serializers.BooleanField()
    media_type = serializers.CharField(required=False, help_text="A file's type (file jobs).")
    pages = serializers.IntegerField(required=False, help_text="A file's pages (file jobs).")
    needs_ocr_pages = serializers.ListField(
        child=serializers.IntegerField(),
        required=False,
        help_text="Pages without a text layer that were not OCR'd (Tesseract missing): their "
        "text is not in the document (file jobs).",
    )


class JobFileOutput(serializers.Serializer):  # type: ignore[type-arg]
    # Renders a StoredFile.
    id = serializers.CharField()
    filename = serializers.CharField()
    media_type = serializers.CharField()
    size = serializers.IntegerField(help_text="Bytes.")


class StageField(serializers.ChoiceField):
    """A job's stage: stored blank when it has none, shown as null."""

    def to_representation(self, value: Any) -> Any:
        return super().to_representation(value) or None


class JobOutput(serializers.Serializer):  # type: ignore[type-arg]
    """An ingestion job as its user sees it."""

    id = serializers.CharField()
    state = serializers.ChoiceField(choices=IngestJob.State.values)
    stage = StageField(
        choices=[s for s in IngestJob.Stage.values if s],
        allow_null=True,
        help_text="What a running job is doing: parsing, embedding, writing.",
    )
    progress = JobProgressOutput(source="*")
    collection = serializers.CharField()
    shared = serializers.BooleanField()
    kind = serializers.ChoiceField(choices=IngestJob.Kind.values)
    file = JobFileOutput(allow_null=True, help_text="The uploaded file (file jobs).")
    user = serializers.CharField(source="user.get_username", help_text="Who submitted it.")
    documents = serializers.IntegerField(help_text="Documents in the input.")
    input_bytes = serializers.IntegerField(help_text="UTF-8 bytes of their content.")
    attempts = serializers.IntegerField(help_text="Runs started so far.")
    max_attempts = serializers.IntegerField()
    cancel_requested = serializers.BooleanField()
    results = JobResultOutput(many=True, help_text="One entry per document once it succeeded.")
    document_ids = serializers.ListField(child=serializers.CharField())
    error = JobErrorOutput(
        source="failure", allow_null=True, help_text="Why it failed (the last error)."
    )
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)


class JobAcceptedOutput(serializers.Serializer):  # type: ignore[type-arg]
    # Renders a submitted IngestJob and why it is one.
    job_id = serializers.CharField(source="job.id")
    status_url = serializers.CharField(help_text="GET it for the job's state.")
    state = serializers.CharField(source="job.state")
    reason = serializers.ChoiceField(
        choices=["requested", "size"],
        help_text='"requested": the body asked for "async"; "size": the content is larger '
        "than the deployment ingests within a request (RAG_JOB_SYNC_MAX_BYTES).",
    )


def accepted(job: IngestJob, reason: str) -> Response:
    """202 for a submitted job."""
    submitted = {"job": job, "status_url": f"/api/rag/jobs/{job.id}", "reason": reason}
    return Response(JobAcceptedOutput(submitted).data, status=202)
