"""Ranking metrics for the quality benchmark: nDCG@k, recall@k and MRR@k, as BEIR reports them.

A run maps a query id to its ranked document ids (best first, each id once); qrels map a query
id to ``{document id: graded relevance}``. Gains are linear in the grade (trec_eval's
``ndcg_cut``), a grade of 0 or less is not relevant, and the ideal ranking is the judged
documents sorted by grade. Means are over the queries of ``qrels`` that have at least one
relevant document; a query missing from the run scores 0.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

Qrels = Mapping[str, Mapping[str, int]]
Run = Mapping[str, Sequence[str]]


def ndcg_at_k(ranked: Sequence[str], judged: Mapping[str, int], k: int) -> float:
    """Normalised discounted cumulative gain of the first ``k`` of ``ranked``."""
    dcg = sum(
        max(judged.get(doc_id, 0), 0) / math.log2(rank + 2)
        for rank, doc_id in enumerate(ranked[:k])
    )
    ideal_grades = sorted((g for g in judged.values() if g > 0), reverse=True)[:k]
    ideal = sum(grade / math.log2(rank + 2) for rank, grade in enumerate(ideal_grades))
    return dcg / ideal if ideal > 0 else 0.0


def recall_at_k(ranked: Sequence[str], judged: Mapping[str, int], k: int) -> float:
    """The share of the relevant documents found in the first ``k`` of ``ranked``."""
    relevant = {doc_id for doc_id, grade in judged.items() if grade > 0}
    if not relevant:
        return 0.0
    return len(relevant.intersection(ranked[:k])) / len(relevant)


def mrr_at_k(ranked: Sequence[str], judged: Mapping[str, int], k: int) -> float:
    """The reciprocal rank of the first relevant document within the first ``k``, else 0."""
    for rank, doc_id in enumerate(ranked[:k], start=1):
        if judged.get(doc_id, 0) > 0:
            return 1.0 / rank
    return 0.0


def best_chunk_documents(chunk_documents: Iterable[str]) -> list[str]:
    """Document ids in the order of their best chunk: the first occurrence of each id counts."""
    return list(dict.fromkeys(chunk_documents))


def evaluate(
    run: Run, qrels: Qrels, *, ndcg_k: int = 10, recall_k: int = 100, mrr_k: int = 10
) -> dict[str, float]:
    """Mean ``ndcg@ndcg_k``, ``recall@recall_k`` and ``mrr@mrr_k`` of ``run`` over ``qrels``."""
    judged_queries = [q for q, judged in qrels.items() if any(g > 0 for g in judged.values())]
    if not judged_queries:
        raise ValueError("The qrels judge no document relevant; nothing to evaluate.")
    totals = {f"ndcg@{ndcg_k}": 0.0, f"recall@{recall_k}": 0.0, f"mrr@{mrr_k}": 0.0}
    for query_id in judged_queries:
        ranked, judged = run.get(query_id, ()), qrels[query_id]
        totals[f"ndcg@{ndcg_k}"] += ndcg_at_k(ranked, judged, ndcg_k)
        totals[f"recall@{recall_k}"] += recall_at_k(ranked, judged, recall_k)
        totals[f"mrr@{mrr_k}"] += mrr_at_k(ranked, judged, mrr_k)
    return {name: total / len(judged_queries) for name, total in totals.items()}
