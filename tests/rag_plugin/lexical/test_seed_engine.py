"""The seed's in-memory lexical engine (S2, S3, L4)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_plugin.exceptions import StoreError
from rag_plugin.fusion import HybridWeights
from rag_plugin.lexical.correction import Correction
from rag_plugin.lexical.seed_engine import SearchEngine

DOCS = {
    "doc1": "Rust programming language for systems",
    "doc2": "Python programming tutorial",
    "doc3": "vector database search engine",
    "doc4": "machine learning with vector embeddings",
}


@pytest.fixture
def engine() -> SearchEngine:
    engine = SearchEngine()
    for doc_id, text in DOCS.items():
        engine.index_document(doc_id, text)
    return engine


def test_engine_bm25_and_fuzzy_legs(engine: SearchEngine) -> None:
    assert [d for d, _ in engine.search_bm25("programming", 10)] == ["doc2", "doc1"]
    assert [d for d, _ in engine.search_fuzzy("machne", 10)] == ["doc4"]
    assert (len(engine), engine.is_empty) == (4, False)


def test_hybrid_fuses_semantic_bm25_and_fuzzy_by_weighted_rrf(engine: SearchEngine) -> None:
    weights = HybridWeights(0.5, 0.4, 0.1)
    fused = engine.search_hybrid("vector search", ["doc4", "doc1", "doc3"], weights, top_k=3)
    # bm25: doc3 (both terms) then doc4; fuzzy: doc3 then doc4; semantic: doc4, doc1, doc3.
    doc3 = 0.5 / 63 + 0.4 / 61 + 0.1 / 61
    doc4 = 0.5 / 61 + 0.4 / 62 + 0.1 / 62
    assert [d for d, _ in fused] == ["doc4", "doc3", "doc1"]
    assert [s for _, s in fused] == pytest.approx([doc4, doc3, 0.5 / 62], rel=1e-15)


def test_hybrid_accepts_scored_semantic_lists_and_truncates(engine: SearchEngine) -> None:
    fused = engine.search_hybrid("programming", [("doc3", 0.9), ("doc2", 0.8)], top_k=1)
    assert [d for d, _ in fused] == ["doc2"]
    assert engine.search_hybrid("programming", [], top_k=0) == []


def test_hybrid_takes_two_top_k_candidates_from_each_lexical_leg() -> None:
    engine = SearchEngine()
    for i in range(6):
        engine.index_document(f"d{i}", "word " * (i + 1))
    bm25 = [doc_id for doc_id, _ in engine.search_bm25("word", 6)]
    assert bm25 == ["d5", "d4", "d3", "d2", "d1", "d0"]
    weights = HybridWeights(1.0, 1.0, 0.0)
    # top_k=1: BM25 gives 2 candidates, so d0 (last by BM25) only gets its semantic 1/61 and
    # ties with d5, the BM25 winner; the tie goes to the smaller id.
    assert engine.search_hybrid("word", ["d0"], weights, top_k=1) == [("d0", 1 / 61)]
    # top_k=3: 6 candidates reach d0, which now adds 1/66 and wins alone.
    fused = engine.search_hybrid("word", ["d0"], weights, top_k=3)
    assert fused == [("d0", 1 / 61 + 1 / 66), ("d5", 1 / 61), ("d4", 1 / 62)]


def test_search_bm25_with_correction(engine: SearchEngine) -> None:
    results, corrected, corrections = engine.search_bm25_with_correction("progamming", 10)
    assert corrected == "programming"
    assert corrections == (Correction("progamming", "programming", 1),)
    assert [d for d, _ in results] == ["doc2", "doc1"]


def test_search_hybrid_with_correction(engine: SearchEngine) -> None:
    outcome = engine.search_hybrid_with_correction("vectr search", ["doc4"], top_k=2)
    assert outcome.corrected_query == "vector search"
    assert outcome.corrections == (Correction("vectr", "vector", 1),)
    assert [d for d, _ in outcome.results] == ["doc4", "doc3"]


def test_remove_document_and_clear(engine: SearchEngine) -> None:
    assert engine.remove_document("doc2") is True
    assert engine.remove_document("doc2") is False
    assert [d for d, _ in engine.search_bm25("programming", 10)] == ["doc1"]
    assert [d for d, _ in engine.search_fuzzy("python", 10)] == []
    engine.clear()
    assert (len(engine), engine.is_empty) == (0, True)
    assert engine.search_bm25("rust", 10) == []


def test_save_and_load_round_trip(engine: SearchEngine, tmp_path: Path) -> None:
    folder = tmp_path / "nested" / "index"
    engine.save(folder)
    assert sorted(p.name for p in folder.iterdir()) == ["bm25_index.json", "fuzzy_index.json"]
    loaded = SearchEngine.load(folder)
    assert len(loaded) == 4
    for query in ("vector search", "programming"):
        assert loaded.search_bm25(query, 10) == engine.search_bm25(query, 10)
        assert loaded.search_fuzzy(query, 10) == engine.search_fuzzy(query, 10)


def test_load_fails_when_a_file_is_missing(engine: SearchEngine, tmp_path: Path) -> None:
    engine.save(tmp_path)
    (tmp_path / "fuzzy_index.json").unlink()
    with pytest.raises(StoreError, match="Failed to read fuzzy index"):
        SearchEngine.load(tmp_path)


def test_load_rejects_indexes_with_different_analyzers(tmp_path: Path) -> None:
    SearchEngine(analyzer="seed").save(tmp_path)
    SearchEngine(analyzer="english").fuzzy.save(tmp_path / "fuzzy_index.json")
    with pytest.raises(StoreError, match="use different analyzers"):
        SearchEngine.load(tmp_path)


@pytest.mark.parametrize("damage", ["missing_dir", "corrupt_bm25", "missing_fuzzy"])
def test_load_or_new_gives_an_empty_engine(
    engine: SearchEngine, tmp_path: Path, damage: str
) -> None:
    folder = tmp_path / "index"
    if damage != "missing_dir":
        engine.save(folder)
    if damage == "corrupt_bm25":
        (folder / "bm25_index.json").write_text("{corrupt", encoding="utf-8")
    if damage == "missing_fuzzy":
        (folder / "fuzzy_index.json").unlink()
    fresh = SearchEngine.load_or_new(folder, analyzer="english")
    assert (fresh.is_empty, fresh.analyzer.name) == (True, "english")


def test_load_or_new_loads_a_saved_engine(engine: SearchEngine, tmp_path: Path) -> None:
    engine.save(tmp_path)
    assert len(SearchEngine.load_or_new(tmp_path)) == 4
