"""Tenant and Domain: the public-schema records that route a host name to a schema."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator, RegexValidator
from django.db import models
from django_tenants.models import DomainMixin, TenantMixin

from rag_plugin.exceptions import InvalidInputError
from rag_plugin.profiles import RetrievalProfile as LibraryProfile


class Limits(models.Model):
    """What a holder may keep (SPEC O7); empty is no limit. The platform admin sets a
    tenant's, a tenant admin each user's within them (:mod:`portal.rag.quotas`)."""

    max_documents = models.PositiveBigIntegerField(
        null=True, blank=True, help_text="Documents stored. Empty: no limit."
    )
    max_chunks = models.PositiveBigIntegerField(
        null=True, blank=True, help_text="Chunks stored. Empty: no limit."
    )
    max_text_bytes = models.PositiveBigIntegerField(
        null=True, blank=True, help_text="Bytes of chunk text stored (UTF-8). Empty: no limit."
    )
    max_file_bytes = models.PositiveBigIntegerField(
        null=True, blank=True, help_text="Bytes of uploaded originals kept. Empty: no limit."
    )
    max_queued_jobs = models.PositiveIntegerField(
        null=True, blank=True, help_text="Ingestion jobs queued or running. Empty: no limit."
    )

    LIMIT_FIELDS = (
        "max_documents",
        "max_chunks",
        "max_text_bytes",
        "max_file_bytes",
        "max_queued_jobs",
    )

    class Meta:
        abstract = True


class Tenant(TenantMixin, Limits):  # type: ignore[misc,django-manager-missing]
    """One customer organisation; its data lives in the PostgreSQL schema ``schema_name``."""

    name = models.CharField(max_length=100)
    created_on = models.DateTimeField(auto_now_add=True)

    # Creating a tenant creates and migrates its schema in the same call.
    auto_create_schema = True
    auto_drop_schema = True

    def __str__(self) -> str:
        return f"{self.name} ({self.schema_name})"


class Domain(DomainMixin):  # type: ignore[misc]
    """A host name (e.g. ``acme.localhost``) that routes requests to its tenant."""

    def __str__(self) -> str:
        return str(self.domain)


class RagSource(models.Model):
    """One entry of a tenant's RAG source allowlist (SPEC T3).

    The allowlist denies by default: a source (a collection name as users see it) may be
    ingested into, searched or deleted only while an entry for it exists and is enabled.
    """

    name = models.CharField(
        max_length=63,
        unique=True,
        help_text="The collection name users see, e.g. 'docs'.",
        validators=[
            RegexValidator(
                r"^[A-Za-z_][A-Za-z0-9_]*$",
                "Use letters, digits and underscores, starting with a letter or underscore.",
            )
        ],
    )
    enabled = models.BooleanField(default=True)
    note = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.CharField(max_length=150, blank=True, editable=False)
    updated_at = models.DateTimeField(auto_now=True)
    updated_by = models.CharField(max_length=150, blank=True, editable=False)

    class Meta:
        ordering = ("name",)
        verbose_name = "RAG source"
        verbose_name_plural = "RAG source allowlist"

    def __str__(self) -> str:
        return f"{self.name} ({'enabled' if self.enabled else 'disabled'})"


class RetrievalProfile(models.Model):
    """A named recipe for multi-collection retrieval and answers (SPEC R1).

    The fields mirror ``rag_plugin.profiles.RetrievalProfile``; ``clean()`` builds that object
    so an invalid combination is refused in the admin form, not at query time.
    """

    class Rerank(models.TextChoices):
        LEXICAL = "lexical", "Lexical (query/chunk word overlap)"
        CROSS_ENCODER = "cross-encoder", "Cross-encoder model (falls back to lexical)"
        OFF = "off", "Off"

    class Strategy(models.TextChoices):
        SEMANTIC = "semantic", "Semantic"
        HYBRID = "hybrid", "Hybrid (semantic + BM25 + fuzzy)"

    class Language(models.TextChoices):
        ENGLISH = "english", "English"
        GERMAN = "german", "German"

    name = models.SlugField(max_length=63, unique=True)
    description = models.TextField(blank=True)
    retrieval_k = models.PositiveSmallIntegerField(default=8)
    min_relevance = models.FloatField(default=0.05)
    include_sources = models.BooleanField(default=True)
    strategy = models.CharField(max_length=16, choices=Strategy, default=Strategy.HYBRID)
    rerank = models.CharField(max_length=16, choices=Rerank, default=Rerank.LEXICAL)
    reranker_model = models.CharField(max_length=200, blank=True)
    vision = models.BooleanField(
        default=False, help_text="The answering model reads images: keep chunks with images."
    )
    expand_query = models.BooleanField(
        default=False,
        help_text="Expand the lexical legs with stopword removal, compounds and the synonyms "
        "table (hybrid only).",
    )
    language = models.CharField(max_length=16, choices=Language, default=Language.ENGLISH)

    class Meta:
        ordering = ("name",)

    def __str__(self) -> str:
        return self.name

    def to_library(self, **overrides: Any) -> LibraryProfile:
        """The equivalent ``rag_plugin`` profile, with the tenant's synonyms when expanding."""
        fields: dict[str, Any] = {
            "retrieval_k": self.retrieval_k,
            "min_relevance": self.min_relevance,
            "include_sources": self.include_sources,
            "strategy": self.strategy,
            "rerank": self.rerank,
            "reranker_model": self.reranker_model or None,
            "vision": self.vision,
            "expand_query": self.expand_query,
            "language": self.language,
        }
        fields.update(overrides)
        if fields["expand_query"]:
            fields["synonyms"] = {s.term.lower(): s.synonym_list() for s in Synonym.objects.all()}
        return LibraryProfile(**fields)

    def clean(self) -> None:
        try:
            self.to_library()
        except InvalidInputError as exc:
            raise ValidationError(str(exc)) from None


