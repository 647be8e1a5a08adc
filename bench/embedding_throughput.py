"""Embedding throughput of the offline model: our embedder vs fastembed called directly.

Not a test. Run from the repository root:
``PYTHONPATH=. .venv/bin/python bench/embedding_throughput.py [--chunks 64] [--words 200]``.
It measures chunks per second for a batch of distinct chunks and for the same number of chunks
of which half are duplicates (whitespace variants of other chunks), each against a baseline of
``TextEmbedding.embed`` on the same texts with the same loaded model, in the same run.
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable, Sequence

from rag_plugin.embedding import BUNDLED_MODEL, FastEmbedEmbedder, InMemoryEmbeddingCache
from rag_plugin.embedding.fastembed_backend import load_model

_WORDS = """
retrieval index query vector chunk document embedding model search rank score fusion tenant
collection cache token window overlap semantic lexical fuzzy dense sparse hybrid database schema
transaction citation answer source profile weight priority threshold the a of to and in for on
with by from as at is are was be this that it its which
"""
VOCABULARY = tuple(_WORDS.split())


def make_chunks(count: int, words: int, seed: int = 7) -> list[str]:
    """``count`` distinct chunks of ``words`` pseudo-random words each."""
    rng = random.Random(seed)
    return [" ".join(rng.choice(VOCABULARY) for _ in range(words)) for _ in range(count)]


def with_duplicates(chunks: Sequence[str]) -> list[str]:
    """Same length as ``chunks``: the first half, then whitespace variants of that half."""
    half = list(chunks[: len(chunks) // 2])
    return half + [f"  {text.replace(' ', '  ')}\n" for text in half]


def seconds(run: Callable[[], object]) -> float:
    started = time.perf_counter()
    run()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=64)
    parser.add_argument("--words", type=int, default=200)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--repeat", type=int, default=1, help="rounds; the best time counts")
    parser.add_argument("--model", default=BUNDLED_MODEL)
    args = parser.parse_args()

    started = time.perf_counter()
    loaded = load_model(args.model)
    load_seconds = time.perf_counter() - started
    print(f"model {loaded.name} ({loaded.dimensions}-d) loaded in {load_seconds:.2f} s")
    distinct = make_chunks(args.chunks, args.words)
    duplicated = with_duplicates(distinct)

    def fresh(cache: InMemoryEmbeddingCache | None = None) -> FastEmbedEmbedder:
        return FastEmbedEmbedder(
            args.model, fallback_model=None, batch_size=args.batch_size, cache=cache
        )

    def baseline(texts: list[str]) -> Callable[[], object]:
        return lambda: list(loaded.model.embed(texts, batch_size=args.batch_size))

    def ours(texts: list[str]) -> Callable[[], object]:
        return lambda: fresh().embed(texts)

    warm = fresh(InMemoryEmbeddingCache())
    warm.embed(distinct)
    cases = {
        "fastembed TextEmbedding.embed, distinct": baseline(distinct),
        "FastEmbedEmbedder.embed, distinct": ours(distinct),
        "fastembed TextEmbedding.embed, 50% duplicates": baseline(duplicated),
        "FastEmbedEmbedder.embed, 50% duplicates": ours(duplicated),
        "FastEmbedEmbedder.embed, warm cache": lambda: warm.embed(distinct),
    }
    # Warm-up, so neither side pays for onnxruntime's first-run allocations.
    list(loaded.model.embed(distinct[:2]))
    best = dict.fromkeys(cases, float("inf"))
    for _round in range(args.repeat):
        # Interleaved, so load from other processes hits both sides alike.
        for label, run in cases.items():
            best[label] = min(best[label], seconds(run))
    rates = {label: args.chunks / elapsed for label, elapsed in best.items()}
    for label, elapsed in best.items():
        print(f"{label:<46} {args.chunks:>4} chunks {elapsed:7.2f} s {rates[label]:9.2f} chunks/s")
    labels = list(rates)
    print()
    print(f"ratio vs baseline, distinct:        {rates[labels[1]] / rates[labels[0]]:6.2f}x")
    print(f"ratio vs baseline, 50% duplicates:  {rates[labels[3]] / rates[labels[2]]:6.2f}x")
    print(f"ratio vs baseline, warm cache:      {rates[labels[4]] / rates[labels[0]]:6.0f}x")


if __name__ == "__main__":
    main()
