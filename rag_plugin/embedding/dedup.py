"""Within-call deduplication: embed each distinct text once, fan vectors back in input order."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

from rag_plugin.exceptions import InvalidInputError

__all__ = ["DedupPlan", "content_hash_hex", "normalize_for_dedup"]

V = TypeVar("V")

_WHITESPACE_RUN = re.compile(r"\s+")


def normalize_for_dedup(text: str) -> str:
    """Trim ``text`` and collapse every whitespace run to one space (no case folding)."""
    return _WHITESPACE_RUN.sub(" ", text).strip()


def content_hash_hex(text: str) -> str:
    """SHA-256 of the normalised text, as lowercase hex: the identity of a text's embedding."""
    return hashlib.sha256(normalize_for_dedup(text).encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class DedupPlan:
    """Which inputs to embed and how to fan their vectors back out.

    ``unique_indices[j]`` is the input index of the j-th distinct text (its first occurrence),
    ``sources[i]`` is the slot ``j`` that input ``i`` takes its vector from, and ``hashes[j]``
    is the content hash of the j-th distinct text.
    """

    unique_indices: tuple[int, ...]
    sources: tuple[int, ...]
    hashes: tuple[str, ...]

    @classmethod
    def plan(cls, texts: Sequence[str]) -> DedupPlan:
        """Plan ``texts`` in one pass; a text's first occurrence decides its slot."""
        slot_of_hash: dict[str, int] = {}
        unique_indices: list[int] = []
        sources: list[int] = []
        for index, text in enumerate(texts):
            digest = content_hash_hex(text)
            slot = slot_of_hash.get(digest)
            if slot is None:
                slot = len(unique_indices)
                slot_of_hash[digest] = slot
                unique_indices.append(index)
            sources.append(slot)
        return cls(tuple(unique_indices), tuple(sources), tuple(slot_of_hash))

    def fan_out(self, vectors: Sequence[V]) -> list[V]:
        """Return one item per original input: ``result[i] = vectors[sources[i]]``."""
        if len(vectors) != len(self.unique_indices):
            raise InvalidInputError(
                f"Got {len(vectors)} vectors for {len(self.unique_indices)} unique texts; "
                "pass exactly one vector per unique text."
            )
        return [vectors[slot] for slot in self.sources]
