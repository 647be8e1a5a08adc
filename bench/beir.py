"""BEIR-layout data sets for the benchmarks: corpus, queries and qrels of one split.

A BEIR folder holds ``corpus.jsonl`` (``_id``, ``title``, ``text``), ``queries.jsonl``
(``_id``, ``text``) and ``qrels/<split>.tsv`` (``query-id``, ``corpus-id``, ``score``, with a
header). Only queries that have judgements in the split are loaded.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class BeirDocument:
    """One corpus document."""

    id: str
    title: str
    text: str

    def ingest_text(self, *, with_title: bool) -> str:
        """The text a user would ingest: ``title``, a blank line, ``text`` (or ``text`` alone)."""
        if with_title and self.title.strip():
            return f"{self.title.strip()}\n\n{self.text}"
        return self.text


@dataclass(frozen=True, slots=True)
class BeirData:
    """A corpus, the judged queries of one split and their relevance judgements."""

    name: str
    corpus: dict[str, BeirDocument]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]


def load_beir(path: str | Path, split: str) -> BeirData:
    """Load the BEIR folder ``path`` with the qrels of ``split``."""
    root = Path(path)
    corpus: dict[str, BeirDocument] = {}
    with (root / "corpus.jsonl").open(encoding="utf-8") as lines:
        for line in lines:
            if line.strip():
                raw = json.loads(line)
                doc_id = str(raw["_id"])
                corpus[doc_id] = BeirDocument(doc_id, raw.get("title") or "", raw["text"])
    qrels: dict[str, dict[str, int]] = {}
    with (root / "qrels" / f"{split}.tsv").open(encoding="utf-8", newline="") as rows:
        for row in csv.DictReader(rows, delimiter="\t"):
            qrels.setdefault(str(row["query-id"]), {})[str(row["corpus-id"])] = int(row["score"])
    queries: dict[str, str] = {}
    with (root / "queries.jsonl").open(encoding="utf-8") as lines:
        for line in lines:
            if line.strip():
                raw = json.loads(line)
                if str(raw["_id"]) in qrels:
                    queries[str(raw["_id"])] = raw["text"]
    return BeirData(root.name, corpus, queries, qrels)
