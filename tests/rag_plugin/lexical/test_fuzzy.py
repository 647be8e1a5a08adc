"""Levenshtein matching, the seed's fuzzy score and query correction (L3), persisted (L4)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from rag_plugin.exceptions import InvalidInputError, StoreError
from rag_plugin.lexical.correction import Correction, QueryCorrection
from rag_plugin.lexical.fuzzy import (
    FuzzyIndex,
    correct_word_against,
    fuzzy_score,
    levenshtein,
    word_similarity,
)

ML = {
    "doc1": "machine learning algorithms",
    "doc2": "machne learning basics",
    "doc3": "cooking recipes",
}
PROGRAMMING = {
    "doc1": "Rust programming language",
    "doc2": "Python programming tutorial",
    "doc3": "vector database search",
}


def build(docs: dict[str, str], **kwargs: object) -> FuzzyIndex:
    index = FuzzyIndex(**kwargs)  # type: ignore[arg-type]
    for doc_id, text in docs.items():
        index.add_document(doc_id, text)
    return index


@pytest.mark.parametrize(
    ("a", "b", "distance"),
    [("kitten", "sitting", 3), ("same", "same", 0), ("", "abc", 3), ("日本", "日本語", 1)],
)
def test_levenshtein_counts_character_edits(a: str, b: str, distance: int) -> None:
    assert levenshtein(a, b) == distance


@pytest.mark.parametrize(
    ("query", "text", "score"),
    [
        ("machine", "machine learning algorithms", 1.0),
        ("machine", "machne learning basics", 6 / 7),
        ("machine", "cooking recipes", 0.0),
        # Two query words, one matched exactly: (1/2)·(1/2).
        ("machine zzzzzz", "machine learning", 0.25),
        # The whole text is lowercased; punctuation stays glued to the word.
        ("learning", "Machine LEARNING, fast", 1 - 1 / 9),
        # Words under 2 bytes in the text are skipped; 1-byte query words still count in |qw|.
        ("a machine", "a machine", 0.25),
        # Normalised by UTF-8 byte length: "café" is 5 bytes, one edit away from "cafe".
        ("cafe", "café", 1 - 1 / 5),
        ("", "anything", 0.0),
        ("machine", "", 0.0),
    ],
)
def test_fuzzy_score_is_the_seeds_formula(query: str, text: str, score: float) -> None:
    assert fuzzy_score(query, text) == pytest.approx(score, abs=1e-12)


def test_fuzzy_score_ignores_words_beyond_max_distance() -> None:
    assert fuzzy_score("abcdef", "abcxyz") == 0.0
    assert fuzzy_score("abcdef", "abcxyz", max_distance=3) == pytest.approx(0.5)


def test_word_similarity_uses_the_longer_byte_length() -> None:
    assert word_similarity("machine", "machne", 1) == 1 - 1 / 7
    assert word_similarity("ab", "cd", 2) == 0.0


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("machine", [("doc1", 1.0), ("doc2", 6 / 7)]),
        ("machne", [("doc2", 1.0), ("doc1", 6 / 7)]),
        ("learning", [("doc1", 1.0), ("doc2", 1.0)]),
        ("cookng recipe", [("doc3", 6 / 7)]),
        ("zzzzzzzz", []),
        ("", []),
    ],
)
def test_search_ranks_documents_by_fuzzy_score(
    query: str, expected: list[tuple[str, float]]
) -> None:
    hits = build(ML).search(query, 10)
    assert [doc_id for doc_id, _ in hits] == [doc_id for doc_id, _ in expected]
    assert [score for _, score in hits] == pytest.approx([score for _, score in expected])


def test_search_top_k_and_allowed_ids() -> None:
    index = build(ML)
    assert index.search("machine", 1) == [("doc1", 1.0)]
    assert index.search("machine", 0) == []
    assert index.search("machine", 10, allowed_ids={"doc2", "doc3"}) == [("doc2", 1 - 1 / 7)]
    with pytest.raises(InvalidInputError):
        index.search("machine", -1)


def test_a_language_analyzer_leaves_its_stopwords_out_of_fuzzy_queries() -> None:
    texts = {"a": "the cat sat on the mat", "b": "cats of the world", "c": "the end"}
    english, seed = FuzzyIndex(analyzer="english"), FuzzyIndex(analyzer="seed")
    for doc_id, text in texts.items():
        english.add_document(doc_id, text)
        seed.add_document(doc_id, text)
    # english scores "the cat" as "cat": a ("cat", 1.0), b ("cats", 1 − 1/4).
    assert english.search("The cat", 10) == [("a", 1.0), ("b", 0.75)]
    assert english.search("the of", 10) == []
    # seed keeps "the": c matches one of two words, (1/2)·(1/2).
    assert seed.search("the cat", 10) == [("a", 1.0), ("b", 0.875), ("c", 0.25)]


def random_text(rng: random.Random) -> str:
    words = ["alpha", "alpah", "beta", "betta", "gamma", "x", "é", "Delta,", "delta", "naïve"]
    words += ["naive", "ab", "ba", "abc", "data-set", "dataset", "Learning", "lerning"]
    return " ".join(rng.choices(words, k=rng.randint(0, 8)))


@pytest.mark.parametrize("seed", range(6))
def test_search_equals_fuzzy_score_over_every_document_exactly(seed: int) -> None:
    # The index finds candidates through rapidfuzz; the scores must be fuzzy_score's, bit for bit.
    rng = random.Random(seed)
    docs = {f"d{i:02d}": random_text(rng) for i in range(40)}
    index = build(docs)
    for doc_id in rng.sample(sorted(docs), 10):
        index.remove_document(doc_id)
        del docs[doc_id]
    for doc_id in rng.sample(sorted(docs), 5):
        docs[doc_id] = random_text(rng)
        index.add_document(doc_id, docs[doc_id])
    allowed = set(rng.sample(sorted(docs), 10))
    for _ in range(15):
        query = random_text(rng) or "alpha"
        expected = sorted(
            ((d, fuzzy_score(query, text)) for d, text in docs.items()),
            key=lambda pair: (-pair[1], pair[0]),
        )
        expected = [pair for pair in expected if pair[1] > 0]
        assert index.search(query, 100) == expected, query
        assert index.search(query, 100, allowed_ids=allowed) == [
            pair for pair in expected if pair[0] in allowed
        ]


# -- correction ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("programming", ("programming", 0)),
        ("progamming", ("programming", 1)),
        ("PROGAMMING", ("programming", 1)),
        ("vectr", ("vector", 1)),
        ("databse", ("database", 1)),
        ("xyz", None),
    ],
)
def test_correct_word(word: str, expected: tuple[str, int] | None) -> None:
    assert build(PROGRAMMING).correct_word(word) == expected


@pytest.mark.parametrize(
    ("query", "corrected", "corrections"),
    [
        ("progamming", "programming", [("progamming", "programming", 1)]),
        (
            "progamming languge",
            "programming language",
            [("progamming", "programming", 1), ("languge", "language", 1)],
        ),
        ("vectr databse", "vector database", [("vectr", "vector", 1), ("databse", "database", 1)]),
        ("PROGAMMING", "programming", [("progamming", "programming", 1)]),
        ("rust programming", "rust programming", []),
        ("Rust, xyz!", "rust xyz", []),  # no match: the token stays
        ("a !", "a !", []),  # no tokens: the query comes back unchanged
    ],
)
def test_correct_query(query: str, corrected: str, corrections: list[tuple[str, str, int]]) -> None:
    assert build(PROGRAMMING).correct_query(query) == QueryCorrection(
        corrected, tuple(Correction(*c) for c in corrections)
    )


def test_ties_go_to_the_more_frequent_word_then_alphabetically() -> None:
    index = build({"d1": "cart", "d2": "card", "d3": "card"})
    assert index.correct_word("carx") == ("card", 1)  # df 2 beats df 1
    index.remove_document("d3")
    assert index.correct_word("carx") == ("card", 1)  # df 1 each: alphabetical
    index.add_document("d4", "cart")
    assert index.correct_word("carx") == ("cart", 1)


@pytest.mark.parametrize(
    ("word", "vocabulary", "frequency", "expected"),
    [
        ("carx", ["cart", "card"], None, ("card", 1)),
        ("carx", ["cart", "card"], {"cart": 3, "card": 1}, ("cart", 1)),
        ("Cart", iter(["cart", "card"]), None, ("cart", 0)),
        ("carx", ["cat"], None, ("cat", 2)),
        ("carxyz", ["cat"], None, None),
        ("日本", ["日本語"], None, ("日本語", 1)),  # no byte-length prefilter
        ("anything", [], None, None),
    ],
)
def test_correct_word_against(
    word: str, vocabulary: list[str], frequency: dict[str, int] | None, expected: object
) -> None:
    assert correct_word_against(word, vocabulary, 2, frequency) == expected


def test_correct_word_against_rejects_a_negative_distance() -> None:
    with pytest.raises(InvalidInputError, match="max_distance must be zero or a positive"):
        correct_word_against("word", ["word"], -1)


def test_english_analyzer_corrects_against_stems_and_answers_in_words() -> None:
    index = build({"d1": "Connecting the databases"}, analyzer="english")
    assert index.vocabulary == frozenset({"connect", "databas"})
    # "databse" stems to "databs", one edit from the stem "databas" of "databases"; the
    # stopword stays, and each distance is the one between the two words shown.
    expected = QueryCorrection(
        "the connecting databases",
        (Correction("conect", "connecting", 4), Correction("databse", "databases", 2)),
    )
    assert index.correct_query("the conect databse") == expected
    assert index.correct_query("The connects, DATABASE") == QueryCorrection("the connects database")


def test_vocabulary_forgets_removed_documents_and_is_cleared() -> None:
    index = build({"d1": "alpha beta", "d2": "beta gamma"})
    assert index.vocabulary == frozenset({"alpha", "beta", "gamma"})
    assert dict(index.term_frequencies) == {"alpha": 1, "beta": 2, "gamma": 1}
    assert index.remove_document("d1") is True
    assert index.remove_document("d1") is False
    assert index.vocabulary == frozenset({"beta", "gamma"})
    index.add_document("d2", "delta")  # re-adding replaces
    assert index.vocabulary == frozenset({"delta"})
    index.clear()
    assert (index.vocabulary, len(index)) == (frozenset(), 0)
    assert index.correct_word("delta") is None


# -- persistence ---------------------------------------------------------------------


def test_save_and_load_round_trip(tmp_path: Path) -> None:
    index = build(ML, max_distance=1, analyzer="english")
    path = tmp_path / "fuzzy_index.json"
    index.save(path)
    loaded = FuzzyIndex.load(path)
    assert (loaded.max_distance, loaded.analyzer.name) == (1, "english")
    assert loaded.vocabulary == index.vocabulary
    assert loaded.search("machine learning", 10) == index.search("machine learning", 10)
    corrected = loaded.correct_query("lerning algoritms")
    assert corrected == index.correct_query("lerning algoritms")
    assert corrected.query == "learning algorithms"


def test_saved_file_has_the_seed_layout(tmp_path: Path) -> None:
    path = tmp_path / "fuzzy_index.json"
    build({"d1": "Hello World-wide"}).save(path)
    assert json.loads(path.read_text(encoding="utf-8")) == {
        "documents": {"d1": "hello world-wide"},
        "vocabulary": ["hello", "wide", "world"],
        "max_distance": 2,
        "analyzer": "seed",
    }


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{corrupt", "Failed to deserialize fuzzy index from"),
        ('{"documents": {"d": 3}}', "the text of document 'd' is not a string"),
        ('{"documents": {}, "max_distance": -2}', "max_distance must be zero or a positive"),
    ],
)
def test_load_of_a_corrupt_file_raises_store_error(
    tmp_path: Path, content: str, message: str
) -> None:
    path = tmp_path / "fuzzy_index.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(StoreError, match=message):
        FuzzyIndex.load(path)


@pytest.mark.parametrize("content", [None, "{corrupt", "null"])
def test_load_or_new_gives_an_empty_index_for_missing_or_corrupt_files(
    tmp_path: Path, content: str | None
) -> None:
    path = tmp_path / "fuzzy_index.json"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    index = FuzzyIndex.load_or_new(path, max_distance=1)
    assert (len(index), index.max_distance, index.vocabulary) == (0, 1, frozenset())
