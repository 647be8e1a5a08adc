"""The tenants app's models, one module a concept, all importable from ``tenants.models``
where Django looks for them."""

from __future__ import annotations

from tenants.models.audit import AuditEvent
from tenants.models.configuration import ProfileCollection, RagSource, RetrievalProfile, Synonym
from tenants.models.consistency import WriteMark
from tenants.models.credentials import ApiKey, ApiTokenGeneration
from tenants.models.ingestion import IngestJob, StoredFile
from tenants.models.tenancy import Domain, Limits, Tenant, UserQuota

__all__ = [
    "ApiKey",
    "ApiTokenGeneration",
    "AuditEvent",
    "Domain",
    "IngestJob",
    "Limits",
    "ProfileCollection",
    "RagSource",
    "RetrievalProfile",
    "StoredFile",
    "Synonym",
    "Tenant",
    "UserQuota",
    "WriteMark",
]
