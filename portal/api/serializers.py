"""Request and response shapes of the REST API (also the source of the OpenAPI schema)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.validators import RegexValidator
from drf_spectacular.utils import OpenApiExample, extend_schema_serializer
from rest_framework import serializers

from portal.api.errors import PayloadTooLarge
from portal.api.fields import (
    BIGINT_MAX,
    BoundedListField,
    FilterField,
    InputSerializer,
    MetadataField,
    NameField,
    QueryBooleanField,
    QueryField,
    QueryInput,
    RerankField,
    StrictBooleanField,
    StrictCharField,
    StrictFloatField,
    StrictIntegerField,
)
from rag_plugin.chunking import ChunkingStrategy
from rag_plugin.exceptions import InvalidInputError
from rag_plugin.rerank import RerankMode
from rag_plugin.search import DEFAULT_STRATEGY, SearchStrategy
from rag_plugin.stores.base import (
    MAX_COLLECTION_NAME_LENGTH,
    DocumentInput,
    check_distinct_sources,
    validate_collection_name,
)

MAX_QUERY_CHARS = 10_000
COLLECTION_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*$"
"""What ``validate_collection_name`` accepts, as the schema's pattern."""
MAX_TAGS = 50
MAX_SOURCE_BYTES = 2000
"""A source's UTF-8 bytes: it is a unique-index key, and PostgreSQL's B-tree entries hold at
most ≈ 2,700 bytes."""

# The limits a deployment may change (portal/settings.py, RAG_API; README "Security").
MAX_QUERY_WORDS = int(settings.RAG_API["MAX_QUERY_WORDS"])
MAX_CONTEXT_COLLECTIONS = int(settings.RAG_API["MAX_CONTEXT_COLLECTIONS"])
MAX_BATCH_DOCUMENTS = int(settings.RAG_API["MAX_BATCH_DOCUMENTS"])
"""Documents per /rag/ingest/batch request; the body limit (RAG_MAX_BODY_BYTES) applies too."""


def _collection_name(value: str) -> None:
    try:
        validate_collection_name(value)
    except InvalidInputError as exc:
        raise serializers.ValidationError(str(exc)) from None


class CollectionField(StrictCharField):
    """A collection name; the schema shows its rule as a pattern (the server's check and its
    message are ``validate_collection_name``'s)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(
            min_length=1,
            max_length=MAX_COLLECTION_NAME_LENGTH,
            validators=[_collection_name, RegexValidator(COLLECTION_NAME_PATTERN)],
            **kwargs,
        )


class LoginInput(InputSerializer):
    username = StrictCharField(required=False, max_length=150)
    email = StrictCharField(required=False, max_length=254)
    password = StrictCharField(max_length=1024, trim_whitespace=False)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if not attrs.get("username") and not attrs.get("email"):
            raise serializers.ValidationError({"username": ["Give a username or an email."]})
        return attrs


class LoginOutput(serializers.Serializer):  # type: ignore[type-arg]
    access_token = serializers.CharField()
    token_type = serializers.CharField()
    expires_in = serializers.IntegerField()


class DocumentFields(InputSerializer):
    """What describes one document to ingest (SPEC A2's fields)."""

    content = StrictCharField(trim_whitespace=False)
    title = StrictCharField(required=False, allow_blank=True, max_length=500, default="")
    # DRF collects declared fields, so a field may be named like Field.source.
    source = StrictCharField(  # type: ignore[assignment]
        required=False, allow_blank=True, max_length=1000, default=""
    )
    tags = BoundedListField(
        child=StrictCharField(max_length=100), required=False, max_length=MAX_TAGS, default=list
    )

    def validate_source(self, value: str) -> str:
        size = len(value.encode("utf-8"))
        if size > MAX_SOURCE_BYTES:
            raise serializers.ValidationError(
                f"The source is {size} bytes in UTF-8; the limit is {MAX_SOURCE_BYTES}."
            )
        return value

    metadata = MetadataField(required=False, default=dict)


class IngestOptions(InputSerializer):
    """Where and how documents are ingested, for one document or a batch."""

    collection = CollectionField()
    chunking_strategy = NameField(
        names=ChunkingStrategy.names(), required=False, allow_null=True, default=None
    )
    shared = StrictBooleanField(required=False, default=False)

    def get_fields(self) -> dict[str, serializers.Field]:  # type: ignore[type-arg]
        fields = super().get_fields()
        # "async" is a Python keyword, so it cannot be declared as a class attribute.
        fields["async"] = StrictBooleanField(
            required=False,
            default=False,
            help_text="Ingest in the background: 202 with a job id to follow at "
            "/api/rag/jobs/{id}. Content over the deployment's limit (RAG_JOB_SYNC_MAX_BYTES) "
            "is a job either way.",
        )
        return fields

    def validate_chunking_strategy(self, value: str | None) -> str | None:
        if value is None:
            return None
        try:
            return str(ChunkingStrategy.parse(value))
        except InvalidInputError as exc:
            raise serializers.ValidationError(str(exc)) from None


class IngestInput(IngestOptions, DocumentFields):
    pass


class IngestOutput(serializers.Serializer):  # type: ignore[type-arg]
    chunks_created = serializers.IntegerField()
    document_ids = serializers.ListField(child=serializers.CharField())
    document_id = serializers.CharField()
    collection = serializers.CharField()
    unchanged = serializers.BooleanField(
        help_text="The same source already held this text and description: nothing was redone."
    )


class IngestDocumentInput(DocumentFields):
    """One document of a batch: the fields of /rag/ingest that describe a document."""

    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, dict):
            raise serializers.ValidationError(
                {"non_field_errors": ["Each document must be a JSON object."]}
            )
        return super().to_internal_value(data)


