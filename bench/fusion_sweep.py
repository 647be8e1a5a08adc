"""Hybrid fusion settings compared on a BEIR data set: analyzer, weights, RRF k, candidates per leg.

Not a test. Run from the repository root (train/tuning data only: SciFact train, Vaswani):
``PYTHONPATH=. .venv/bin/python bench/fusion_sweep.py --data ../shared/eval/scifact --split train``

The corpus is ingested through ``ingest_text`` (as in ``bench/quality.py``, embeddings from the
same cache) once per analyzer. Each leg (dense; BM25 and fuzzy per analyzer) is asked once per
query for its top ``--depth`` chunks from the store; every setting then fuses the first
``candidates`` of each leg with :class:`rag_plugin.fusion.RrfFusion` — the engine's hybrid path
with its ``2·top_k`` replaced by ``candidates`` — and keeps the top 10 chunks, so a document
ranks as its best chunk. Prints nDCG@10 and MRR@10 per setting, best first.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.beir import load_beir
from bench.metrics import best_chunk_documents, evaluate
from bench.quality import CACHE_PATH, Corpus, ingest_corpus, make_embedder, open_store
from rag_plugin.fusion import RrfFusion
from rag_plugin.stores.base import ScoredChunk

TOP_K = 10


@dataclass(frozen=True)
class Setting:
    """One hybrid configuration."""

    analyzer: str
    semantic: float
    bm25: float
    fuzzy: float
    k: float
    candidates: int
    fuzzy_candidates: int | None = None  # None: ``candidates``, like the other legs

    @property
    def label(self) -> str:
        fuzzy = "" if self.fuzzy_candidates is None else f"/fuzzy {self.fuzzy_candidates}"
        return (
            f"{self.analyzer} w={self.semantic:g}/{self.bm25:g}/{self.fuzzy:g}"
            f" k={self.k:g} n={self.candidates}{fuzzy}"
        )


Legs = dict[str, dict[str, list[str]]]
"""leg name → query id → chunk keys ``<BEIR id>#<index>``, best first.

Leg names: ``dense``, ``bm25:<analyzer>``, ``fuzzy:<analyzer>``.
"""


def collect_legs(corpora: dict[str, Corpus], depth: int) -> tuple[Legs, dict[str, str]]:
    """Every leg's top ``depth`` chunk ids per query, and chunk id → BEIR document id."""
    legs: Legs = {}
    chunk_docs: dict[str, str] = {}
    first = next(iter(corpora.values()))
    queries = first.data.queries
    vectors = dict(zip(queries, first.embedder.embed(list(queries.values())), strict=True))
    for analyzer, corpus in corpora.items():
        started = time.perf_counter()
        for name in ("dense", f"bm25:{analyzer}", f"fuzzy:{analyzer}"):
            if name in legs:
                continue
            legs[name] = {}
            for query_id, query in queries.items():
                hits = leg_hits(corpus, name.split(":")[0], query, vectors[query_id], depth)
                # Keyed by (BEIR id, chunk index): the same chunk in every analyzer's collection.
                keys = [
                    f"{corpus.beir_ids[hit.chunk.document_id]}#{hit.chunk.index}" for hit in hits
                ]
                legs[name][query_id] = keys
                for key in keys:
                    chunk_docs[key] = key.rsplit("#", 1)[0]
        print(f"  legs for {analyzer}: {time.perf_counter() - started:.0f} s", file=sys.stderr)
    return legs, chunk_docs


def leg_hits(
    corpus: Corpus, leg: str, query: str, vector: list[float], depth: int
) -> list[ScoredChunk]:
    """The store's top ``depth`` chunks of one leg."""
    store, collection = corpus.store, corpus.collection
    if leg == "dense":
        return store.dense(collection, vector, depth)
    if leg == "bm25":
        return store.bm25(collection, query, depth)
    return store.fuzzy(collection, query, depth)


