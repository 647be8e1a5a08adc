"""PostgresStore's BM25 and fuzzy legs against the in-memory indexes on random corpora."""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from rag_plugin.engine import CollectionSearcher
from rag_plugin.lexical.analyzers import get_analyzer
from rag_plugin.lexical.bm25 import Bm25Index
from rag_plugin.lexical.fuzzy import FuzzyIndex
from rag_plugin.stores.base import CollectionInfo, DocumentInput, ScoredChunk
from rag_plugin.stores.postgres import PostgresStore
from rag_plugin.stores.postgres import blocks as postgres_blocks
from rag_plugin.stores.postgres import fuzzy as postgres_fuzzy
from rag_plugin.testing import FakeEmbedder

from ..pg_helpers import drop_schema, statistics_mismatches
from ..store_contract import chunk_inputs

SYLLABLES = ["ka", "lo", "mi", "ran", "te", "su", "vo", "nex", "pa", "dri", "ol", "ing"]
GROUPS = ("red", "green", "blue")


def make_vocabulary(rng: random.Random, size: int) -> list[str]:
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choices(SYLLABLES, k=rng.randint(1, 4))))
    return sorted(words)


def random_text(rng: random.Random, vocabulary: list[str], weights: list[float]) -> str:
    return " ".join(rng.choices(vocabulary, weights=weights, k=rng.randint(3, 30)))


@dataclass
class Corpus:
    """What the collection should hold: chunk id → (text, group)."""

    chunks: dict[str, tuple[str, str]] = field(default_factory=dict)
    documents: dict[str, list[str]] = field(default_factory=dict)  # source → chunk ids


@pytest.fixture(scope="module")
def pg_schema(dsn: str) -> Iterator[str]:
    """One schema for the module: the corpora are read, never written, by the tests."""
    name = f"test_{uuid.uuid4().hex[:16]}"
    yield name
    drop_schema(dsn, name)


@pytest.fixture(scope="module")
def store(dsn: str, pg_schema: str) -> Iterator[PostgresStore]:
    store = PostgresStore(dsn, schema=pg_schema)
    yield store
    store.close()


def ingest(
    store: PostgresStore,
    collection: CollectionInfo,
    corpus: Corpus,
    source: str,
    texts: list[str],
    groups: list[str],
    embedder: FakeEmbedder,
) -> None:
    _, chunks = chunk_inputs(texts, embedder.embed(texts), [{"group": g} for g in groups])
    record = store.upsert_document(collection, DocumentInput(source=source), chunks)
    for old in corpus.documents.pop(source, []):
        del corpus.chunks[old]
    ids = [f"{record.id}_{i}" for i in range(len(texts))]
    corpus.documents[source] = ids
    corpus.chunks.update(zip(ids, zip(texts, groups, strict=True), strict=True))


# Block shapes: the default, and blocks of 8 postings (full at level 1), so that this small
# corpus has full blocks, cut pieces, merges at every level and thinned full blocks.
BLOCK_SHAPES = {"default-blocks": {}, "small-blocks": {"FULL_LEVEL": 1, "BLOCK_SIZE": 8}}


@pytest.fixture(scope="module", params=sorted(BLOCK_SHAPES))
def block_shape(request: pytest.FixtureRequest) -> Iterator[str]:
    with pytest.MonkeyPatch.context() as patch:
        for name, value in BLOCK_SHAPES[request.param].items():
            patch.setattr(postgres_blocks, name, value)
        yield str(request.param)


@pytest.fixture(scope="module", params=["seed", "english"])
def filled_collection(
    request: pytest.FixtureRequest, store: PostgresStore, dsn: str, pg_schema: str, block_shape: str
) -> tuple[CollectionInfo, Corpus, object, list[str]]:
    """300 random documents, then 60 deleted and 60 re-ingested with new text, in a collection
    of their own (built once per analyzer and block shape: the tests only read it); returns the
    random generator's state after building it."""
    analyzer: str = request.param
    rng = random.Random(20240611)
    vocabulary = make_vocabulary(rng, 400)
    weights = [1.0 / (rank + 1) for rank in range(len(vocabulary))]  # Zipf-like
    embedder = FakeEmbedder(dimensions=4)
    name = f"random_{analyzer}_{block_shape}".replace("-", "_")
    collection = store.create_collection(
        name, dimensions=4, embedding_model=embedder.model_name, analyzer=analyzer
    )
    corpus = Corpus()
    for number in range(300):
        count = rng.randint(1, 4)
        texts = [random_text(rng, vocabulary, weights) for _ in range(count)]
        ingest(
            store, collection, corpus, f"doc{number}", texts, rng.choices(GROUPS, k=count), embedder
        )
    sources = sorted(corpus.documents)
    for source in rng.sample(sources, 60):
        document_id = corpus.documents[source][0].rsplit("_", 1)[0]
        store.delete_document(collection, document_id)
        for chunk_id in corpus.documents.pop(source):
            del corpus.chunks[chunk_id]
    for source in rng.sample(sorted(corpus.documents), 60):
        count = rng.randint(1, 5)
        texts = [random_text(rng, vocabulary, weights) for _ in range(count)]
        ingest(store, collection, corpus, source, texts, rng.choices(GROUPS, k=count), embedder)
    assert statistics_mismatches(dsn, pg_schema, name) == []
    return collection, corpus, rng.getstate(), vocabulary