class IngestBatchInput(IngestOptions):
    documents = BoundedListField(
        child=IngestDocumentInput(),
        min_length=1,
        max_length=MAX_BATCH_DOCUMENTS,
        too_long=(
            "{length} documents; the limit is {max_length} per batch (RAG_MAX_BATCH_DOCUMENTS)."
        ),
    )

    def validate_documents(self, value: list[dict[str, Any]]) -> list[dict[str, Any]]:
        limit = int(settings.RAG_API["MAX_BATCH_CONTENT_BYTES"])
        size = sum(len(d["content"].encode("utf-8")) for d in value)
        if size > limit:
            raise PayloadTooLarge(
                f"documents: {size} bytes of content; the limit is {limit} per batch "
                "(RAG_MAX_BATCH_CONTENT_BYTES)."
            )
        try:
            check_distinct_sources([(DocumentInput(source=d["source"]), None) for d in value])
        except InvalidInputError as exc:
            raise serializers.ValidationError(str(exc)) from None
        return value


class IngestedDocumentOutput(serializers.Serializer):  # type: ignore[type-arg]
    document_id = serializers.CharField()
    source = serializers.CharField()  # type: ignore[assignment]
    chunks_created = serializers.IntegerField()
    document_ids = serializers.ListField(
        child=serializers.CharField(), help_text="The document's chunk ids, as in /rag/ingest."
    )
    unchanged = serializers.BooleanField(
        help_text="The same source already held this text and description: nothing was redone."
    )


class IngestBatchOutput(serializers.Serializer):  # type: ignore[type-arg]
    collection = serializers.CharField()
    chunks_created = serializers.IntegerField(help_text="Chunks of all the documents.")
    documents = IngestedDocumentOutput(many=True, help_text="One entry per document, in order.")


class SearchInput(InputSerializer):
    collection = CollectionField()
    query = QueryField(max_length=MAX_QUERY_CHARS, max_words=MAX_QUERY_WORDS)
    limit = StrictIntegerField(required=False, default=10, min_value=1, max_value=1000)
    strategy = NameField(
        names=SearchStrategy.names(), required=False, allow_null=True, default=None
    )
    threshold = StrictFloatField(required=False, default=0.0)
    rerank = RerankField(required=False, default=RerankMode.OFF)
    correct_typos = StrictBooleanField(required=False, default=False)
    shared = StrictBooleanField(required=False, default=False)
    filters = FilterField(required=False, allow_null=True, default=None)

    def validate_strategy(self, value: str | None) -> SearchStrategy:
        try:
            return SearchStrategy.parse(value) if value is not None else DEFAULT_STRATEGY
        except InvalidInputError as exc:
            raise serializers.ValidationError(str(exc)) from None


class ChunkMetadataOutput(serializers.Serializer):  # type: ignore[type-arg]
    """The fields below, and every key of the document's metadata and of the chunk's own: a
    file's chunks carry ``page_number`` (where the chunk starts), ``page_end``, ``has_image``
    and, under a heading, ``section``."""

    title = serializers.CharField()
    source = serializers.CharField()  # type: ignore[assignment]
    created_at = serializers.CharField()
    tags = serializers.ListField(child=serializers.CharField())
    document_id = serializers.CharField()
    chunk_index = serializers.IntegerField()
    start_offset = serializers.IntegerField()
    end_offset = serializers.IntegerField()


