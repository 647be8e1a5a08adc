"""The real corpus and queries of bench/real_query.py, and that corpus loaded into a collection.

The corpus is the SciFact and Vaswani abstracts of ``../shared/eval`` cut into 16-word windows,
repeated with other cuts and a marker word until the asked number of chunks; the queries are
the SciFact train claims and the Vaswani queries as typed, and each with one realistic typo
(bench/real_query.py's docstring says how). bench/replicas.py loads the same corpus.
"""

from __future__ import annotations

import json
import random
import time
import zlib
from collections.abc import Iterator
from pathlib import Path

from bench.store_schema import DIMENSIONS, build_index, drop_vector_index
from rag_plugin.stores.base import ChunkInput, CollectionInfo, DocumentInput
from rag_plugin.stores.postgres import PostgresStore
from rag_plugin.testing import FakeEmbedder, fake_vector

WINDOW = 16
EVAL = Path(__file__).resolve().parent.parent.parent / "shared" / "eval"
SHARDS = 10
"""Every chunk's metadata ``shard`` is one of 0..9 (by a hash of its key), so the filter
``shard == 3`` of ``hybrid+filter`` keeps ≈ 10 % of the collection."""
ANALYZER = "english"  # the default of new collections
LOAD_BATCH = 50  # documents per upsert_documents transaction


def documents() -> list[tuple[str, list[str]]]:
    """(id, words) of every SciFact and Vaswani document, title first, in file order."""
    found = []
    for name in ("scifact", "vaswani"):
        with open(EVAL / name / "corpus.jsonl", encoding="utf-8") as corpus:
            for line in corpus:
                doc = json.loads(line)
                text = f"{doc.get('title', '')} {doc['text']}"
                found.append((f"{name}-{doc['_id']}", text.split()))
    return found


def windows(words: list[str], offset: int) -> list[str]:
    """The document's chunks: 16-word windows, the first ``offset`` words a window of their own."""
    cuts = ([0] if offset else []) + list(range(offset, len(words), WINDOW))
    return [" ".join(words[s : s + (offset if s == 0 and offset else WINDOW)]) for s in cuts]


def corpus(total: int) -> Iterator[tuple[str, list[str]]]:
    """(source, chunk texts) per document until ``total`` chunks (see the module docstring)."""
    docs = documents()
    made = 0
    copy = 0
    while True:
        offset = (7 * copy) % WINDOW
        marker = f" copy{copy}" if copy else ""
        for doc_id, words in docs:
            texts = [t + marker for t in windows(words, offset) if t]
            texts = texts[: total - made]
            if not texts:
                return
            yield (f"{doc_id}#{copy}", texts)
            made += len(texts)
        copy += 1


def queries() -> list[str]:
    """SciFact train claims, then the Vaswani queries, as typed."""
    found = []
    for name, split in (("scifact", "train"), ("vaswani", "test")):
        wanted = set()
        with open(EVAL / name / "qrels" / f"{split}.tsv", encoding="utf-8") as qrels:
            next(qrels)
            for line in qrels:
                wanted.add(line.split("\t")[0])
        with open(EVAL / name / "queries.jsonl", encoding="utf-8") as lines:
            for line in lines:
                query = json.loads(line)
                if query["_id"] in wanted:
                    found.append(" ".join(query["text"].split()))
    return found


_NEIGHBOURS = {
    "a": "qswz", "b": "vghn", "c": "xdfv", "d": "serfcx", "e": "wsdr", "f": "drtgvc",
    "g": "ftyhbv", "h": "gyujnb", "i": "ujko", "j": "huikmn", "k": "jiolm", "l": "kop",
    "m": "njk", "n": "bhjm", "o": "iklp", "p": "ol", "q": "wa", "r": "edft", "s": "awedxz",
    "t": "rfgy", "u": "yhji", "v": "cfgb", "w": "qase", "x": "zsdc", "y": "tghu", "z": "asx",
}  # fmt: skip


def with_typo(query: str, rng: random.Random) -> str:
    """``query`` with one typo in its longest all-letter word of six letters or more."""
    words = query.split()
    candidates = [i for i, w in enumerate(words) if len(w) >= 6 and w.isalpha()]
    if not candidates:
        return query
    i = max(candidates, key=lambda c: (len(words[c]), -c))
    word = words[i]
    at = rng.randrange(1, len(word) - 1)
    kind = rng.choice(("swap", "drop", "double", "neighbour"))
    if kind == "swap":
        word = word[:at] + word[at + 1] + word[at] + word[at + 2 :]
    elif kind == "drop":
        word = word[:at] + word[at + 1 :]
    elif kind == "double":
        word = word[:at] + word[at] + word[at:]
    else:
        near = _NEIGHBOURS.get(word[at].lower(), word[at])
        word = word[:at] + rng.choice(near) + word[at + 1 :]
    return " ".join([*words[:i], word, *words[i + 1 :]])


def with_typos(typed: list[str]) -> list[str]:
    """Every query of ``typed`` with one typo (:func:`with_typo`), from the same seed each time."""
    rng = random.Random(14)
    return [with_typo(q, rng) for q in typed]


def collection_name(chunks: int) -> str:
    return f"real_{chunks}"


def load(store: PostgresStore, dsn: str, chunks: int) -> tuple[CollectionInfo, float, float]:
    """Load the corpus in bulk (HNSW built after); (collection, load seconds, build seconds)."""
    collection = store.create_collection(
        collection_name(chunks),
        dimensions=DIMENSIONS,
        embedding_model=FakeEmbedder(DIMENSIONS).model_name,
        analyzer=ANALYZER,
    )
    drop_vector_index(store, dsn)
    spent = 0.0
    batch: list[tuple[DocumentInput, list[ChunkInput]]] = []
    done, report_at = 0, 20_000

    def flush() -> float:
        started = time.perf_counter()
        store.upsert_documents(collection, batch)
        return time.perf_counter() - started

    for source, texts in corpus(chunks):
        batch.append(
            (
                DocumentInput(source=source),
                [
                    ChunkInput(
                        j,
                        t,
                        0,
                        len(t),
                        fake_vector(t, DIMENSIONS),
                        {"shard": zlib.crc32(f"{source}_{j}".encode()) % SHARDS},
                    )
                    for j, t in enumerate(texts)
                ],
            )
        )
        if len(batch) == LOAD_BATCH:
            spent += flush()
            done += sum(len(c) for _, c in batch)
            batch = []
            if done >= report_at:
                print(f"  loaded {done:,} chunks", flush=True)
                report_at += 20_000
    if batch:
        spent += flush()
    build = build_index(store, dsn)
    return store.get_collection(collection.name), spent, build
