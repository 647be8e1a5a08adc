"""Ingestion: the background jobs (SPEC J1) and the uploaded originals they parse (SPEC F3)."""

from __future__ import annotations

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db import models


class IngestJob(models.Model):
    """One ingest run in the background (SPEC J1): what to ingest, where, and how far it got.

    The row is what users see and the truth about the job; the queue (procrastinate, in the
    public schema) only says which worker runs it when. State moves ``queued → running →
    succeeded | failed | cancelled``; every move is a conditional update on the state (and the
    run's ``run_token``), so a worker that lost its job to another cannot finish it twice.
    """

    class State(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        SUCCEEDED = "succeeded"
        FAILED = "failed"
        CANCELLED = "cancelled"

    class Stage(models.TextChoices):
        NONE = "", "—"
        PARSING = "parsing"
        EMBEDDING = "embedding"
        WRITING = "writing"

    class Kind(models.TextChoices):
        DOCUMENT = "document"
        BATCH = "batch"
        FILE = "file"

    ENDED = (State.SUCCEEDED, State.FAILED, State.CANCELLED)
    INPUT_FIELDS = ("payload", "contents")
    """What a job ingests: megabytes for a text job, read only by its run and the page that
    shows it; lists and status reads defer them."""

    id = models.UUIDField(primary_key=True, editable=False)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="ingest_jobs"
    )
    collection = models.CharField(max_length=63)
    shared = models.BooleanField(default=False)
    kind = models.CharField(max_length=16, choices=Kind)
    payload = models.JSONField(
        default=dict,
        help_text="The documents (but their text) and options to ingest; emptied once the job "
        "has succeeded.",
    )
    contents = ArrayField(
        models.TextField(),
        default=list,
        blank=True,
        help_text="The text of each of the payload's documents, in order; emptied with it.",
    )
    """Kept out of the JSON, uncompressed (migration 0015): writing 1 MB of text as ``jsonb``
    took 12.5 ms against 7.3 ms as ``text`` (measured alone), on top of encoding it as JSON."""
    documents = models.PositiveIntegerField(help_text="Documents in the input.")
    input_bytes = models.PositiveBigIntegerField(help_text="UTF-8 bytes of their content.")
    state = models.CharField(max_length=16, choices=State, default=State.QUEUED)
    stage = models.CharField(max_length=16, choices=Stage, default=Stage.NONE, blank=True)
    progress_done = models.PositiveIntegerField(default=0)
    progress_total = models.PositiveIntegerField(default=0)
    attempts = models.PositiveIntegerField(default=0)
    max_attempts = models.PositiveIntegerField()
    cancel_requested = models.BooleanField(default=False)
    error_code = models.CharField(max_length=40, blank=True)
    error_message = models.TextField(blank=True)
    results = models.JSONField(default=list, blank=True)
    file = models.ForeignKey(
        "StoredFile",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="jobs",
        help_text="The uploaded file a file job ingests.",
    )
    queue_job_id = models.BigIntegerField(
        null=True, blank=True, help_text="The procrastinate job that runs it now."
    )
    run_token = models.UUIDField(null=True, blank=True, help_text="The attempt that runs it.")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ("-created_at",)
        indexes = [
            models.Index(fields=("user", "-created_at"), name="ingestjob_user_created"),
            models.Index(fields=("state", "-created_at"), name="ingestjob_state_created"),
        ]
        verbose_name = "ingestion job"

    def __str__(self) -> str:
        return f"{self.kind} job {self.id} ({self.state})"

    @property
    def ended(self) -> bool:
        return self.state in self.ENDED

    @property
    def document_ids(self) -> list[str]:
        """The documents it wrote, once it has succeeded."""
        return [result["document_id"] for result in self.results]

    @property
    def failure(self) -> dict[str, str] | None:
        """Its last error (``code``, ``message``), unless it has since succeeded."""
        if not self.error_code or self.state == self.State.SUCCEEDED:
            return None
        return {"code": self.error_code, "message": self.error_message}


class StoredFile(models.Model):
    """An uploaded original (SPEC F3), kept in PostgreSQL beside its chunks: any worker on any
    machine can parse it, a document can be re-indexed from it, and whoever may read the
    document can download it.

    A file belongs to the collection (and owner) its upload named; ``document_id`` is set when
    its job has ingested it, and a later upload of the same source replaces it. Deleting the
    document or its collection deletes the file.
    """

    id = models.UUIDField(primary_key=True, editable=False)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="stored_files",
        help_text="Who uploaded it.",
    )
    collection = models.CharField(max_length=63)
    shared = models.BooleanField(default=False)
    filename = models.CharField(max_length=255)
    source = models.CharField(
        max_length=1000, help_text="The document's source: the file name unless one was given."
    )
    media_type = models.CharField(max_length=100, help_text="Detected from the content.")
    size = models.PositiveBigIntegerField()
    sha256 = models.CharField(max_length=64)
    data = models.BinaryField()
    document_id = models.CharField(max_length=100, blank=True, db_index=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ("-created_at",)
        verbose_name = "uploaded file"

    def __str__(self) -> str:
        return f"{self.filename} ({self.media_type}, {self.size} bytes)"
