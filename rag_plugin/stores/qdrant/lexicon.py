"""Where the Qdrant store's lexical legs look words up: Qdrant itself, or a mirror of it.

The BM25 and fuzzy legs and typo correction ask four questions of a collection: which
vocabulary entries sit under some deletion keys (or prefixes), how many live chunks there
are, how many hold an entry, and which chunks (within a filter) hold any of some words.
:class:`QdrantLexicon` asks Qdrant, which a server answers from its keyword indexes of
``keys``, ``prefixes``, ``terms`` and ``words``. qdrant-client's local mode has no indexes:
it checks each condition against every point in Python, so one fuzzy query over a few
thousand chunks takes seconds there.

In local mode this process is Qdrant's only client (a folder is locked to one client, and
``:memory:`` belongs to its client), so :class:`MirroredLexicon` keeps those answers in
memory: built from the collection's points on first use, and dropped (:meth:`forget`) when a
write or delete of the collection begins, all under the store's lock. Qdrant stays the only
state; the mirror is rebuilt from it, so nothing can drift. A server never gets a mirror,
since other processes write to it.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import NamedTuple

from qdrant_client import QdrantClient, models

from rag_plugin.stores.qdrant.layout import Layout, live_chunks, match
from rag_plugin.stores.qdrant.lexical import entry_lookups, scroll_all

__all__ = ["Holder", "MirroredLexicon", "QdrantLexicon"]


class Holder(NamedTuple):
    """A chunk point the fuzzy leg scores: its point id, chunk id and words."""

    point: str
    chunk_id: str
    words: list[str]


# Local mode sorts and filters every point of the Qdrant collection for each page of a scroll,
# so the mirror reads in pages this large (it exists in local mode only).
_MIRROR_PAGE = 100_000


class QdrantLexicon:
    """The lexical legs' lookups as Qdrant requests (what a server answers from indexes)."""

    def __init__(self, client: QdrantClient, layout: Layout) -> None:
        self._client = client
        self._layout = layout

    def entries(self, key: str, kind: str, keys: list[str], field: str = "keys") -> list[str]:
        """The collection's ``kind`` entries (``word`` or ``term``) stored under any of
        ``keys`` in ``field`` (``keys``: deletion keys; ``prefixes``, for words)."""
        points = scroll_all(
            self._client.scroll,
            collection_name=self._layout.vocabulary,
            scroll_filter=models.Filter(
                must=[
                    match("collection", key),
                    match("kind", kind),
                    models.FieldCondition(key=field, match=models.MatchAny(any=keys)),
                ]
            ),
            with_payload=["entry"],
        )
        return sorted(str((point.payload or {})["entry"]) for point in points)

    def live_count(self, chunks: str, key: str) -> int:
        """How many live chunks the collection has (BM25's N)."""
        return self._count(chunks, live_chunks(key))

    def holders(self, chunks: str, key: str, field: str, entry: str) -> int:
        """How many live chunks hold ``entry`` in ``field`` (``terms``: BM25's df;
        ``words``)."""
        return self._count(chunks, models.Filter(must=[live_chunks(key), match(field, entry)]))

    def word_holders(
        self, chunks: str, key: str, words: list[str], scope: models.Filter | None
    ) -> list[Holder]:
        """The chunks in ``scope`` (None: every live chunk of the collection) holding any of
        ``words``, each with the words it holds (all of them, or at least those of
        ``words``)."""
        holding = models.FieldCondition(key="words", match=models.MatchAny(any=words))
        points = scroll_all(
            self._client.scroll,
            collection_name=chunks,
            scroll_filter=models.Filter(
                must=[holding, live_chunks(key) if scope is None else scope]
            ),
            with_payload=["chunk_id", "words"],
        )
        return [
            Holder(str(point.id), str(payload["chunk_id"]), payload["words"])
            for point in points
            for payload in (point.payload or {},)
        ]

    def forget(self, key: str) -> None:
        """A write or delete of the collection begins (nothing is kept here)."""

    def _count(self, name: str, where: models.Filter) -> int:
        return int(self._client.count(name, count_filter=where, exact=True).count)