class ProfileCollection(models.Model):
    """One collection searched by a profile, with its weight and priority."""

    profile = models.ForeignKey(
        RetrievalProfile, on_delete=models.CASCADE, related_name="collections"
    )
    collection = models.CharField(
        max_length=63,
        validators=[
            RegexValidator(
                r"^[A-Za-z_][A-Za-z0-9_]*$",
                "Use letters, digits and underscores, starting with a letter or underscore.",
            )
        ],
    )
    shared = models.BooleanField(
        default=True,
        help_text="A tenant-shared collection; unticked means each caller's own collection.",
    )
    weight = models.FloatField(default=1.0, validators=[MinValueValidator(0.0)])
    priority = models.IntegerField(default=0, help_text="Higher is searched first.")

    class Meta:
        ordering = ("-priority", "collection")
        constraints = [
            models.UniqueConstraint(
                fields=("profile", "collection", "shared"), name="unique_profile_collection"
            )
        ]

    def __str__(self) -> str:
        scope = "shared" if self.shared else "own"
        return f"{self.collection} ({scope}, weight {self.weight}, priority {self.priority})"


class Synonym(models.Model):
    """A term of the tenant's synonym table used by lexical query expansion (SPEC L5)."""

    term = models.CharField(max_length=100, unique=True)
    synonyms = models.TextField(help_text="Comma-separated words added when the term appears.")

    class Meta:
        ordering = ("term",)

    def __str__(self) -> str:
        return f"{self.term} → {self.synonyms}"

    def synonym_list(self) -> list[str]:
        return [word.strip().lower() for word in self.synonyms.split(",") if word.strip()]


class ApiTokenGeneration(models.Model):
    """How many times a tenant admin revoked one user's API tokens (SPEC A5).

    A bearer token carries the generation it was issued in (``portal.api.tokens``); revoking
    adds one, so every token issued before stops working while the account and its password
    stay as they are. A user without a row is at generation 0.
    """

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        primary_key=True,
        related_name="api_token_generation",
    )
    generation = models.PositiveIntegerField(default=0)
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoked_by = models.CharField(max_length=150, blank=True)

    class Meta:
        verbose_name = "API token generation"

    def __str__(self) -> str:
        return f"{self.user} (generation {self.generation})"


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

    id = models.UUIDField(primary_key=True, editable=False)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="ingest_jobs"
    )
    collection = models.CharField(max_length=63)
    shared = models.BooleanField(default=False)
    kind = models.CharField(max_length=16, choices=Kind)
    payload = models.JSONField(
        default=dict,
        help_text="The documents and options to ingest; emptied once the job has succeeded.",
    )
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


