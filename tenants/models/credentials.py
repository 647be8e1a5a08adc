"""What lets a program act as a user: API token generations (SPEC A5) and API keys (SPEC O8)."""

from __future__ import annotations

from django.conf import settings
from django.db import models


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