@dataclass
class _Vocabulary:
    """A collection's vocabulary points as lookups: (kind, field) → key → entries."""

    under: dict[tuple[str, str], dict[str, list[str]]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(list))
    )


@dataclass
class _Postings:
    """A collection's live chunks: how many, their chunk ids, and field → entry → the ids of
    the chunk points holding it."""

    count: int = 0
    chunk_ids: dict[str, str] = field(default_factory=dict)  # point id → chunk id
    holding: dict[str, dict[str, set[str]]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(set))
    )


class MirroredLexicon(QdrantLexicon):
    """The same answers from memory, rebuilt from Qdrant after every write (local mode)."""

    def __init__(self, client: QdrantClient, layout: Layout) -> None:
        super().__init__(client, layout)
        self._vocabularies: dict[str, _Vocabulary] = {}
        self._postings: dict[str, _Postings] = {}

    def entries(self, key: str, kind: str, keys: list[str], field: str = "keys") -> list[str]:
        under = self._vocabulary(key).under[(kind, field)]
        return sorted({entry for one in keys for entry in under.get(one, ())})

    def live_count(self, chunks: str, key: str) -> int:
        return self._postings_of(chunks, key).count

    def holders(self, chunks: str, key: str, field: str, entry: str) -> int:
        return len(self._postings_of(chunks, key).holding[field].get(entry, ()))

    def word_holders(
        self, chunks: str, key: str, words: list[str], scope: models.Filter | None
    ) -> list[Holder]:
        postings = self._postings_of(chunks, key)
        holding = postings.holding["words"]
        held: dict[str, list[str]] = defaultdict(list)
        for word in words:
            for point in holding.get(word, ()):
                held[point].append(word)
        if scope is None or not held:
            return [
                Holder(point, postings.chunk_ids[point], found) for point, found in held.items()
            ]
        # Qdrant applies the filters; the ids go first, since local mode checks a point's
        # conditions in order.
        points = scroll_all(
            self._client.scroll,
            collection_name=chunks,
            scroll_filter=models.Filter(must=[models.HasIdCondition(has_id=sorted(held)), scope]),
            with_payload=["chunk_id"],
        )
        return [
            Holder(str(point.id), str((point.payload or {})["chunk_id"]), held[str(point.id)])
            for point in points
        ]

    def forget(self, key: str) -> None:
        self._vocabularies.pop(key, None)
        self._postings.pop(key, None)

    def _vocabulary(self, key: str) -> _Vocabulary:
        if key not in self._vocabularies:
            vocabulary = _Vocabulary()
            points = scroll_all(
                self._client.scroll,
                collection_name=self._layout.vocabulary,
                scroll_filter=models.Filter(must=[match("collection", key)]),
                # The keys follow from the entry: reading them back would copy them all.
                with_payload=["kind", "entry"],
                page_size=_MIRROR_PAGE,
            )
            for point in points:
                payload = point.payload or {}
                kind, entry = str(payload["kind"]), str(payload["entry"])
                for field_name, keys in entry_lookups(kind, entry).items():
                    under = vocabulary.under[(kind, field_name)]
                    for one in keys:
                        under[one].append(entry)
            self._vocabularies[key] = vocabulary
        return self._vocabularies[key]

    def _postings_of(self, chunks: str, key: str) -> _Postings:
        if key not in self._postings:
            postings = _Postings()
            if self._client.collection_exists(chunks):
                points = scroll_all(
                    self._client.scroll,
                    collection_name=chunks,
                    scroll_filter=live_chunks(key),
                    with_payload=["chunk_id", "terms", "words"],
                    page_size=_MIRROR_PAGE,
                )
                postings.count = len(points)
                for point in points:
                    payload = point.payload or {}
                    postings.chunk_ids[str(point.id)] = str(payload["chunk_id"])
                    for field_name in ("terms", "words"):
                        holding = postings.holding[field_name]
                        for entry in payload[field_name]:
                            holding[entry].add(str(point.id))
            self._postings[key] = postings
        return self._postings[key]
