"""Cross-encoder models for the cross-encoder reranker, loaded offline from disk (SPEC R3).

A model is anything with fastembed's ``TextCrossEncoder.rerank(query, documents)`` interface.
:func:`load_cross_encoder` loads fastembed's models offline only (``local_files_only``; nothing
is downloaded at run time), from an operator folder ``<RAG_MODEL_DIR>/<name with / as -->`` or
fastembed's cache, and keeps the last four loaded, as the seed did.
"""

from __future__ import annotations

import os
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Protocol

from rag_plugin.exceptions import ModelLoadError
from rag_plugin.onnx_sessions import sessions_that_yield_the_cores

__all__ = ["CrossEncoderLoader", "CrossEncoderModel", "load_cross_encoder"]

_CACHE_SIZE = 4  # the seed kept an LRU of four cross-encoders


class CrossEncoderModel(Protocol):
    """fastembed's ``TextCrossEncoder`` interface: one relevance score per document."""

    def rerank(self, query: str, documents: Iterable[str]) -> Iterable[float]:
        """Score each document against the query (higher is more relevant)."""
        ...


CrossEncoderLoader = Callable[[str], CrossEncoderModel]


_models: OrderedDict[str, CrossEncoderModel] = OrderedDict()
_models_lock = threading.Lock()


def load_cross_encoder(
    model_name: str,
    *,
    cache_dir: str | os.PathLike[str] | None = None,
    model_dir: str | os.PathLike[str] | None = None,
) -> CrossEncoderModel:
    """Load a fastembed cross-encoder without downloading; the last four loaded are kept.

    The model comes from ``<models root>/<name with / as -->`` (``RAG_MODEL_DIR``, see
    :func:`rag_plugin.embedding.model_files.models_root`) when that folder exists, else from
    fastembed's cache (``cache_dir`` / ``FASTEMBED_CACHE_PATH``). Raises
    :class:`ModelLoadError` when neither has it or fastembed cannot load it.
    """
    with _models_lock:
        cached = _models.get(model_name)
        if cached is not None:
            _models.move_to_end(model_name)
            return cached
    model = _load(model_name, cache_dir, model_dir)
    with _models_lock:
        _models[model_name] = model
        _models.move_to_end(model_name)
        while len(_models) > _CACHE_SIZE:
            _models.popitem(last=False)
    return model


def _load(
    model_name: str,
    cache_dir: str | os.PathLike[str] | None,
    model_dir: str | os.PathLike[str] | None,
) -> CrossEncoderModel:
    # Set before fastembed (and huggingface_hub) are imported, as the embedding backend does.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    from rag_plugin.embedding.model_files import folder_name, models_root

    try:
        from fastembed.rerank.cross_encoder import TextCrossEncoder
    except ImportError as exc:
        raise ModelLoadError(f"fastembed is not installed ({exc}); pip install fastembed.") from exc
    supported: list[Mapping[str, Any]] = list(TextCrossEncoder.list_supported_models())
    if model_name.lower() not in {str(d["model"]).lower() for d in supported}:
        names = ", ".join(sorted(str(d["model"]) for d in supported))
        raise ModelLoadError(
            f"'{model_name}' is not a fastembed cross-encoder; supported models: {names}."
        )
    folder = models_root(model_dir) / folder_name(model_name)
    kwargs: dict[str, Any]
    if folder.is_dir():
        kwargs = {"specific_model_path": str(folder)}
    else:
        cache = Path(
            cache_dir
            or os.environ.get("FASTEMBED_CACHE_PATH")
            or Path(tempfile.gettempdir()) / "fastembed_cache"
        )
        kwargs = {"cache_dir": str(cache), "local_files_only": True}
    try:
        with sessions_that_yield_the_cores():
            model: CrossEncoderModel = TextCrossEncoder(model_name, **kwargs)
    except Exception as exc:  # onnxruntime, tokenizers and the hub raise many unrelated types
        raise ModelLoadError(
            f"Cross-encoder '{model_name}' could not be loaded offline from {folder} or "
            f"fastembed's cache ({exc}); models are never downloaded at run time."
        ) from exc
    return model
