"""The store's schema history: every migration, in order, never edited once applied.

:func:`~rag_plugin.stores.postgres.schema.ensure_schema` runs, in one transaction, every
migration newer than the version a schema records. A change to the tables appends a
:class:`Migration` to ``history.py``, so existing data is migrated in place; its steps live in
the module of what they change (``tables.py``, ``postings.py``, ``near_entries.py``), and the
comments above each step say why the tables look as they do. Nothing here imports the live
code, so an applied migration never changes when the store's code does.
"""

from rag_plugin.stores.postgres.migrations.history import MIGRATIONS, SCHEMA_VERSION
from rag_plugin.stores.postgres.migrations.migration import Migration, Step

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "Migration", "Step"]
