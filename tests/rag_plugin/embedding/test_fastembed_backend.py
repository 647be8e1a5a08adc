"""E1/E5/E6: the fastembed backend, offline, loaded once, with its fallback chain.

Tests marked ``model`` run the real bundled ONNX model (about 2 s per load on 2 cores), so
they keep their texts few and short and share loads where the behaviour allows.
"""

from __future__ import annotations

import math
import resource
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from rag_plugin.embedding.cache import InMemoryEmbeddingCache
from rag_plugin.embedding.fastembed_backend import (
    BUNDLED_MODEL,
    DEFAULT_MODEL,
    FastEmbedEmbedder,
    model_load_count,
)
from rag_plugin.embedding.model_files import bundled_model_folder, folder_name
from rag_plugin.exceptions import InvalidInputError, ModelLoadError
from rag_plugin.vectors import cosine_similarity


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One models root for the module, so the bundled model is assembled and loaded once."""
    return tmp_path_factory.mktemp("models")


@pytest.fixture(scope="module")
def empty_fastembed_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fastembed-cache")


@pytest.fixture(scope="module")
def bundled(model_dir: Path, empty_fastembed_cache: Path) -> FastEmbedEmbedder:
    return FastEmbedEmbedder(
        BUNDLED_MODEL, model_dir=model_dir, cache_dir=empty_fastembed_cache, batch_size=4
    )


def test_construction_loads_nothing(model_dir: Path) -> None:
    before = model_load_count(BUNDLED_MODEL)

    embedder = FastEmbedEmbedder(model_dir=model_dir)

    assert embedder.configured_model == DEFAULT_MODEL
    assert embedder.fallback_model == BUNDLED_MODEL
    assert model_load_count(BUNDLED_MODEL) == before


def test_unknown_name_without_fallback_names_the_model(tmp_path: Path) -> None:
    embedder = FastEmbedEmbedder("no-such/model", fallback_model=None, model_dir=tmp_path)

    with pytest.raises(ModelLoadError) as caught:
        _ = embedder.dimensions

    assert str(caught.value) == (
        "Could not load the embedding model 'no-such/model': 'no-such/model' is neither a "
        "fastembed model name nor an existing model folder. No fallback model is configured."
    )


def test_uncached_fastembed_model_fails_fast_without_download(
    tmp_path: Path, empty_fastembed_cache: Path
) -> None:
    embedder = FastEmbedEmbedder(
        DEFAULT_MODEL, fallback_model=None, cache_dir=empty_fastembed_cache, model_dir=tmp_path
    )
    started = time.monotonic()

    with pytest.raises(ModelLoadError, match="never downloaded at run time") as caught:
        embedder.embed(["hello"])

    assert time.monotonic() - started < 5.0
    assert str(empty_fastembed_cache) in str(caught.value)
    assert str(tmp_path / folder_name(DEFAULT_MODEL)) in str(caught.value)


def test_both_models_bogus_raises_naming_both(tmp_path: Path) -> None:
    embedder = FastEmbedEmbedder("bogus/one", fallback_model="bogus/two", model_dir=tmp_path)

    with pytest.raises(ModelLoadError) as caught:
        embedder.embed_query("hello")

    message = str(caught.value)
    assert message.startswith("Could not load the embedding model 'bogus/one': 'bogus/one' is")
    assert "Could not load the fallback model 'bogus/two' either: 'bogus/two' is" in message


def test_broken_local_folder_reports_why(tmp_path: Path) -> None:
    (tmp_path / "broken").mkdir()
    embedder = FastEmbedEmbedder(str(tmp_path / "broken"), fallback_model=None)

    with pytest.raises(ModelLoadError, match="has no ONNX file"):
        _ = embedder.model_name


def test_invalid_batch_size_is_rejected() -> None:
    with pytest.raises(InvalidInputError, match="batch_size"):
        FastEmbedEmbedder(batch_size=0)


@pytest.mark.model
def test_bundled_model_gives_384_unit_vectors_that_rank_paraphrases(
    bundled: FastEmbedEmbedder,
) -> None:
    cat, kitten, market = bundled.embed(
        ["a cat sits on the mat", "a kitten is sitting on a rug", "the stock market fell today"]
    )

    assert bundled.model_name == BUNDLED_MODEL
    assert bundled.dimensions == 384
    assert [len(v) for v in (cat, kitten, market)] == [384, 384, 384]
    assert all(math.isclose(math.fsum(x * x for x in v), 1.0) for v in (cat, kitten, market))
    assert cosine_similarity(cat, kitten) > 0.6
    assert cosine_similarity(cat, market) < 0.2


@pytest.mark.model
def test_bundled_model_dedups_and_caches(model_dir: Path, empty_fastembed_cache: Path) -> None:
    cache = InMemoryEmbeddingCache()
    embedder = FastEmbedEmbedder(
        BUNDLED_MODEL, model_dir=model_dir, cache_dir=empty_fastembed_cache, cache=cache
    )

    first = embedder.embed(["hello world", " hello  world ", "goodbye"])
    again = embedder.embed(["goodbye", "hello world"])

    assert first[0] == first[1]
    assert again == [first[2], first[0]]
    assert embedder.stats.texts_embedded == 2
    assert embedder.stats.cache_hits == 2


@pytest.mark.model
def test_bogus_configured_model_falls_back_to_bundled(
    bundled: FastEmbedEmbedder, model_dir: Path, empty_fastembed_cache: Path
) -> None:
    reference = bundled.embed_query("fallback check")
    embedder = FastEmbedEmbedder(
        "bogus/model", model_dir=model_dir, cache_dir=empty_fastembed_cache
    )

    vector = embedder.embed_query("fallback check")

    assert embedder.model_name == BUNDLED_MODEL
    assert embedder.uses_fallback is True
    assert embedder.dimensions == 384
    assert vector == reference


@pytest.mark.model
def test_default_model_falls_back_when_not_cached(
    bundled: FastEmbedEmbedder, model_dir: Path, empty_fastembed_cache: Path
) -> None:
    _ = bundled.dimensions
    embedder = FastEmbedEmbedder(model_dir=model_dir, cache_dir=empty_fastembed_cache)

    assert embedder.model_name == BUNDLED_MODEL
    assert embedder.uses_fallback is True


@pytest.mark.model
def test_two_threads_first_use_loads_the_model_once(tmp_path: Path) -> None:
    # A fresh models root is a fresh process-wide key, so this load is not shared with others.
    before = model_load_count(BUNDLED_MODEL)
    barrier = threading.Barrier(2)
    results: dict[int, list[float]] = {}

    def use(worker: int) -> None:
        embedder = FastEmbedEmbedder(BUNDLED_MODEL, model_dir=tmp_path)
        barrier.wait()
        results[worker] = embedder.embed_query("same text")

    threads = [threading.Thread(target=use, args=(w,)) for w in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert model_load_count(BUNDLED_MODEL) == before + 1
    assert results[0] == results[1]
    assert len(results[0]) == 384


def _page_faults_of(call: Callable[[], object]) -> int:
    """Minor page faults of this process (every thread, ONNX's included) during ``call``."""
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    call()
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before


@pytest.mark.model
def test_warm_up_takes_the_memory_of_the_largest_runs_before_the_first_call(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    # Each fresh models root is a model loaded on its own, never run on a long batch before.
    long_batch = [f"{n} " + "a long text " * 200 for n in range(4)]  # cut at 256 tokens
    cold = FastEmbedEmbedder(BUNDLED_MODEL, model_dir=tmp_path_factory.mktemp("a"), batch_size=4)
    assert cold.dimensions == 384  # loaded, and run once on a short probe text
    warmed = FastEmbedEmbedder(BUNDLED_MODEL, model_dir=tmp_path_factory.mktemp("b"), batch_size=4)
    warmed.warm_up()

    cold_faults = _page_faults_of(lambda: cold.embed(long_batch))
    warm_faults = _page_faults_of(lambda: warmed.embed(long_batch))

    assert cold_faults > 5_000  # what a first job would pay (~19,000 pages here)
    assert warm_faults < cold_faults / 10
    assert warmed.stats.texts_embedded == 4  # the warm-up's own texts are not counted


@pytest.mark.model
def test_local_folder_path_is_a_model(
    bundled: FastEmbedEmbedder, model_dir: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "my-onnx-model"
    shutil.copytree(bundled_model_folder(model_dir), folder)
    embedder = FastEmbedEmbedder(str(folder), fallback_model=None)

    vector = embedder.embed_query("a local model")

    assert embedder.model_name == str(folder.resolve())
    assert embedder.uses_fallback is False
    assert cosine_similarity(vector, bundled.embed_query("a local model")) > 0.9999


@pytest.mark.model
def test_fastembed_name_is_served_from_its_offline_cache(
    bundled: FastEmbedEmbedder, model_dir: Path, tmp_path: Path
) -> None:
    # The layout huggingface_hub leaves after a download, built by hand: fastembed's own
    # name for all-MiniLM-L6-v2 then loads with local_files_only, no network involved.
    revision = "0123456789abcdef0123456789abcdef01234567"
    repo = tmp_path / "models--Qdrant--all-MiniLM-L6-v2-onnx"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(revision)
    shutil.copytree(bundled_model_folder(model_dir), repo / "snapshots" / revision)
    embedder = FastEmbedEmbedder(
        "sentence-transformers/all-MiniLM-L6-v2",
        fallback_model=None,
        cache_dir=tmp_path,
        model_dir=tmp_path / "no-operator-folders",
    )

    vector = embedder.embed_query("served from cache")

    assert embedder.model_name == "sentence-transformers/all-MiniLM-L6-v2"
    assert cosine_similarity(vector, bundled.embed_query("served from cache")) > 0.9999
