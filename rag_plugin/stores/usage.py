"""What a store holds for an owner or in all, and the limits a write may be held to (SPEC O7).

A store keeps its counts up to date with every write, so checking a limit reads a few rows,
never the chunks. :meth:`Store.upsert_documents` with ``limits`` checks them inside its write,
after the write's own changes and serialised with every other limited write to the same
owner or store, so two writers racing each other cannot both pass a limit: the second sees
the first's documents and is refused, and a refused write changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from rag_plugin.exceptions import InvalidInputError, QuotaExceededError

__all__ = ["Usage", "UsageLimits", "WriteLimits", "check_usage"]


@dataclass(frozen=True, slots=True)
class Usage:
    """Documents, chunks and bytes of chunk text (UTF-8) stored."""

    documents: int = 0
    chunks: int = 0
    text_bytes: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.documents + other.documents,
            self.chunks + other.chunks,
            self.text_bytes + other.text_bytes,
        )

    def __sub__(self, other: Usage) -> Usage:
        return Usage(
            self.documents - other.documents,
            self.chunks - other.chunks,
            self.text_bytes - other.text_bytes,
        )


@dataclass(frozen=True, slots=True)
class UsageLimits:
    """The most of each a holder may store; None is no limit."""

    documents: int | None = None
    chunks: int | None = None
    text_bytes: int | None = None

    def __post_init__(self) -> None:
        for name in ("documents", "chunks", "text_bytes"):
            value = getattr(self, name)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or value < 0
            ):
                raise InvalidInputError(f"A {name} limit must be None or an integer >= 0.")

    @property
    def any(self) -> bool:
        return any(v is not None for v in (self.documents, self.chunks, self.text_bytes))


@dataclass(frozen=True, slots=True)
class WriteLimits:
    """The limits of one write: the collection owner's (a user's, in the portal) and the
    whole store's (a tenant's), with the names an error gives them."""

    owner: UsageLimits = UsageLimits()
    store: UsageLimits = UsageLimits()
    owner_name: str = "owner"
    store_name: str = "store"

    @property
    def any(self) -> bool:
        return self.owner.any or self.store.any


_NAMES = (("documents", "documents"), ("chunks", "chunks"), ("text_bytes", "bytes of text"))


def check_usage(scope: str, limits: UsageLimits, after: Usage, added: Usage) -> None:
    """Raise ``QuotaExceededError`` if a write that added ``added`` left ``after`` over a
    limit it grew (a write that shrinks an over-limit holder, e.g. a shorter replacement
    after the limit was lowered, passes)."""
    for field, resource in _NAMES:
        limit = getattr(limits, field)
        grown = getattr(added, field)
        total = getattr(after, field)
        if limit is not None and grown > 0 and total > limit:
            raise QuotaExceededError(scope, resource, limit, total - grown, grown)
