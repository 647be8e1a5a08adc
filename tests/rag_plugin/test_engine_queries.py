"""CollectionSearcher's queries: typo correction, a separate lexical query, bad requests, models."""

from __future__ import annotations

import pytest

from rag_plugin.embedding.base import Embedder
from rag_plugin.engine import CollectionSearcher
from rag_plugin.exceptions import ConfigurationError, InvalidInputError
from rag_plugin.search import SearchStrategy
from rag_plugin.stores.base import CollectionInfo, Correction
from rag_plugin.stores.memory import MemoryStore
from rag_plugin.testing import FakeEmbedder
from tests.rag_plugin.engine_helpers import *  # noqa: F403  (the fixtures)
from tests.rag_plugin.engine_helpers import CHUNKS, approx_pairs, pairs
from tests.rag_plugin.table_embedder import TableEmbedder


def test_typo_correction_reruns_the_lexical_legs(
    searcher: CollectionSearcher, collection, doc
) -> None:
    plain = searcher.search(collection, "quikc fox", strategy="bm25")
    assert [hit.id for hit in plain.hits] == [f"{doc}_0"]
    corrected = searcher.search(collection, "quikc fox", strategy="bm25", correct_typos=True)
    assert corrected.query == "quikc fox"
    assert corrected.corrected_query == "quick fox"
    assert corrected.corrections == (Correction("quikc", "quick", 2),)
    assert [hit.id for hit in corrected.hits] == [f"{doc}_0", f"{doc}_2", f"{doc}_3"]


def test_hybrid_correction_embeds_the_original_query(
    searcher: CollectionSearcher, embedder: TableEmbedder, collection, doc
) -> None:
    outcome = searcher.search(
        collection, "quikc fox", strategy="hybrid", correct_typos=True, top_k=4
    )
    assert embedder.seen == ["quikc fox"]
    assert outcome.corrected_query == "quick fox"
    assert pairs(outcome.hits) == pairs(
        searcher.search(collection, "quick fox", strategy="hybrid", top_k=4).hits
    )


def test_a_lexical_query_feeds_the_lexical_legs_and_the_question_the_dense_one(
    searcher: CollectionSearcher, embedder: TableEmbedder, collection, doc
) -> None:
    # dense for "bears" (0, 0.1, 1): [3, 1, 2, 0]; bm25 and fuzzy for "quick fox" as above
    outcome = searcher.search(
        collection, "bears", strategy="hybrid", lexical_query="quick fox", top_k=4
    )
    assert embedder.seen == ["bears"]
    assert outcome.query == "bears"
    assert pairs(outcome.hits) == approx_pairs(
        doc,
        [
            (3, 0.5 / 11 + 0.5 / 13 + 0.1 / 12),
            (0, 0.5 / 14 + 0.5 / 11 + 0.1 / 11),
            (2, 0.5 / 13 + 0.5 / 12 + 0.1 / 13),
            (1, 0.5 / 12),
        ],
    )


def test_typo_correction_corrects_the_lexical_query(
    searcher: CollectionSearcher, embedder: TableEmbedder, collection, doc
) -> None:
    outcome = searcher.search(
        collection, "bears", strategy="bm25", lexical_query="quikc fox", correct_typos=True
    )
    assert outcome.corrected_query == "quick fox"
    assert [hit.id for hit in outcome.hits] == [f"{doc}_0", f"{doc}_2", f"{doc}_3"]
    assert embedder.seen == []


@pytest.mark.parametrize("lexical", ["", "  ", 3])
def test_an_empty_lexical_query_is_invalid(
    searcher: CollectionSearcher, collection, lexical
) -> None:
    with pytest.raises(InvalidInputError, match="lexical query is empty"):
        searcher.search(collection, "bears", strategy="hybrid", lexical_query=lexical)


def test_semantic_search_makes_no_correction(searcher: CollectionSearcher, collection, doc) -> None:
    outcome = searcher.search(collection, "quikc fox", strategy="semantic", correct_typos=True)
    assert (outcome.corrected_query, outcome.corrections) == (None, ())


def test_a_query_without_typos_reports_no_correction(
    searcher: CollectionSearcher, collection, doc
) -> None:
    outcome = searcher.search(collection, "quick fox", strategy="fuzzy", correct_typos=True)
    assert (outcome.corrected_query, outcome.corrections) == (None, ())


@pytest.mark.parametrize("query", ["", "   ", "\n\t"])
def test_empty_query_is_invalid(searcher: CollectionSearcher, collection, query: str) -> None:
    with pytest.raises(InvalidInputError, match="empty"):
        searcher.search(collection, query)


def test_negative_top_k_is_invalid(searcher: CollectionSearcher, collection) -> None:
    with pytest.raises(InvalidInputError, match="top_k"):
        searcher.search(collection, "quick fox", top_k=-1)


@pytest.mark.parametrize("strategy", list(SearchStrategy))
def test_top_k_zero_returns_nothing_without_work(
    searcher: CollectionSearcher, embedder: TableEmbedder, collection, doc, strategy
) -> None:
    outcome = searcher.search(collection, "quick fox", strategy=strategy, top_k=0)
    assert outcome.hits == ()
    assert embedder.stats.calls == 0


def test_unknown_strategy_names_the_valid_ones(searcher: CollectionSearcher, collection) -> None:
    with pytest.raises(InvalidInputError, match="semantic, bm25, fuzzy, hybrid"):
        searcher.search(collection, "quick fox", strategy="telepathy")


@pytest.mark.parametrize(
    "other", [TableEmbedder(CHUNKS, model="another-model"), FakeEmbedder(dimensions=4)]
)
def test_dense_search_with_another_model_is_a_configuration_error(
    store: MemoryStore, collection, doc, other: Embedder
) -> None:
    searcher = CollectionSearcher(store, other)
    for strategy in (SearchStrategy.SEMANTIC, SearchStrategy.HYBRID):
        with pytest.raises(ConfigurationError, match="docs"):
            searcher.search(collection, "quick fox", strategy=strategy)
    # Lexical strategies embed nothing, so the model does not matter to them.
    assert len(searcher.search(collection, "quick fox", strategy="bm25").hits) == 3


def test_a_resolver_picks_the_embedder_per_collection(
    store: MemoryStore, embedder: TableEmbedder, collection, doc
) -> None:
    asked: list[str] = []

    def resolve(info: CollectionInfo) -> Embedder:
        asked.append(info.name)
        return embedder

    outcome = CollectionSearcher(store, resolve).search(collection, "quick fox", top_k=1)
    assert asked == ["docs"]
    assert [hit.id for hit in outcome.hits] == [f"{doc}_0"]