class SearchResultOutput(serializers.Serializer):  # type: ignore[type-arg]
    id = serializers.CharField()
    content = serializers.CharField()
    score = serializers.FloatField()
    normalized_score = serializers.FloatField(allow_null=True)
    rerank = serializers.DictField(
        allow_null=True, help_text="What the reranker computed for this result; null if off."
    )
    metadata = ChunkMetadataOutput()


class CorrectionOutput(serializers.Serializer):  # type: ignore[type-arg]
    original = serializers.CharField()
    corrected = serializers.CharField()
    distance = serializers.IntegerField()


class SearchOutput(serializers.Serializer):  # type: ignore[type-arg]
    results = SearchResultOutput(many=True)
    total = serializers.IntegerField()
    strategy = serializers.CharField()
    reranked = serializers.BooleanField()
    rerank = serializers.CharField(
        help_text="The rerank mode asked for: lexical, cross-encoder or off."
    )
    duration_ms = serializers.FloatField()
    corrected_query = serializers.CharField(allow_null=True)
    corrections = CorrectionOutput(many=True)


class CollectionOutput(serializers.Serializer):  # type: ignore[type-arg]
    """A collection with its counts (``CollectionInfo``)."""

    name = serializers.CharField()
    document_count = serializers.IntegerField()
    chunk_count = serializers.IntegerField()
    dimensions = serializers.IntegerField()


class CollectionDeleteInput(InputSerializer):
    collection = CollectionField()
    shared = StrictBooleanField(required=False, default=False)


class CollectionDeleteOutput(serializers.Serializer):  # type: ignore[type-arg]
    success = serializers.BooleanField()
    collection = serializers.CharField()
    documents_deleted = serializers.IntegerField()


class DocumentOutput(serializers.Serializer):  # type: ignore[type-arg]
    """A stored document (``DocumentRecord``)."""

    id = serializers.CharField()
    collection = serializers.CharField()
    source = serializers.CharField()  # type: ignore[assignment]
    title = serializers.CharField()
    tags = serializers.ListField(child=serializers.CharField())
    content_hash = serializers.CharField()
    created_at = serializers.DateTimeField()
    chunk_count = serializers.IntegerField()
    metadata = serializers.DictField(
        help_text="The metadata it was ingested with, how it was chunked, and for a file its "
        "filename, media_type, page_count (and author, created where the file says)."
    )


STORE_FIELDS = frozenset({"title", "source", "created_at", "tags"})
"""What the store copies from the document onto each chunk's metadata: shown with the
document (or named in a hit's metadata), not repeated among the chunk's own."""


class ChunkOutput(serializers.Serializer):  # type: ignore[type-arg]
    """A stored chunk (``ChunkRecord``), without the document's fields the store copied onto
    its metadata."""

    id = serializers.CharField()
    index = serializers.IntegerField()
    content = serializers.CharField()
    start_offset = serializers.IntegerField()
    end_offset = serializers.IntegerField()
    metadata = serializers.DictField(
        help_text="The document's metadata and the chunk's own: a file's chunks carry "
        "page_number (where the chunk starts), page_end, has_image and, under a heading, "
        "section."
    )

    def to_representation(self, instance: Any) -> dict[str, Any]:
        shown: dict[str, Any] = super().to_representation(instance)
        shown["metadata"] = {k: v for k, v in shown["metadata"].items() if k not in STORE_FIELDS}
        return shown


class DocumentDetailOutput(DocumentOutput):
    """A document (``DocumentRecord``'s fields) and its chunks, from a mapping of both."""

    chunks = ChunkOutput(many=True)


class DocumentListOutput(serializers.Serializer):  # type: ignore[type-arg]
    collection = serializers.CharField()
    documents = DocumentOutput(many=True)
    limit = serializers.IntegerField()
    offset = serializers.IntegerField()


class DocumentDeleteOutput(serializers.Serializer):  # type: ignore[type-arg]
    success = serializers.BooleanField()
    document_id = serializers.CharField()
    collection = serializers.CharField()


class ErrorOutput(serializers.Serializer):  # type: ignore[type-arg]
    error = serializers.CharField()
    code = serializers.CharField()


