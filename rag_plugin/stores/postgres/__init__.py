"""The PostgreSQL + pgvector store and embedding cache (psycopg 3; no Django)."""

from rag_plugin.stores.postgres.cache import PostgresEmbeddingCache
from rag_plugin.stores.postgres.connection import validate_schema_name
from rag_plugin.stores.postgres.replicas import ReplicaSet, ReplicaStatus
from rag_plugin.stores.postgres.schema import SCHEMA_VERSION, ensure_schema
from rag_plugin.stores.postgres.store import PostgresStore

__all__ = [
    "SCHEMA_VERSION",
    "PostgresEmbeddingCache",
    "PostgresStore",
    "ReplicaSet",
    "ReplicaStatus",
    "ensure_schema",
    "validate_schema_name",
]