class AuditEvent(models.Model):
    """One write or admin change of the tenant (SPEC O6): who did what to which object, when,
    from where, and the object before and after where that applies.

    Append-only: the database refuses to change a row, and to delete one except under the
    retention prune (``manage.py rag_audit_prune``, migration 0009's trigger). ``actor_name``
    keeps the name when the user is deleted later.
    """

    id = models.BigAutoField(primary_key=True)
    at = models.DateTimeField(auto_now_add=True, db_index=True)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        # Deleting a user touches none of its past events (an UPDATE the trigger refuses):
        # the id stays, and actor_name says who it was.
        on_delete=models.DO_NOTHING,
        null=True,
        blank=True,
        related_name="audit_events",
        db_constraint=False,
    )
    actor_name = models.CharField(max_length=150)
    action = models.CharField(max_length=64, db_index=True, help_text="e.g. document.delete")
    object_type = models.CharField(max_length=64)
    object_id = models.CharField(max_length=255, blank=True)
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)
    request_id = models.CharField(max_length=32, blank=True)
    address = models.GenericIPAddressField(null=True, blank=True)

    class Meta:
        ordering = ("-at", "-id")
        verbose_name = "audit event"

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M:%S} {self.actor_name} {self.action} {self.object_id}"


class ApiKey(models.Model):
    """A long-lived credential for a pipeline or CI job (SPEC O8), acting as ``user`` but only
    on the collections it names, read-only or read-write, until it expires or is revoked.

    The secret is shown once when the key is made; only its SHA-256 is kept (the secret is
    256 random bits, so a slow password hash would add nothing). ``prefix`` is the key's public
    id, the part of ``rk_<prefix>_<secret>`` used to find the row.
    """

    class Access(models.TextChoices):
        READ = "read"
        READ_WRITE = "read_write"

    id = models.BigAutoField(primary_key=True)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="api_keys",
        help_text="Whom the key acts as: it never reaches more than this user could.",
    )
    label = models.CharField(max_length=100)
    prefix = models.CharField(max_length=16, unique=True, editable=False)
    secret_hash = models.CharField(max_length=64, editable=False)
    access = models.CharField(max_length=16, choices=Access, default=Access.READ)
    collections = models.JSONField(
        help_text='The collections it may reach: [{"name": "docs", "shared": false}, ...].'
    )
    expires_at = models.DateTimeField()
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.CharField(max_length=150, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoked_by = models.CharField(max_length=150, blank=True)

    class Meta:
        ordering = ("-created_at",)
        verbose_name = "API key"

    def __str__(self) -> str:
        return f"{self.label} (rk_{self.prefix}…)"


class UserQuota(Limits):
    """One user's limits, within the tenant's (SPEC O7); a user without a row has only the
    tenant's."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, primary_key=True, related_name="quota"
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "user quota"

    def __str__(self) -> str:
        return f"quota of {self.user}"


class WriteMark(models.Model):
    """Where in the primary's WAL a user's last write landed, so that their next reads on a
    standby wait until it has replayed that far (portal/rag/consistency.py; read-your-writes
    with ``DATABASE_REPLICA_URLS``). Read and written on the primary only."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        primary_key=True,
        related_name="write_mark",
    )
    # pg_lsn as an integer (64 bits; PostgreSQL's own text form is hi/lo hexadecimal).
    lsn = models.BigIntegerField()
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "tenants_writemark"  # named in portal/rag/consistency.py's upsert
        verbose_name = "write mark"

    def __str__(self) -> str:
        return f"write mark of {self.user}"
