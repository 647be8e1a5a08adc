"""BM25 as the seed scores it (L1), over the whole index (L2), persisted as JSON (L4).

The seed's test documents are not published verbatim; these corpora were derived by hand from
the formula so that they reproduce the seed's worked numbers to four decimals:

- ``test_bm25_basic``: 9, 7 and 6 tokens; doc2 holds two of the query terms once each.
- ``test_bm25_ranking``: doc1 holds "apple" 3 times in 3 tokens, doc2 once in 2 tokens, and a
  3-token doc3 without it (N = 3, avgdl = 8/3).
- rust docs: doc1 "rust" ×3 + "programming" in 4 tokens, doc2 both once in 2 tokens, doc3 only
  "programming" in 2 tokens (df 2 and 3, avgdl = 8/3).
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from rag_plugin.exceptions import InvalidInputError, StoreError
from rag_plugin.lexical.analyzers import get_analyzer, tokenize
from rag_plugin.lexical.bm25 import Bm25Index, bm25_idf, bm25_term_score

BASIC = {
    "doc1": "The quick brown fox jumps over the lazy dog",
    "doc2": "A quick brown dog runs in the park",
    "doc3": "The lazy cat sleeps all day",
}
RANKING = {"doc1": "apple apple apple", "doc2": "apple banana", "doc3": "banana cherry date"}
RUST = {
    "doc1": "Rust rust RUST programming",
    "doc2": "Rust programming",
    "doc3": "Python programming",
}


def build(docs: dict[str, str], **kwargs: object) -> Bm25Index:
    index = Bm25Index(**kwargs)  # type: ignore[arg-type]
    for doc_id, text in docs.items():
        index.add_document(doc_id, text)
    return index


def rounded(hits: list[tuple[str, float]]) -> list[tuple[str, float]]:
    return [(doc_id, round(score, 4)) for doc_id, score in hits]


@pytest.mark.parametrize(
    ("docs", "query", "top_k", "expected"),
    [
        (BASIC, "quick brown fox", 10, [("doc1", 1.7574), ("doc2", 0.9578)]),
        (RANKING, "apple", 10, [("doc1", 0.7193), ("doc2", 0.5235)]),
        (RUST, "rust programming", 2, [("doc1", 0.7780), ("doc2", 0.6723)]),
        (RUST, "rust programming", 3, [("doc1", 0.7780), ("doc2", 0.6723), ("doc3", 0.1487)]),
        (RUST, "rust programming", 0, []),
    ],
)
def test_search_reproduces_the_seeds_worked_numbers(
    docs: dict[str, str], query: str, top_k: int, expected: list[tuple[str, float]]
) -> None:
    assert rounded(build(docs).search(query, top_k)) == expected


def test_query_terms_count_with_repetition() -> None:
    index = build(BASIC)
    once = dict(index.search("fox", 10))
    twice = dict(index.search("fox fox", 10))
    assert twice == {"doc1": pytest.approx(2 * once["doc1"], rel=1e-15)}


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("a", []),  # one-byte tokens never reach the index
        ("", []),
        ("!!! ---", []),
        ("zebra", []),
        ("hello world", ["doc1"]),  # "hello-world test_case" splits on - and _
        ("case", ["doc1"]),
    ],
)
def test_tokenization_of_queries_and_documents(query: str, expected: list[str]) -> None:
    index = build({"doc1": "hello-world test_case", "doc2": "another thing entirely"})
    assert [doc_id for doc_id, _ in index.search(query, 10)] == expected


def test_a_term_in_every_document_still_scores_above_zero() -> None:
    # The +1 inside the log keeps idf positive even for df == N.
    index = build({"a": "common word", "b": "common thing"})
    assert rounded(index.search("common", 10)) == [("a", 0.1823), ("b", 0.1823)]


def test_ties_are_broken_by_id() -> None:
    index = build({"b": "same text", "c": "same text", "a": "same text", "d": "other"})
    assert [doc_id for doc_id, _ in index.search("same", 2)] == ["a", "b"]
    assert [doc_id for doc_id, _ in index.search("same", 10)] == ["a", "b", "c"]


def test_remove_document_takes_it_out_of_scores_and_statistics() -> None:
    index = build({"doc1": "hello world", "doc2": "goodbye world"})
    assert index.remove_document("doc1") is True
    assert index.remove_document("doc1") is False
    assert index.search("hello", 10) == []
    assert (index.doc_count, index.avg_doc_length, len(index)) == (1, 2.0, 1)
    assert index.idf("hello") == 0.0
    assert index.remove_document("doc2") is True
    assert (index.doc_count, index.avg_doc_length) == (0, 0.0)
    assert index.search("world", 10) == []


def test_re_adding_an_id_replaces_it_without_double_counting() -> None:
    index = build(BASIC)
    index.add_document("doc1", "completely different words")
    fresh = build({**BASIC, "doc1": "completely different words"})
    assert index.doc_count == 3
    assert index.avg_doc_length == fresh.avg_doc_length == 16 / 3
    assert index.search("quick brown fox", 10) == fresh.search("quick brown fox", 10)
    assert index.search("different", 10) == fresh.search("different", 10)


def test_clear_forgets_everything() -> None:
    index = build(BASIC, k1=2.0, b=0.5)
    index.clear()
    assert (len(index), index.doc_count, index.avg_doc_length) == (0, 0, 0.0)
    assert index.search("quick", 10) == []
    assert (index.k1, index.b) == (2.0, 0.5)


def test_allowed_ids_filter_before_ranking() -> None:
    index = build(BASIC)
    assert [d for d, _ in index.search("quick brown fox", 1, allowed_ids={"doc2"})] == ["doc2"]
    assert index.search("quick brown fox", 10, allowed_ids=set()) == []
    # Statistics stay the collection's: the filter does not change doc2's score.
    full = dict(index.search("quick brown fox", 10))
    assert dict(index.search("quick brown fox", 10, allowed_ids={"doc2"})) == {"doc2": full["doc2"]}


@pytest.mark.parametrize(
    ("doc_count", "df", "expected"),
    [(3, 1, math.log(2.5 / 1.5 + 1)), (3, 3, math.log(0.5 / 3.5 + 1)), (3, 0, 0.0), (0, 0, 0.0)],
)
def test_bm25_idf(doc_count: int, df: int, expected: float) -> None:
    assert bm25_idf(doc_count, df) == expected


def test_bm25_term_score_follows_the_formula() -> None:
    idf = bm25_idf(3, 1)
    expected = idf * 3 * 2.2 / (3 + 1.2 * (0.25 + 0.75 * 3 / (8 / 3)))
    assert bm25_term_score(3, 3, 8 / 3, idf) == pytest.approx(expected, rel=1e-15)
    assert round(bm25_term_score(3, 3, 8 / 3, bm25_idf(3, 2)), 4) == 0.7193
    assert bm25_term_score(0, 3, 8 / 3, idf) == 0.0


def test_search_scores_equal_bm25_term_score_sums_exactly() -> None:
    # The PostgreSQL store re-scores its rows with bm25_term_score and must match bit for bit.
    index = build(BASIC)
    query = tokenize("quick brown fox fox the")
    for doc_id, score in index.search("quick brown fox fox the", 10):
        tokens = tokenize(BASIC[doc_id])
        expected = 0.0
        for term in query:
            if term in tokens:
                idf = index.idf(term)
                tf = tokens.count(term)
                expected += bm25_term_score(tf, len(tokens), index.avg_doc_length, idf)
        assert score == expected


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"k1": -1.0}, "k1 must be a finite number >= 0, got -1.0."),
        ({"k1": math.inf}, "k1 must be a finite number >= 0, got inf."),
        ({"b": 1.5}, "b must be a number between 0 and 1, got 1.5."),
        ({"analyzer": "nope"}, "Unknown analyzer: nope. Use: seed, english, german"),
    ],
)
def test_invalid_parameters_are_rejected(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidInputError) as raised:
        Bm25Index(**kwargs)  # type: ignore[arg-type]
    assert str(raised.value) == message


def test_negative_top_k_is_rejected() -> None:
    with pytest.raises(InvalidInputError, match="top_k must be zero or a positive integer"):
        build(BASIC).search("quick", -1)


def test_english_analyzer_matches_inflections() -> None:
    index = build({"doc1": "running shoes", "doc2": "the shoe box"}, analyzer="english")
    assert [doc_id for doc_id, _ in index.search("runs", 10)] == ["doc1"]
    assert [doc_id for doc_id, _ in index.search("the", 10)] == []
    assert sorted(doc_id for doc_id, _ in index.search("shoe", 10)) == ["doc1", "doc2"]


# -- differential test against rank_bm25 ----------------------------------------------


class SeedIdfBM25(BM25Okapi):  # type: ignore[misc]
    """rank_bm25's Okapi BM25 with the seed's idf, ln((N − df + 0.5)/(df + 0.5) + 1)."""

    def _calc_idf(self, nd: dict[str, int]) -> None:
        for word, freq in nd.items():
            self.idf[word] = math.log((self.corpus_size - freq + 0.5) / (freq + 0.5) + 1)


def random_corpus(rng: random.Random, size: int) -> dict[str, str]:
    words = [f"w{i}" for i in range(30)] + ["Alpha", "beta-gamma", "x", "Δelta"]
    weights = [1 / (rank + 1) for rank in range(len(words))]
    return {
        f"d{i:03d}": " ".join(rng.choices(words, weights, k=rng.randint(0, 12)))
        for i in range(size)
    }


def assert_matches_rank_bm25(index: Bm25Index, docs: dict[str, str], query: str) -> None:
    ids = sorted(docs)
    reference = SeedIdfBM25([tokenize(docs[doc_id]) for doc_id in ids], k1=1.2, b=0.75)
    expected = reference.get_scores(tokenize(query))
    got = dict(index.search(query, len(ids)))
    mine = np.array([got.get(doc_id, 0.0) for doc_id in ids])
    assert np.allclose(mine, expected, rtol=1e-12, atol=1e-12)
    # Only positive scores come back, and every positive reference score does.
    assert set(got) == {doc_id for doc_id, score in zip(ids, expected, strict=True) if score > 0}


@pytest.mark.parametrize("seed", range(8))
def test_scores_equal_rank_bm25_on_random_corpora_after_removes_and_re_adds(seed: int) -> None:
    rng = random.Random(seed)
    docs = random_corpus(rng, rng.randint(5, 60))
    index = build(docs)
    queries = ["w0", "w1 w1 w2", "alpha gamma", "Δelta w7 w29", "x w3", "missing w5"]
    for query in queries:
        assert_matches_rank_bm25(index, docs, query)
    for doc_id in rng.sample(sorted(docs), len(docs) // 3):
        index.remove_document(doc_id)
        del docs[doc_id]
    for doc_id in rng.sample(sorted(docs), len(docs) // 3):
        docs[doc_id] = random_corpus(rng, 1)["d000"]
        index.add_document(doc_id, docs[doc_id])
    docs["new"] = "w0 w0 w1 alpha"
    index.add_document("new", docs["new"])
    for query in queries:
        assert_matches_rank_bm25(index, docs, query)


# -- persistence ---------------------------------------------------------------------


def test_save_and_load_round_trip(tmp_path: Path) -> None:
    index = build(BASIC, k1=1.5, b=0.5, analyzer="english")
    index.remove_document("doc3")
    path = tmp_path / "bm25_index.json"
    index.save(path)
    loaded = Bm25Index.load(path)
    assert (loaded.k1, loaded.b, loaded.analyzer.name) == (1.5, 0.5, "english")
    assert (loaded.doc_count, loaded.avg_doc_length) == (index.doc_count, index.avg_doc_length)
    assert loaded.search("quick brown fox", 10) == index.search("quick brown fox", 10)


def test_saved_file_has_the_seed_layout(tmp_path: Path) -> None:
    path = tmp_path / "bm25_index.json"
    build({"doc1": "hello world", "doc2": "hello"}).save(path)
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data == {
        "documents": {"doc1": ["hello", "world"], "doc2": ["hello"]},
        "inverted_index": {"hello": ["doc1", "doc2"], "world": ["doc1"]},
        "document_frequencies": {"hello": 2, "world": 1},
        "doc_count": 2,
        "avg_doc_length": 1.5,
        "k1": 1.2,
        "b": 0.75,
        "analyzer": "seed",
    }


def test_load_reads_a_seed_file_and_recomputes_its_inflated_doc_count(tmp_path: Path) -> None:
    path = tmp_path / "bm25_index.json"
    seed_file = {
        "documents": {"doc1": ["hello", "world"]},
        "inverted_index": {"hello": ["doc1"], "world": ["doc1"]},
        "document_frequencies": {"hello": 1, "world": 1},
        "doc_count": 2,  # the seed counted a re-add twice
        "avg_doc_length": 2.0,
        "k1": 1.2,
        "b": 0.75,
    }
    path.write_text(json.dumps(seed_file), encoding="utf-8")
    loaded = Bm25Index.load(path)
    assert (loaded.doc_count, loaded.analyzer.name) == (1, "seed")
    assert [doc_id for doc_id, _ in loaded.search("hello", 10)] == ["doc1"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "Failed to deserialize BM25 index from"),
        ("[1, 2]", "expected a JSON object, got list"),
        ('{"documents": {"d": [1]}}', "the tokens of document 'd' are not a list of strings"),
        ('{"documents": {}, "analyzer": "nope"}', "Unknown analyzer: nope"),
    ],
)
def test_load_of_a_corrupt_file_raises_store_error(
    tmp_path: Path, content: str, message: str
) -> None:
    path = tmp_path / "bm25_index.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(StoreError, match=message):
        Bm25Index.load(path)


def test_load_of_a_missing_file_raises_store_error(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="Failed to read BM25 index from"):
        Bm25Index.load(tmp_path / "missing.json")


@pytest.mark.parametrize("content", [None, "{corrupt", '{"documents": 3}'])
def test_load_or_new_gives_an_empty_index_for_missing_or_corrupt_files(
    tmp_path: Path, content: str | None
) -> None:
    path = tmp_path / "bm25_index.json"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    index = Bm25Index.load_or_new(path, k1=2.0, analyzer=get_analyzer("english"))
    assert (len(index), index.k1, index.analyzer.name) == (0, 2.0, "english")


def test_load_or_new_loads_a_good_file(tmp_path: Path) -> None:
    path = tmp_path / "bm25_index.json"
    build(BASIC).save(path)
    assert len(Bm25Index.load_or_new(path)) == 3
