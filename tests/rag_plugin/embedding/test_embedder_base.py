"""E2/E3/E7: what every embedder does around its backend hook."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Sequence

import pytest

from rag_plugin.embedding.base import Embedder, EmbedderStats
from rag_plugin.embedding.cache import InMemoryEmbeddingCache
from rag_plugin.embedding.dedup import content_hash_hex
from rag_plugin.exceptions import EmbeddingError, InvalidInputError
from rag_plugin.testing import FakeEmbedder, fake_vector
from rag_plugin.vectors import normalize_embedding


class ScriptedEmbedder(Embedder):
    """Returns whatever ``vector_for`` says, so tests control the raw model output."""

    def __init__(
        self,
        vector_for: Callable[[str], Sequence[float]],
        *,
        cache: InMemoryEmbeddingCache | None = None,
        batch_size: int = 32,
    ) -> None:
        super().__init__(cache=cache, batch_size=batch_size)
        self.vector_for = vector_for
        self.seen: list[list[str]] = []

    @property
    def model_name(self) -> str:
        return "scripted"

    @property
    def dimensions(self) -> int:
        return 2

    def _embed_batch(self, texts: list[str]) -> list[list[float]]:
        self.seen.append(list(texts))
        return [list(self.vector_for(text)) for text in texts]


def unit(vector: Sequence[float]) -> float:
    return math.sqrt(math.fsum(x * x for x in vector))


def test_spec_worked_example_backend_sees_distinct_texts_once() -> None:
    embedder = FakeEmbedder()

    vectors = embedder.embed(["alpha", " alpha\n", "beta"])

    assert embedder.batches == [["alpha", "beta"]]
    v0 = normalize_embedding(fake_vector("alpha", 16))
    v1 = normalize_embedding(fake_vector("beta", 16))
    assert vectors == [v0, v0, v1]


def test_backend_receives_normalised_text_of_first_occurrence() -> None:
    embedder = FakeEmbedder()

    embedder.embed(["  hello \n world ", "hello world", "x"])

    assert embedder.batches == [["hello world", "x"]]


def test_duplicate_vectors_are_independent_copies() -> None:
    vectors = FakeEmbedder().embed(["alpha", "alpha"])
    vectors[0][0] = 42.0

    assert vectors[1][0] != 42.0


def test_empty_input_gives_empty_output_without_backend_call() -> None:
    embedder = FakeEmbedder()

    assert embedder.embed([]) == []
    assert embedder.batches == []
    assert embedder.stats == EmbedderStats(calls=1)


@pytest.mark.parametrize(
    ("texts", "message"),
    [
        (["ok", ""], "Text at index 1 is empty or whitespace-only"),
        (["ok", "fine", " \n\t"], "Text at index 2 is empty or whitespace-only"),
        (["ok", 3], "Text at index 1 is a int, not a str"),
    ],
)
def test_blank_or_non_string_text_is_rejected_by_index(texts: list[str], message: str) -> None:
    embedder = FakeEmbedder()

    with pytest.raises(InvalidInputError, match=message):
        embedder.embed(texts)
    assert embedder.batches == []


def test_a_bare_string_is_rejected() -> None:
    with pytest.raises(InvalidInputError, match="not one string"):
        FakeEmbedder().embed("alpha")


def test_vectors_are_l2_normalised() -> None:
    embedder = ScriptedEmbedder(lambda _text: [3.0, 4.0])

    assert embedder.embed(["a"]) == [[0.6, 0.8]]


def test_zero_vector_stays_zero() -> None:
    embedder = ScriptedEmbedder(lambda _text: [0.0, 0.0])

    assert embedder.embed(["a"]) == [[0.0, 0.0]]


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ([], "embedding must not be empty"),
        ([1.0, math.nan], "non-finite"),
        ([math.inf, 1.0], "non-finite"),
    ],
)
def test_invalid_backend_vectors_raise_embedding_error(raw: list[float], message: str) -> None:
    embedder = ScriptedEmbedder(lambda _text: raw)

    with pytest.raises(EmbeddingError, match=message):
        embedder.embed(["a"])


def test_backend_changing_dimension_raises() -> None:
    embedder = ScriptedEmbedder(lambda text: [1.0, 0.0] if text == "a" else [1.0, 0.0, 0.0])

    with pytest.raises(EmbeddingError, match="expected 2 dimensions, got 3"):
        embedder.embed(["a", "b"])


def test_backend_returning_wrong_count_raises() -> None:
    class Short(ScriptedEmbedder):
        def _embed_batch(self, texts: list[str]) -> list[list[float]]:
            return [[1.0, 0.0]]

    with pytest.raises(EmbeddingError, match="returned 1 vectors for 2 texts"):
        Short(lambda _t: [1.0]).embed(["a", "b"])


def test_unexpected_backend_exception_becomes_embedding_error() -> None:
    def boom(_text: str) -> list[float]:
        raise RuntimeError("onnx exploded")

    with pytest.raises(EmbeddingError, match="scripted failed on a batch of 1 texts: onnx"):
        ScriptedEmbedder(boom).embed(["a"])


@pytest.mark.parametrize(
    ("batch_size", "expected"),
    [
        (2, [["t0", "t1"], ["t2", "t3"], ["t4"]]),
        (5, [["t0", "t1", "t2", "t3", "t4"]]),
        (1, [["t0"], ["t1"], ["t2"], ["t3"], ["t4"]]),
    ],
)
def test_unique_texts_are_sent_in_batches(batch_size: int, expected: list[list[str]]) -> None:
    embedder = FakeEmbedder(batch_size=batch_size)

    embedder.embed(["t0", "t1", "t0", "t2", "t3", "t4", "t1"])

    assert embedder.batches == expected
    assert embedder.stats.batches == len(expected)


@pytest.mark.parametrize("batch_size", [0, -1, True, 2.5])
def test_batch_size_must_be_positive_integer(batch_size: object) -> None:
    with pytest.raises(InvalidInputError, match="batch_size must be a positive integer"):
        FakeEmbedder(batch_size=batch_size)  # type: ignore[arg-type]


def test_cache_across_calls_sends_nothing_the_second_time() -> None:
    cache = InMemoryEmbeddingCache()
    embedder = FakeEmbedder(cache=cache)
    first = embedder.embed(["alpha", "beta", "alpha"])

    second = embedder.embed([" beta ", "alpha"])

    assert second == [first[1], first[0]]
    assert embedder.batches == [["alpha", "beta"]]
    assert embedder.stats == EmbedderStats(
        calls=2, texts_requested=5, texts_embedded=2, cache_hits=2, batches=1
    )


def test_cache_is_shared_between_embedders_of_the_same_model() -> None:
    cache = InMemoryEmbeddingCache()
    FakeEmbedder(cache=cache).embed(["alpha"])
    other = FakeEmbedder(cache=cache)

    other.embed(["alpha", "gamma"])

    assert other.batches == [["gamma"]]
    assert other.stats.texts_embedded == 1
    assert other.stats.cache_hits == 1


def test_cache_is_keyed_by_model() -> None:
    cache = InMemoryEmbeddingCache()
    FakeEmbedder(cache=cache).embed(["alpha"])
    other = FakeEmbedder(cache=cache, model_name="another")

    other.embed(["alpha"])

    assert other.batches == [["alpha"]]


def test_cache_stores_normalised_vectors_by_content_hash() -> None:
    cache = InMemoryEmbeddingCache()
    ScriptedEmbedder(lambda _text: [3.0, 4.0], cache=cache).embed([" alpha "])

    assert cache.get_many("scripted", [content_hash_hex("alpha")]) == {
        content_hash_hex("alpha"): [0.6, 0.8]
    }


def test_damaged_cache_entry_is_re_embedded() -> None:
    cache = InMemoryEmbeddingCache()
    embedder = ScriptedEmbedder(lambda _text: [3.0, 4.0], cache=cache)
    embedder.embed(["seed"])
    cache.put_many("scripted", {content_hash_hex("alpha"): [1.0, 0.0, 0.0]})

    assert embedder.embed(["alpha"]) == [[0.6, 0.8]]
    assert embedder.seen == [["seed"], ["alpha"]]


def test_failed_batch_keeps_earlier_batches_in_cache() -> None:
    def vector_for(text: str) -> list[float]:
        if text == "bad text":
            raise RuntimeError("model failed")
        return [1.0, 0.0]

    cache = InMemoryEmbeddingCache()
    embedder = ScriptedEmbedder(vector_for, cache=cache, batch_size=1)

    # Batches go shortest first (then in input order), so "good" is embedded first.
    with pytest.raises(EmbeddingError):
        embedder.embed(["good", "bad text"])
    assert cache.get_many("scripted", [content_hash_hex("good")]) != {}


def test_embed_query_returns_one_vector_and_counts_a_call() -> None:
    embedder = FakeEmbedder(dimensions=8)

    vector = embedder.embed_query("what is rag?")

    assert vector == normalize_embedding(fake_vector("what is rag?", 8))
    assert embedder.stats == EmbedderStats(
        calls=1, texts_requested=1, texts_embedded=1, cache_hits=0, batches=1
    )


class InstructedEmbedder(ScriptedEmbedder):
    """Embeds a query unlike the same text as a document, as e5 does ("query:"/"passage:")."""

    def __init__(self, *, cache: InMemoryEmbeddingCache | None = None) -> None:
        super().__init__(lambda text: [1.0, 0.0], cache=cache)
        self.queries: list[list[str]] = []

    @property
    def query_model_key(self) -> str:
        return "scripted#query"

    def _embed_query_batch(self, texts: list[str]) -> list[list[float]]:
        self.queries.append(list(texts))
        return [[0.0, 1.0] for _ in texts]


def test_a_symmetric_model_serves_a_query_from_the_documents_cache() -> None:
    cache = InMemoryEmbeddingCache()
    embedder = ScriptedEmbedder(lambda text: [1.0, 0.0], cache=cache)
    embedder.embed(["what is rag?"])

    assert embedder.embed_query("what is rag?") == [1.0, 0.0]
    assert embedder.seen == [["what is rag?"]]
    assert embedder.stats.cache_hits == 1


def test_an_instructed_model_embeds_and_caches_queries_apart_from_documents() -> None:
    cache = InMemoryEmbeddingCache()
    embedder = InstructedEmbedder(cache=cache)
    document = embedder.embed(["what is rag?"])[0]

    query = embedder.embed_query(" what is rag?\n")
    again = InstructedEmbedder(cache=cache).embed_query("what is rag?")

    assert (document, query, again) == ([1.0, 0.0], [0.0, 1.0], [0.0, 1.0])
    assert embedder.seen == [["what is rag?"]]
    assert embedder.queries == [["what is rag?"]]
    digest = content_hash_hex("what is rag?")
    assert cache.get_many("scripted#query", [digest]) == {digest: [0.0, 1.0]}
    assert cache.get_many("scripted", [digest]) == {digest: [1.0, 0.0]}


def test_embed_query_rejects_blank_query() -> None:
    with pytest.raises(InvalidInputError, match="index 0 is empty"):
        FakeEmbedder().embed_query("  ")


def test_stats_snapshot_does_not_change_later() -> None:
    embedder = FakeEmbedder()
    before = embedder.stats
    embedder.embed(["a"])

    assert before == EmbedderStats()
    assert embedder.stats.texts_embedded == 1


def test_stats_are_exact_under_concurrent_calls() -> None:
    embedder = FakeEmbedder()

    def work(worker: int) -> None:
        for i in range(50):
            embedder.embed([f"{worker}-{i}", f"{worker}-{i}"])

    threads = [threading.Thread(target=work, args=(w,)) for w in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert embedder.stats == EmbedderStats(
        calls=200, texts_requested=400, texts_embedded=200, cache_hits=0, batches=200
    )
    assert all(abs(unit(v) - 1.0) < 1e-12 for v in embedder.embed(["x", "y"]))


def test_batches_group_texts_of_similar_length_each_in_input_order() -> None:
    embedder = FakeEmbedder(dimensions=4, batch_size=2)
    texts = ["a much longer text", "tiny", "mid size", "also tiny", "x"]

    vectors = embedder.embed(texts)

    # By length: x, tiny, mid size, also tiny, a much longer text; two per batch.
    assert embedder.batches == [["tiny", "x"], ["mid size", "also tiny"], ["a much longer text"]]
    assert vectors == [normalize_embedding(fake_vector(text, 4)) for text in texts]


def test_progress_counts_distinct_texts_after_the_cache_and_each_batch() -> None:
    cache = InMemoryEmbeddingCache()
    embedder = FakeEmbedder(4, cache=cache, batch_size=2)
    embedder.embed(["cached"])
    told: list[tuple[int, int]] = []
    embedder.embed(
        ["cached", "a", "bb", "a", "ccc", "dddd"], progress=lambda d, t: told.append((d, t))
    )
    # 5 distinct texts, 1 from the cache, then batches of 2 and 2.
    assert told == [(1, 5), (3, 5), (5, 5)]


def test_an_exception_from_progress_stops_embedding_and_keeps_finished_batches() -> None:
    cache = InMemoryEmbeddingCache()
    embedder = FakeEmbedder(4, cache=cache, batch_size=1)

    class Stop(Exception):
        pass

    def stop_after_first(done: int, total: int) -> None:
        if done == 1:
            raise Stop

    with pytest.raises(Stop):
        embedder.embed(["one", "two", "three"], progress=stop_after_first)
    assert len(embedder.batches) == 1  # the model saw one batch, not three
    assert len(cache.get_many(embedder.model_name, [content_hash_hex("one")])) == 1


def test_model_seconds_count_the_backend_calls_only() -> None:
    def slow(text: str) -> Sequence[float]:
        time.sleep(0.02)
        return [1.0, 0.0]

    embedder = ScriptedEmbedder(slow, cache=InMemoryEmbeddingCache(), batch_size=1)

    embedder.embed(["a", "b"])
    after_model = embedder.stats.model_seconds
    embedder.embed(["a", "b"])  # from the cache: the model is not called

    assert 0.04 <= after_model < 1.0
    assert embedder.stats.model_seconds == after_model
    assert embedder.stats == EmbedderStats(  # a timing, not compared with the counters
        calls=2, texts_requested=4, texts_embedded=2, cache_hits=2, batches=2
    )