class SharedQuery(QueryInput):
    """Query-string flag: act on the tenant-shared collections instead of the caller's own."""

    shared = QueryBooleanField(required=False, default=False)


class PageInput(SharedQuery):
    limit = serializers.IntegerField(required=False, default=100, min_value=1, max_value=1000)
    offset = serializers.IntegerField(required=False, default=0, min_value=0, max_value=BIGINT_MAX)


class CollectionRefInput(InputSerializer):
    name = CollectionField()
    weight = StrictFloatField(required=False, default=1.0, min_value=0.0)
    priority = StrictIntegerField(required=False, default=0)
    shared = StrictBooleanField(required=False, default=False)


@extend_schema_serializer(
    examples=[
        OpenApiExample(
            "A profile",
            value={"profile": "support", "query": "How do I reset my password?"},
            request_only=True,
        ),
        OpenApiExample(
            "Collections with weights and a filter",
            value={
                "collections": [{"name": "docs", "weight": 2.0}, {"name": "faq", "shared": True}],
                "query": "How do I reset my password?",
                "k": 5,
                "filters": {"key": "topic", "operator": "in", "value": ["accounts", "billing"]},
            },
            request_only=True,
        ),
    ]
)
class ContextInput(InputSerializer):
    profile = StrictCharField(required=False, max_length=63)
    collections = BoundedListField(
        child=CollectionRefInput(),
        required=False,
        min_length=1,
        max_length=MAX_CONTEXT_COLLECTIONS,
        help_text="The collections to search, each (name, shared) pair at most once.",
        too_long=(
            "{length} collections; the limit is {max_length} per request "
            "(RAG_MAX_CONTEXT_COLLECTIONS)."
        ),
    )
    query = QueryField(max_length=MAX_QUERY_CHARS, max_words=MAX_QUERY_WORDS)
    k = StrictIntegerField(required=False, min_value=1, max_value=100)
    min_relevance = StrictFloatField(required=False, min_value=0.0, max_value=1.0)
    rerank = RerankField(required=False)
    filters = FilterField(required=False, allow_null=True)

    def validate_collections(self, value: list[dict[str, Any]]) -> list[dict[str, Any]]:
        seen: dict[tuple[str, bool], int] = {}
        for position, ref in enumerate(value):
            key = (ref["name"], ref["shared"])
            if key in seen:
                raise serializers.ValidationError(
                    f"collections[{position}] repeats collections[{seen[key]}] "
                    f"('{ref['name']}'); list each collection once."
                )
            seen[key] = position
        return value

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if ("profile" in attrs) == ("collections" in attrs):
            raise serializers.ValidationError(
                {"profile": ["Give either a profile or a list of collections, not both."]}
            )
        return attrs


class SourceOutput(serializers.Serializer):  # type: ignore[type-arg]
    footnote_id = serializers.IntegerField()
    chunk_id = serializers.CharField()
    document_id = serializers.CharField()
    title = serializers.CharField()
    source = serializers.CharField()  # type: ignore[assignment]
    collection = serializers.CharField()
    relevance = serializers.FloatField()
    rerank = serializers.DictField(allow_null=True)
    chunk_index = serializers.IntegerField()
    start_offset = serializers.IntegerField()
    end_offset = serializers.IntegerField()
    excerpt = serializers.CharField()
    has_image = serializers.BooleanField()
    page_number = serializers.IntegerField(
        allow_null=True, help_text="The page of its file the passage starts on; null if none."
    )
    page_end = serializers.IntegerField(
        allow_null=True, help_text="The page it ends on (page_number for a one-page passage)."
    )
    citation = serializers.CharField(
        help_text='How to refer to it: "<title>, p. 3", "<title>, pp. 3–4", or the title.'
    )
    metadata = serializers.DictField(help_text="The chunk's metadata, the document's included.")


class ContextOutput(serializers.Serializer):  # type: ignore[type-arg]
    context = serializers.CharField()  # type: ignore[assignment]
    sources = SourceOutput(many=True)
    profile = serializers.CharField(allow_null=True)
    relevance_fallback = serializers.BooleanField()
    skipped_collections = serializers.ListField(child=serializers.CharField())


class AnswerOutput(ContextOutput):
    answer = serializers.CharField(allow_null=True)
    cited = serializers.ListField(child=serializers.IntegerField())
    message = serializers.CharField(allow_null=True)
