"""What a tenant admin configures for RAG: the source allowlist (SPEC T3), retrieval profiles
(SPEC R1) and the synonyms table (SPEC L5)."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator, RegexValidator
from django.db import models

from rag_plugin.exceptions import InvalidInputError
from rag_plugin.profiles import RetrievalProfile as LibraryProfile


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
