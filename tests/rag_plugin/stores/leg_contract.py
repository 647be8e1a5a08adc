"""The store contract, the search legs: dense by metric, BM25 and fuzzy scores equal to a fresh
reference index, correction, capabilities and filters before ranking."""

from __future__ import annotations

from typing import Any

import pytest

from rag_plugin.exceptions import (
    CollectionNotFoundError,
)
from rag_plugin.lexical.analyzers import get_analyzer
from rag_plugin.lexical.bm25 import Bm25Index
from rag_plugin.lexical.fuzzy import FuzzyIndex
from rag_plugin.stores.base import (
    CollectionInfo,
    Correction,
    DocumentInput,
    Store,
)
from rag_plugin.stores.context import SearchContext
from rag_plugin.testing import FakeEmbedder
from rag_plugin.vectors import DistanceMetric

from .contract_base import (
    ALICE,
    BOB,
    CORPUS,
    DENSE_TOLERANCE,
    EXPECTED_ORDER_2D,
    LEXICAL_TOLERANCE,
    QUERY_2D,
    VECTORS_2D,
    ContractBase,
    chunk_inputs,
    expected_similarity,
    ids,
)


class LegContract(ContractBase):
    """The store contract, the search legs."""

    # -- dense leg ---------------------------------------------------------------------

    @pytest.mark.parametrize("metric", list(DistanceMetric))
    def test_dense_orders_by_metric(self, store: Store, metric: DistanceMetric) -> None:
        collection = store.create_collection(
            "vectors", dimensions=2, embedding_model="hand", metric=metric
        )
        names = list(VECTORS_2D)
        _, chunks = chunk_inputs(names, [VECTORS_2D[n] for n in names])
        document = store.upsert_document(collection, DocumentInput(), chunks).id
        hits = store.dense(collection, QUERY_2D, 4)
        assert [hit.chunk.content for hit in hits] == EXPECTED_ORDER_2D[metric]
        assert [hit.chunk.id for hit in hits] == [
            f"{document}_{names.index(n)}" for n in EXPECTED_ORDER_2D[metric]
        ]
        for hit in hits:
            expected = expected_similarity(VECTORS_2D[hit.chunk.content], QUERY_2D, metric)
            assert hit.score == pytest.approx(expected, abs=DENSE_TOLERANCE)
        top_two = store.dense(collection, QUERY_2D, 2)
        assert [hit.chunk.content for hit in top_two] == EXPECTED_ORDER_2D[metric][:2]
        assert store.dense(collection, QUERY_2D, 0) == []

    def test_dense_on_an_empty_collection_is_empty(
        self, store: Store, collection: CollectionInfo, embedder: FakeEmbedder
    ) -> None:
        assert store.dense(collection, embedder.embed_query("anything"), 10) == []

    # -- lexical legs ------------------------------------------------------------------

    @pytest.mark.parametrize("analyzer", ["seed", "english"])
    def test_bm25_scores_equal_a_fresh_index_over_the_collection(
        self, store: Store, embedder: FakeEmbedder, analyzer: str
    ) -> None:
        collection = store.create_collection(
            "lex", dimensions=16, embedding_model="m", analyzer=analyzer
        )
        first = self.add(store, collection, embedder, CORPUS[:3])
        second = self.add(store, collection, embedder, CORPUS[3:])
        chunk_ids = [f"{first}_{i}" for i in range(3)] + [f"{second}_{i}" for i in range(2)]
        reference = Bm25Index(analyzer=get_analyzer(collection.analyzer))
        for chunk_id, text in zip(chunk_ids, CORPUS, strict=True):
            reference.add_document(chunk_id, text)
        for query in ("quick brown fox", "lazy", "learning data", "the the fox"):
            expected = reference.search(query, 10)
            hits = store.bm25(collection, query, 10)
            assert ids(hits) == [chunk_id for chunk_id, _ in expected]
            assert [h.score for h in hits] == pytest.approx(
                [score for _, score in expected], abs=LEXICAL_TOLERANCE
            )
        assert ids(store.bm25(collection, "quick brown fox", 1)) == [
            reference.search("quick brown fox", 1)[0][0]
        ]
        assert store.bm25(collection, "unrelated words", 10) == []

    def test_bm25_statistics_ignore_other_owners_collections(
        self, store: Store, embedder: FakeEmbedder
    ) -> None:
        mine = store.create_collection("docs", dimensions=16, embedding_model="m", owner=ALICE)
        theirs = store.create_collection("docs", dimensions=16, embedding_model="m", owner=BOB)
        document = self.add(store, mine, embedder, CORPUS[:2])
        self.add(store, theirs, embedder, ["fox fox fox", "brown fox", "fox"])
        reference = Bm25Index(analyzer=get_analyzer(mine.analyzer))
        for index, text in enumerate(CORPUS[:2]):
            reference.add_document(f"{document}_{index}", text)
        hits = store.bm25(mine, "fox", 10)
        assert [(h.chunk.id, h.score) for h in hits] == [
            (chunk_id, pytest.approx(score, abs=LEXICAL_TOLERANCE))
            for chunk_id, score in reference.search("fox", 10)
        ]

    @pytest.mark.parametrize("analyzer", ["seed", "english"])
    def test_fuzzy_scores_equal_a_fresh_index_over_the_collection(
        self, store: Store, embedder: FakeEmbedder, analyzer: str
    ) -> None:
        collection = store.create_collection(
            "lex", dimensions=16, embedding_model="m", analyzer=analyzer
        )
        document = self.add(store, collection, embedder, CORPUS)
        reference = FuzzyIndex(analyzer=get_analyzer(collection.analyzer))
        for index, text in enumerate(CORPUS):
            reference.add_document(f"{document}_{index}", text)
        hits = store.fuzzy(collection, "machine", 10)
        assert [(h.chunk.id, h.score) for h in hits] == [
            (f"{document}_3", pytest.approx(1.0, abs=LEXICAL_TOLERANCE)),
            (f"{document}_4", pytest.approx(6 / 7, abs=LEXICAL_TOLERANCE)),
        ]
        # No query word here is close only to a stopword: a store may find fuzzy candidates
        # through analyzer terms, which drop stopwords (see rag_plugin/stores/postgres/lexical.py).
        for query in ("machine", "quikc brwn", "lazzy cat"):
            expected = reference.search(query, 10)
            assert [(h.chunk.id, h.score) for h in store.fuzzy(collection, query, 10)] == [
                (chunk_id, pytest.approx(score, abs=LEXICAL_TOLERANCE))
                for chunk_id, score in expected
            ]

    def test_lexical_legs_score_the_search_contexts_analysis_of_the_query(
        self, store: Store, collection: CollectionInfo, embedder: FakeEmbedder
    ) -> None:
        # A search analyses its query once, in its context, for all its legs: a leg scores
        # the context's terms and words, not its own analysis of the text.
        self.add(store, collection, embedder, CORPUS)
        context = _FixedAnalysis(tokens=["fox"], words=["machine"])
        assert store.bm25(collection, "unrelated words", 10) == []
        bm25 = store.bm25(collection, "unrelated words", 10, context)
        fuzzy = store.fuzzy(collection, "unrelated words", 10, context)
        assert ids(bm25) == ids(store.bm25(collection, "fox", 10)) != []
        assert ids(fuzzy) == ids(store.fuzzy(collection, "machine", 10)) != []

    def test_correct_query_uses_the_collection_vocabulary(
        self, store: Store, collection: CollectionInfo, embedder: FakeEmbedder
    ) -> None:
        self.add(store, collection, embedder, ["machine learning", "deep networks"])
        corrected = store.correct_query(collection, "machne lerning netwrks")
        assert corrected.query == "machine learning networks"
        assert corrected.corrections == (
            Correction("machne", "machine", 1),
            Correction("lerning", "learning", 1),
            Correction("netwrks", "networks", 1),
        )
        unchanged = store.correct_query(collection, "machine learning")
        assert (unchanged.query, unchanged.corrections) == ("machine learning", ())

    def test_correct_query_ignores_another_owners_vocabulary(
        self, store: Store, embedder: FakeEmbedder
    ) -> None:
        mine = store.create_collection("docs", dimensions=16, embedding_model="m", owner=ALICE)
        theirs = store.create_collection("docs", dimensions=16, embedding_model="m", owner=BOB)
        self.add(store, theirs, embedder, ["machine learning"])
        assert store.correct_query(mine, "machne").corrections == ()

    def test_find_sources_gives_the_collection_and_each_stored_source_with_its_chunks(
        self, store: Store, embedder: FakeEmbedder
    ) -> None:
        collection = store.create_collection(
            "docs", dimensions=16, embedding_model="m", owner=ALICE
        )
        a = self.add(store, collection, embedder, ["one", "two"], source="a.md")
        self.add(store, collection, embedder, ["three"], source="b.md")
        info, found = store.find_sources("docs", owner=ALICE, sources=["a.md", "missing", ""])
        assert (info.name, info.owner, info.document_count) == ("docs", ALICE, 2)
        assert list(found) == ["a.md"]
        record, chunks = found["a.md"]
        assert record.id == a
        assert [c.content for c in chunks] == ["one", "two"]
        assert store.find_sources("docs", owner=ALICE, sources=[])[1] == {}
        with pytest.raises(CollectionNotFoundError):
            store.find_sources("docs", owner=BOB, sources=["a.md"])

    def test_concurrent_legs_is_a_declared_capability(self, store: Store) -> None:
        assert isinstance(store.concurrent_legs, bool)

    # -- filters -----------------------------------------------------------------------

    def test_filters_apply_before_ranking_on_every_leg(
        self, store: Store, embedder: FakeEmbedder
    ) -> None:
        collection = store.create_collection("filtered", dimensions=2, embedding_model="hand")
        keep = {7, 42, 93}
        texts, vectors, metadata = [], [], []
        for i in range(100):
            kept = i in keep
            # Kept chunks are the worst matches for every leg, so ranking first and filtering
            # afterwards would find none of them in the top 10.
            texts.append(f"otter chunk{i}" if kept else f"otter otter seal chunk{i}")
            vectors.append([-1.0, i / 100] if kept else [1.0, i / 100])
            metadata.append({"group": "keep" if kept else "other"})
        _, chunks = chunk_inputs(texts, vectors, metadata)
        document = store.upsert_document(collection, DocumentInput(), chunks).id
        expected = {f"{document}_{i}" for i in keep}
        legs = {
            "dense": lambda f: store.dense(collection, [1.0, 0.0], 10, f),
            "bm25": lambda f: store.bm25(collection, "otter", 10, f),
            "fuzzy": lambda f: store.fuzzy(collection, "otter seal", 10, f),
        }
        for leg, search in legs.items():
            assert not expected & set(ids(search(None))), leg
            assert set(ids(search({"group": "keep"}))) == expected, leg

    def test_filters_match_document_fields_and_typed_values(
        self, store: Store, collection: CollectionInfo, embedder: FakeEmbedder
    ) -> None:
        a = self.add(
            store,
            collection,
            embedder,
            ["heron text"],
            source="a.md",
            title="A",
            metadata=[{"page": 3, "flag": True}],
        )
        b = self.add(
            store,
            collection,
            embedder,
            ["heron text"],
            source="b.md",
            title="B",
            metadata=[{"page": 4, "flag": 1}],
        )
        vector = embedder.embed_query("heron text")
        cases: list[tuple[dict[str, Any], list[str]]] = [
            ({"source": "a.md"}, [f"{a}_0"]),
            ({"title": "B"}, [f"{b}_0"]),
            ({"page": 3}, [f"{a}_0"]),
            ({"flag": True}, [f"{a}_0"]),
            ({"source": "a.md", "page": 4}, []),
            ({"missing": "x"}, []),
        ]
        for filters, expected in cases:
            assert sorted(ids(store.dense(collection, vector, 10, filters))) == expected, filters
            assert sorted(ids(store.bm25(collection, "heron", 10, filters))) == expected, filters
            assert sorted(ids(store.fuzzy(collection, "heron", 10, filters))) == expected, filters


class _FixedAnalysis(SearchContext):
    """A search context whose analysis of any query is given."""

    __slots__ = ("_tokens", "_words")

    def __init__(self, *, tokens: list[str], words: list[str]) -> None:
        super().__init__()
        self._tokens, self._words = tokens, words

    def tokens(self, analyzer: str, query: str) -> list[str]:
        return self._tokens

    def fuzzy_words(self, analyzer: str, query: str) -> list[str]:
        return self._words