def fused_run(
    setting: Setting, legs: Legs, chunk_docs: dict[str, str], queries: Sequence[str]
) -> dict[str, list[str]]:
    """The top-10 documents of every query under ``setting``."""
    fusion = RrfFusion(k=setting.k)
    weighted = [
        ("dense", setting.semantic),
        (f"bm25:{setting.analyzer}", setting.bm25),
        (f"fuzzy:{setting.analyzer}", setting.fuzzy),
    ]
    run: dict[str, list[str]] = {}
    depths = {name: setting.candidates for name, _ in weighted}
    if setting.fuzzy_candidates is not None:
        depths[f"fuzzy:{setting.analyzer}"] = setting.fuzzy_candidates
    for query_id in queries:
        lists = [(legs[name][query_id][: depths[name]], w) for name, w in weighted if w > 0]
        fused = fusion.fuse(lists)[:TOP_K]
        run[query_id] = best_chunk_documents(chunk_docs[chunk_id] for chunk_id, _ in fused)
    return run


def settings(analyzers: Sequence[str]) -> list[Setting]:
    """The grid: weights × k × candidates per leg × analyzer, plus the stock-like equal split."""
    grid = [
        Setting(analyzer, s, b, f, k, n)
        for analyzer in analyzers
        for s, b in ((0.6, 0.3), (0.5, 0.5), (0.4, 0.6), (0.3, 0.7), (0.7, 0.3), (0.6, 0.4))
        for f in (0.0, 0.1)
        for k, n in itertools.product((10.0, 30.0, 60.0), (10, 20, 50, 100))
    ]
    # The engine's default since round 3: dense and BM25 deep, the slow fuzzy leg at 2·top_k.
    grid += [
        Setting(analyzer, 0.5, 0.5, 0.1, 10.0, n, 2 * TOP_K)
        for analyzer in analyzers
        for n in (30, 40, 50, 60, 100)
    ]
    # What stock QueryFusionRetriever does: equal weights, k 60, top 10 of each leg.
    return [*grid, *(Setting(analyzer, 1.0, 1.0, 0.0, 60.0, 10) for analyzer in analyzers)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--split", default="test")
    parser.add_argument("--analyzers", default="seed,english")
    parser.add_argument("--no-title", action="store_true")
    parser.add_argument("--depth", type=int, default=100)
    parser.add_argument("--cache", type=Path, default=CACHE_PATH)
    parser.add_argument("--show", type=int, default=25, help="rows to print")
    parser.add_argument("--json", type=Path, default=None, help="write every setting here")
    args = parser.parse_args()

    data = load_beir(args.data, args.split)
    analyzers = args.analyzers.split(",")
    title = "text" if args.no_title else "title"
    saved = args.cache.parent / f"legs-{data.name}-{args.split}-{title}-{args.depth}.json"
    if saved.exists():
        legs, chunk_docs = json.loads(saved.read_text())
    if not saved.exists() or any(f"bm25:{a}" not in legs for a in analyzers):
        embedder = make_embedder(args.cache)
        store = open_store("memory")
        corpora = {
            analyzer: ingest_corpus(
                store, embedder, data, analyzer=analyzer, with_title=not args.no_title
            )
            for analyzer in analyzers
        }
        legs, chunk_docs = collect_legs(corpora, args.depth)
        saved.write_text(json.dumps([legs, chunk_docs]))
    queries = list(data.queries)
    rows = []
    for setting in settings(analyzers):
        scores = evaluate(fused_run(setting, legs, chunk_docs, queries), data.qrels)
        rows.append({"setting": setting.label, **setting.__dict__, **scores})
    for leg in legs:
        top = legs[leg]
        run = {q: best_chunk_documents(chunk_docs[c] for c in top[q][:TOP_K]) for q in queries}
        rows.append({"setting": f"{leg} alone", **evaluate(run, data.qrels)})
    rows.sort(key=lambda row: -row["ndcg@10"])
    if args.json is not None:
        args.json.write_text(json.dumps({"data": data.name, "rows": rows}, indent=1))
    print(f"{data.name} ({args.split}), {len(queries)} queries, top {TOP_K} chunks")
    print("| setting | nDCG@10 | MRR@10 |\n|---|---:|---:|")
    for row in rows[: args.show]:
        print(f"| {row['setting']} | {row['ndcg@10']:.4f} | {row['mrr@10']:.4f} |")
    for row in rows[args.show :]:
        if "alone" in row["setting"]:
            print(f"| {row['setting']} | {row['ndcg@10']:.4f} | {row['mrr@10']:.4f} |")


if __name__ == "__main__":
    main()