@pytest.fixture
def filled(
    filled_collection: tuple[CollectionInfo, Corpus, object, list[str]],
) -> tuple[CollectionInfo, Corpus, random.Random, list[str]]:
    """The module's collection for this analyzer and block shape, with a random generator in
    the same state for every test (so each test's queries do not depend on the order)."""
    collection, corpus, state, vocabulary = filled_collection
    rng = random.Random()
    rng.setstate(state)  # type: ignore[arg-type]
    return collection, corpus, rng, vocabulary


def assert_leg_matches(
    leg: Callable[..., list[ScoredChunk]],
    reference: Bm25Index | FuzzyIndex,
    collection: CollectionInfo,
    corpus: Corpus,
    query: str,
) -> None:
    """The store's leg answers ``query`` as the in-memory index does: top 1, 10 and 50, and
    top 10 under a metadata filter (same ids, scores and order)."""
    for n in (1, 10, 50):
        got = [(hit.chunk.id, hit.score) for hit in leg(collection, query, n)]
        assert got == reference.search(query, n), (query, n)
    allowed = {cid for cid, (_, group) in corpus.chunks.items() if group == "blue"}
    got = [(hit.chunk.id, hit.score) for hit in leg(collection, query, 10, {"group": "blue"})]
    assert got == reference.search(query, 10, allowed_ids=allowed), query


def queries(rng: random.Random, vocabulary: list[str], count: int) -> list[str]:
    result = ["zzzz unknownword", vocabulary[0] + " " + vocabulary[0]]
    while len(result) < count:
        result.append(" ".join(rng.choices(vocabulary, k=rng.randint(1, 4))))
    return result


def test_bm25_scores_equal_the_in_memory_index_exactly(
    store: PostgresStore,
    filled: tuple[CollectionInfo, Corpus, random.Random, list[str]],
) -> None:
    collection, corpus, rng, vocabulary = filled
    reference = Bm25Index(analyzer=get_analyzer(collection.analyzer))
    for chunk_id, (text, _) in sorted(corpus.chunks.items()):
        reference.add_document(chunk_id, text)
    assert store.get_collection(collection.name).chunk_count == len(corpus.chunks)
    for query in queries(rng, vocabulary, 40):
        assert_leg_matches(store.bm25, reference, collection, corpus, query)


# The fuzzy leg's paths, forced on this small corpus: "ties" walks chunks in key order to
# break every tie instead of sending the tied ids to SQL; "exact-first" reads only the exact
# matches before θ, so more close words are left out; "probe-left-out" and "read-left-out"
# settle the chunks that only left-out words could lift by looking their words up in the
# forward index, or by reading those words' postings, one tier of similarity at a time or
# every tier in one read ("read-left-out-merged").
FUZZY_PATHS: dict[str, dict[str, object]] = {
    "default": {},
    "ties": {"_TIES_SENT": 0},
    "exact-first": {"_FIRST_READ": 0},
    "probe-left-out": {"_FIRST_READ": 0, "_PROBE_COST": 0},
    "read-left-out": {"_FIRST_READ": 0, "_PROBE_COST": 10**9, "_TIER_MERGE": 10**9},
    "read-left-out-merged": {"_FIRST_READ": 0, "_PROBE_COST": 10**9, "_TIER_MERGE": 0},
}


