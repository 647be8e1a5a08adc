"""The embedder contract: dedup, cache, batching, validation and L2 normalisation, done once.

Subclasses fill one hook, :meth:`Embedder._embed_batch`, which turns a list of distinct,
normalised texts into raw vectors. Everything else — the dedup plan (E2), the cache lookup by
(model, content hash) (E7), batching, validation and normalisation (E3) — happens here, so
every backend behaves the same.

Empty or whitespace-only texts are rejected with :class:`InvalidInputError` naming the index:
they carry no meaning, backends disagree about them (OpenAI-style servers refuse them, BERT
models embed two special tokens) and chunking never produces them.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from rag_plugin.embedding.cache import EmbeddingCache
from rag_plugin.embedding.dedup import DedupPlan, normalize_for_dedup
from rag_plugin.exceptions import EmbeddingError, InvalidInputError, InvalidVectorError, RagError
from rag_plugin.vectors import normalize_embedding, validate_embedding

__all__ = ["DEFAULT_BATCH_SIZE", "Embedder", "EmbedderStats", "length_batches"]

DEFAULT_BATCH_SIZE = 32
CACHE_PUT_EVERY_S = 1.0
"""New vectors go to the cache in one write per this many seconds of a call (and at its end),
not one per batch: what a process killed mid-call loses, against a cache write per batch."""

logger = logging.getLogger(__name__)


@dataclass(slots=True)
class EmbedderStats:
    """Counters of one embedder; :attr:`Embedder.stats` hands out a snapshot copy.

    ``calls`` counts :meth:`Embedder.embed` calls (``embed_query`` included),
    ``texts_requested`` the texts callers passed, ``texts_embedded`` the texts sent to the
    model, ``cache_hits`` the distinct texts served from the cache and ``batches`` the calls
    of the backend hook. ``model_seconds`` is the wall time spent in those calls (what the
    model cost, against what the work around it did); a timing, so not compared.
    """

    calls: int = 0
    texts_requested: int = 0
    texts_embedded: int = 0
    cache_hits: int = 0
    batches: int = 0
    model_seconds: float = field(default=0.0, compare=False)


def length_batches(lengths: Sequence[int], batch_size: int) -> list[list[int]]:
    """Split positions ``0..len(lengths)-1`` into batches of at most ``batch_size`` texts of
    similar length, each batch in position order.

    A transformer pads every text of a batch to the batch's longest, so batches of mixed
    lengths waste much of their work on padding; batches cut from the texts sorted by length
    do not. Position order inside a batch keeps what a backend sees predictable (SPEC E2's
    worked example: one batch, first occurrences in order).
    """
    by_length = sorted(range(len(lengths)), key=lambda position: lengths[position])
    return [
        sorted(by_length[start : start + batch_size])
        for start in range(0, len(by_length), batch_size)
    ]


class Embedder(ABC):
    """Turns texts into L2-normalised vectors, embedding each distinct text at most once."""

    def __init__(
        self, *, cache: EmbeddingCache | None = None, batch_size: int = DEFAULT_BATCH_SIZE
    ) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise InvalidInputError(f"batch_size must be a positive integer, got {batch_size!r}.")
        self.cache = cache
        self.batch_size = batch_size
        self._stats = EmbedderStats()
        self._stats_lock = threading.Lock()
        self.on_count: Callable[[dict[str, int]], None] | None = None
        """Told every increment of :attr:`stats`' counters (``{"texts_embedded": 32}``), e.g.
        to feed a metric; None: nobody is."""
        # Set by the first vector seen (or preset by a subclass that knows its dimension);
        # every later vector must match it, so one embedder never mixes dimensions.
        self._known_dimensions: int | None = None

    @property
    @abstractmethod
    def model_name(self) -> str:
        """The model's name; the cache key and what a collection records (E6)."""

    @property
    @abstractmethod
    def dimensions(self) -> int:
        """The length of every vector this embedder returns (may load the model)."""

    @abstractmethod
    def _embed_batch(self, texts: list[str]) -> list[list[float]]:
        """Return one raw vector per text, in order; texts are distinct and normalised."""

    def _embed_query_batch(self, texts: list[str]) -> list[list[float]]:
        """Return one raw vector per query text (same rules as :meth:`_embed_batch`).

        The same as a document by default. A model trained with a query instruction (e5's
        ``query:`` against ``passage:``) overrides this and :attr:`query_model_key`.
        """
        return self._embed_batch(texts)

    @property
    def query_model_key(self) -> str:
        """What query vectors are cached under: :attr:`model_name`, unless the model embeds a
        query differently from the same text as a document."""
        return self.model_name

    @property
    def stats(self) -> EmbedderStats:
        """A snapshot of the counters, safe to read while other threads embed."""
        with self._stats_lock:
            return dataclasses.replace(self._stats)

    def embed(
        self, texts: Sequence[str], *, progress: Callable[[int, int], None] | None = None
    ) -> list[list[float]]:
        """Return one unit-length vector per text, in input order (empty input → ``[]``).

        ``progress(done, total)`` is told how many of the distinct texts have their vector:
        once after the cache lookup, then after each batch of the model. An exception it
        raises stops the work there (the batches already embedded stay in the cache).
        """
        if isinstance(texts, str):
            raise InvalidInputError(
                "embed() takes a sequence of texts, not one string; use embed_query() for one."
            )
        return self._embed_texts(list(texts), query=False, progress=progress)

    def embed_query(self, text: str) -> list[float]:
        """Return the unit-length vector of one query text."""
        if not isinstance(text, str):
            raise InvalidInputError(f"The query is a {type(text).__name__}, not a str.")
        return self._embed_texts([text], query=True)[0]

    def _embed_texts(
        self,
        items: list[str],
        *,
        query: bool,
        progress: Callable[[int, int], None] | None = None,
    ) -> list[list[float]]:
        for index, text in enumerate(items):
            if not isinstance(text, str):
                raise InvalidInputError(
                    f"Text at index {index} is a {type(text).__name__}, not a str."
                )
            if not text.strip():
                raise InvalidInputError(
                    f"Text at index {index} is empty or whitespace-only; pass non-empty text."
                )
        if not items:
            self._count(calls=1)
            return []

        plan = DedupPlan.plan(items)
        model = self.query_model_key if query else self.model_name
        hook = self._embed_query_batch if query else self._embed_batch
        unique: list[list[float] | None] = self._cached_vectors(model, plan.hashes)
        hits = sum(vector is not None for vector in unique)
        missing = [slot for slot, vector in enumerate(unique) if vector is None]
        lengths = [len(items[plan.unique_indices[slot]]) for slot in missing]
        batches = 0
        done = hits
        if progress is not None:
            progress(done, len(unique))
        # New vectors reach the cache at least every CACHE_PUT_EVERY_S and at the end, and
        # when a later batch (or ``progress``) fails, so no finished batch is embedded again.
        pending: dict[str, list[float]] = {}
        put_at = time.perf_counter()
        try:
            for positions in length_batches(lengths, self.batch_size):
                slots = [missing[position] for position in positions]
                batch = [normalize_for_dedup(items[plan.unique_indices[slot]]) for slot in slots]
                fresh = self._embed_checked(model, hook, batch)
                batches += 1
                for slot, vector in zip(slots, fresh, strict=True):
                    unique[slot] = vector
                    pending[plan.hashes[slot]] = vector
                if time.perf_counter() - put_at >= CACHE_PUT_EVERY_S:
                    self._put(model, pending)
                    pending, put_at = {}, time.perf_counter()
                done += len(slots)
                if progress is not None:
                    progress(done, len(unique))
        except BaseException:
            try:
                self._put(model, pending)
            except Exception:  # the caller gets the error that stopped the work
                logger.warning("could not cache the vectors of finished batches", exc_info=True)
            raise
        self._put(model, pending)
        self._count(
            calls=1,
            texts_requested=len(items),
            texts_embedded=len(missing),
            cache_hits=hits,
            batches=batches,
        )
        vectors = [vector for vector in unique if vector is not None]
        # Copies, so a caller editing one duplicate's vector does not change the other's.
        return [list(vector) for vector in plan.fan_out(vectors)]

    def _put(self, model: str, vectors: dict[str, list[float]]) -> None:
        """Store ``vectors`` in the cache, if there is one and they are any."""
        if self.cache is not None and vectors:
            self.cache.put_many(model, vectors)

    def _cached_vectors(self, model: str, hashes: Sequence[str]) -> list[list[float] | None]:
        if self.cache is None:
            return [None] * len(hashes)
        found = self.cache.get_many(model, hashes)
        result: list[list[float] | None] = []
        for digest in hashes:
            vector = found.get(digest)
            # A damaged or foreign entry counts as a miss: re-embedding is always safe.
            if vector is not None and not self._is_valid(vector):
                vector = None
            result.append(vector)
        return result

    def _is_valid(self, vector: Sequence[float]) -> bool:
        try:
            validate_embedding(vector, self._known_dimensions)
        except InvalidVectorError:
            return False
        return True

    def _embed_checked(
        self, model: str, hook: Callable[[list[str]], list[list[float]]], batch: list[str]
    ) -> list[list[float]]:
        started = time.perf_counter()
        try:
            raw = hook(batch)
        except RagError:
            raise
        except Exception as exc:
            raise EmbeddingError(
                f"Embedding model {model} failed on a batch of {len(batch)} texts: {exc}"
            ) from exc
        finally:
            elapsed = time.perf_counter() - started
            with self._stats_lock:
                self._stats.model_seconds += elapsed
        if len(raw) != len(batch):
            raise EmbeddingError(
                f"Embedding model {model} returned {len(raw)} vectors for {len(batch)} texts."
            )
        checked: list[list[float]] = []
        for position, vector in enumerate(raw):
            try:
                validate_embedding(vector, self._known_dimensions)
            except InvalidVectorError as exc:
                raise EmbeddingError(
                    f"Embedding model {model} returned an invalid vector for text "
                    f"{batch[position][:40]!r}: {exc}."
                ) from exc
            if self._known_dimensions is None:
                self._known_dimensions = len(vector)
            checked.append(normalize_embedding([float(x) for x in vector]))
        return checked

    def _count(self, **increments: int) -> None:
        with self._stats_lock:
            for name, value in increments.items():
                setattr(self._stats, name, getattr(self._stats, name) + value)
        if self.on_count is not None:
            self.on_count(increments)
