"""Query latency of the lexical indexes against reference implementations, in the same run.

Not a test. Run from the repository root:
``PYTHONPATH=. .venv/bin/python bench/lexical.py [--docs 10000 100000] [--queries 50]``.
Documents are short (8–30 words) drawn from a seeded Zipf-like vocabulary of pseudo-words.
For each corpus size it reports the p50 per query of

- ``Bm25Index.search(q, 10)`` vs ``rank_bm25`` (seed idf) ``get_scores`` on the same corpus,
- ``FuzzyIndex.search(q, 10)`` vs the seed's scan (``fuzzy_score`` over every document), the
  latter on fewer queries because it is slow,
- ``FuzzyIndex.correct_query``,

and checks that both indexes return what the references rank first.
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import string
import time
from collections.abc import Callable, Sequence

import numpy as np
from rank_bm25 import BM25Okapi

from rag_plugin.lexical.analyzers import tokenize
from rag_plugin.lexical.bm25 import Bm25Index
from rag_plugin.lexical.fuzzy import FuzzyIndex, fuzzy_score


class SeedIdfBM25(BM25Okapi):  # type: ignore[misc]
    """rank_bm25's Okapi BM25 with the seed's idf."""

    def _calc_idf(self, nd: dict[str, int]) -> None:
        for word, freq in nd.items():
            self.idf[word] = math.log((self.corpus_size - freq + 0.5) / (freq + 0.5) + 1)


def vocabulary(rng: random.Random, size: int) -> list[str]:
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choices(string.ascii_lowercase, k=rng.randint(3, 10))))
    return sorted(words)


def zipf_weights(size: int, exponent: float = 1.0) -> list[float]:
    return [1.0 / (rank + 1) ** exponent for rank in range(size)]


def corpus(rng: random.Random, words: list[str], weights: list[float], count: int) -> list[str]:
    return [" ".join(rng.choices(words, weights, k=rng.randint(8, 30))) for _ in range(count)]


def typo(rng: random.Random, word: str) -> str:
    position = rng.randrange(len(word))
    return word[:position] + rng.choice(string.ascii_lowercase) + word[position + 1 :]


def p50_ms(run: Callable[[str], object], queries: Sequence[str]) -> float:
    times = []
    for query in queries:
        started = time.perf_counter()
        run(query)
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def timed(label: str, run: Callable[[], object]) -> None:
    started = time.perf_counter()
    run()
    print(f"  {label}: {time.perf_counter() - started:.2f} s")


def bench(size: int, query_count: int, scan_queries: int, seed: int) -> None:
    rng = random.Random(seed)
    words = vocabulary(rng, 50_000)
    weights = zipf_weights(len(words))
    texts = corpus(rng, words, weights, size)
    ids = [f"d{i:06d}" for i in range(size)]
    print(f"\n{size} documents, {sum(len(t.split()) for t in texts) / size:.1f} words each")

    bm25, fuzzy = Bm25Index(), FuzzyIndex()
    reference: list[SeedIdfBM25] = []

    def build_bm25() -> None:
        for doc_id, text in zip(ids, texts, strict=True):
            bm25.add_document(doc_id, text)

    def build_fuzzy() -> None:
        for doc_id, text in zip(ids, texts, strict=True):
            fuzzy.add_document(doc_id, text)

    timed("Bm25Index build", build_bm25)
    timed("FuzzyIndex build", build_fuzzy)
    timed("rank_bm25 build", lambda: reference.append(SeedIdfBM25([tokenize(t) for t in texts])))
    okapi = reference[0]

    # 1-4 words: half drawn by frequency (common terms), half uniformly (rare terms).
    queries = [
        " ".join(rng.choices(words, weights if i % 2 else None, k=rng.randint(1, 4)))
        for i in range(query_count)
    ]
    ours = p50_ms(lambda q: bm25.search(q, 10), queries)
    theirs = p50_ms(lambda q: okapi.get_scores(tokenize(q)), queries)
    print(
        f"  BM25 p50: Bm25Index.search {ours:.3f} ms, rank_bm25 get_scores {theirs:.3f} ms"
        f" -> {theirs / ours:.1f}x faster"
    )
    for query in queries[:5]:
        scores = okapi.get_scores(tokenize(query))
        best = ids[int(np.argmax(scores))] if scores.max() > 0 else None
        hits = bm25.search(query, 1)
        top = hits[0][0] if hits else None
        assert top == best or math.isclose(scores.max(), hits[0][1]), query

    typo_queries = [
        " ".join(typo(rng, w) for w in rng.choices(words, weights, k=rng.randint(1, 3)))
        for _ in range(query_count)
    ]
    ours = p50_ms(lambda q: fuzzy.search(q, 10), typo_queries)
    scan = typo_queries[:scan_queries]

    def seed_scan(query: str) -> list[float]:
        return [fuzzy_score(query, text) for text in texts]

    theirs = p50_ms(seed_scan, scan)
    print(
        f"  fuzzy p50: FuzzyIndex.search {ours:.3f} ms, seed scan {theirs:.1f} ms"
        f" ({len(scan)} queries) -> {theirs / ours:.0f}x faster"
    )
    for query in scan[:2]:
        scores = seed_scan(query)
        best_score = max(scores)
        hits = fuzzy.search(query, 1)
        assert (hits[0][1] if hits else 0.0) == best_score, query
    correct = p50_ms(fuzzy.correct_query, typo_queries)
    print(f"  correct_query p50: {correct:.3f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--scan-queries", type=int, default=3)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    for size in args.docs:
        bench(size, args.queries, args.scan_queries, args.seed)


if __name__ == "__main__":
    main()