@pytest.fixture(params=sorted(FUZZY_PATHS))
def fuzzy_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Which fuzzy path is forced; asserts afterwards that it was taken."""
    taken = {"perfect": 0, "walk": 0, "probed": 0, "read": 0, "merged": 0}
    perfect, walk = postgres_fuzzy._perfect, postgres_fuzzy._walk_ties
    next_tiers = postgres_fuzzy._next_tiers
    chunk_words, word_groups = postgres_fuzzy.read_chunk_words, postgres_fuzzy.read_word_groups

    def spy_perfect(*args: Any, **kwargs: Any) -> Any:
        found = perfect(*args, **kwargs)
        taken["perfect"] += found is not None
        return found

    def spy_walk(*args: Any, **kwargs: Any) -> Any:
        taken["walk"] += 1
        return walk(*args, **kwargs)

    def spy_next_tiers(*args: Any, **kwargs: Any) -> Any:
        tiers = next_tiers(*args, **kwargs)
        taken["merged"] += len({group.level for group in tiers}) > 1
        return tiers

    def spy_chunk_words(*args: Any, **kwargs: Any) -> Any:
        taken["probed"] += 1
        return chunk_words(*args, **kwargs)

    def spy_word_groups(*args: Any, **kwargs: Any) -> Any:
        taken["read"] += 1
        return word_groups(*args, **kwargs)

    monkeypatch.setattr(postgres_fuzzy, "_perfect", spy_perfect)
    monkeypatch.setattr(postgres_fuzzy, "_walk_ties", spy_walk)
    monkeypatch.setattr(postgres_fuzzy, "_next_tiers", spy_next_tiers)
    monkeypatch.setattr(postgres_fuzzy, "read_chunk_words", spy_chunk_words)
    monkeypatch.setattr(postgres_fuzzy, "read_word_groups", spy_word_groups)
    for name, value in FUZZY_PATHS[request.param].items():
        monkeypatch.setattr(postgres_fuzzy, name, value)
    yield request.param
    assert taken["perfect"] > 0
    if request.param == "ties":
        assert taken["walk"] > 0
    if request.param == "probe-left-out":
        assert taken["probed"] > 0
    if request.param.startswith("read-left-out"):
        assert taken["probed"] == 0
        assert taken["read"] > 0
    if request.param == "read-left-out":
        assert taken["merged"] == 0
    if request.param == "read-left-out-merged":
        assert taken["merged"] > 0


def test_fuzzy_scores_and_corrections_equal_the_in_memory_index_exactly(
    store: PostgresStore,
    filled: tuple[CollectionInfo, Corpus, random.Random, list[str]],
    fuzzy_path: str,
) -> None:
    """Same ids, scores and order for every analyzer: the store scores whitespace words too."""
    collection, corpus, rng, vocabulary = filled
    reference = FuzzyIndex(analyzer=get_analyzer(collection.analyzer))
    for chunk_id, (text, _) in sorted(corpus.chunks.items()):
        reference.add_document(chunk_id, text)
    typos = []
    for word in rng.sample(vocabulary, 15):
        position = rng.randrange(len(word))
        typos.append(word[:position] + word[position + 1 :] + rng.choice("xq"))
    # Short and repeated words reach many close words; "ka" alone ties across many chunks;
    # the most common words together make many chunks score a perfect 1.0.
    common = " ".join(vocabulary[:2])
    stopwords = f"The {vocabulary[5]} of {vocabulary[9]}"  # english leaves "the", "of" out
    for query in ["ka", "ka ka lo", "x", common, stopwords, *queries(rng, vocabulary, 10), *typos]:
        assert store.correct_query(collection, query) == reference.correct_query(query), query
        assert_leg_matches(store.fuzzy, reference, collection, corpus, query)


def test_hybrid_with_concurrent_legs_equals_legs_in_turn(
    store: PostgresStore,
    dsn: str,
    pg_schema: str,
    filled: tuple[CollectionInfo, Corpus, random.Random, list[str]],
) -> None:
    collection, _, rng, vocabulary = filled
    one_connection = PostgresStore(dsn, schema=pg_schema, pool_max_size=1, create_schema=False)
    try:
        assert (store.concurrent_legs, one_connection.concurrent_legs) == (True, False)
        embedder = FakeEmbedder(dimensions=4)
        concurrent = CollectionSearcher(store, embedder)
        in_turn = CollectionSearcher(one_connection, embedder)
        for query in queries(rng, vocabulary, 15):
            for options in ({}, {"filters": {"group": "red"}}, {"correct_typos": True}):
                got = concurrent.search(collection, query, strategy="hybrid", **options)
                assert got.hits  # the dense leg always finds chunks
                assert got == in_turn.search(collection, query, strategy="hybrid", **options)
    finally:
        one_connection.close()
