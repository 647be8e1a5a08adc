"""QdrantStore's legs against the in-memory indexes on a random corpus written, deleted and
rewritten: the same ids, scores and order.

The corpus is small enough that every chunk holding a query term is among the BM25 leg's
rescored candidates, where the ranking is exact (see :mod:`rag_plugin.stores.qdrant.lexical`);
``bench/store_agreement.py`` measures agreement on real text beyond that.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest

from rag_plugin.lexical.analyzers import get_analyzer
from rag_plugin.lexical.bm25 import Bm25Index
from rag_plugin.lexical.fuzzy import FuzzyIndex
from rag_plugin.stores.base import CollectionInfo
from rag_plugin.stores.qdrant import QdrantStore
from rag_plugin.testing import FakeEmbedder

from ..postgres.test_differential import (
    GROUPS,
    Corpus,
    assert_leg_matches,
    ingest,
    make_vocabulary,
    queries,
    random_text,
)


@pytest.fixture(scope="module", params=[True, False], ids=["mirror", "asking-qdrant"])
def store(request: pytest.FixtureRequest) -> Iterator[QdrantStore]:
    store = QdrantStore(location=":memory:", mirror=request.param)
    yield store
    store.close()


@pytest.fixture(scope="module", params=["seed", "english"])
def filled_collection(
    request: pytest.FixtureRequest, store: QdrantStore
) -> tuple[CollectionInfo, Corpus, object, list[str]]:
    """60 random documents, then 6 deleted and 6 re-ingested with new text, in a collection
    of their own (built once per store and analyzer: the tests only read it); returns the random
    generator's state after building it.

    Few deletes and rewrites: in local mode each costs about two seconds here, one exact count
    (a scan of every point in Python) per vocabulary entry the document held."""
    rng = random.Random(20261202)
    vocabulary = make_vocabulary(rng, 300)
    weights = [1.0 / (rank + 1) for rank in range(len(vocabulary))]
    embedder = FakeEmbedder(dimensions=4)
    collection = store.create_collection(
        f"random_{request.param}",
        dimensions=4,
        embedding_model=embedder.model_name,
        analyzer=request.param,
    )
    corpus = Corpus()
    for number in range(60):
        count = rng.randint(1, 3)
        texts = [random_text(rng, vocabulary, weights) for _ in range(count)]
        ingest(
            store, collection, corpus, f"doc{number}", texts, rng.choices(GROUPS, k=count), embedder
        )
    for source in rng.sample(sorted(corpus.documents), 6):
        document_id = corpus.documents[source][0].rsplit("_", 1)[0]
        store.delete_document(collection, document_id)
        for chunk_id in corpus.documents.pop(source):
            del corpus.chunks[chunk_id]
    for source in rng.sample(sorted(corpus.documents), 6):
        count = rng.randint(1, 4)
        texts = [random_text(rng, vocabulary, weights) for _ in range(count)]
        ingest(store, collection, corpus, source, texts, rng.choices(GROUPS, k=count), embedder)
    assert len(corpus.chunks) <= 200  # every holder of a term is rescored (n + 200 candidates)
    return collection, corpus, rng.getstate(), vocabulary


@pytest.fixture
def filled(
    filled_collection: tuple[CollectionInfo, Corpus, object, list[str]],
) -> tuple[CollectionInfo, Corpus, random.Random, list[str]]:
    """The module's collection for this store and analyzer, with a random generator in the
    same state for every test."""
    collection, corpus, state, vocabulary = filled_collection
    rng = random.Random()
    rng.setstate(state)  # type: ignore[arg-type]
    return collection, corpus, rng, vocabulary


def test_bm25_scores_equal_the_in_memory_index_exactly(
    store: QdrantStore, filled: tuple[CollectionInfo, Corpus, random.Random, list[str]]
) -> None:
    collection, corpus, rng, vocabulary = filled
    reference = Bm25Index(analyzer=get_analyzer(collection.analyzer))
    for chunk_id, (text, _) in sorted(corpus.chunks.items()):
        reference.add_document(chunk_id, text)
    assert store.get_collection(collection.name).chunk_count == len(corpus.chunks)
    for query in queries(rng, vocabulary, 20):
        assert_leg_matches(store.bm25, reference, collection, corpus, query)


def test_fuzzy_scores_equal_the_in_memory_index_exactly(
    store: QdrantStore, filled: tuple[CollectionInfo, Corpus, random.Random, list[str]]
) -> None:
    collection, corpus, rng, vocabulary = filled
    reference = FuzzyIndex(analyzer=get_analyzer(collection.analyzer))
    for chunk_id, (text, _) in sorted(corpus.chunks.items()):
        reference.add_document(chunk_id, text)
    typos = [word[:-1] + "x" for word in rng.sample(vocabulary, 5)]
    for query in [*queries(rng, vocabulary, 10), *typos, " ".join(typos[:3])]:
        assert_leg_matches(store.fuzzy, reference, collection, corpus, query)
    for word in typos:
        assert store.correct_query(collection, word) == reference.correct_query(word), word
