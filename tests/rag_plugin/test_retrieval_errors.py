"""Multi-collection retrieval's errors: failing collections reported, bad input refused."""

from __future__ import annotations

from typing import Any

import pytest

from rag_plugin.engine import CollectionSearcher
from rag_plugin.exceptions import CollectionNotFoundError, InvalidInputError
from rag_plugin.outcome import SearchOutcome
from rag_plugin.retrieval import CollectionRef, MultiCollectionRetriever
from rag_plugin.stores.base import CollectionInfo
from rag_plugin.stores.memory import MemoryStore
from tests.rag_plugin.retrieval_helpers import *  # noqa: F403  (the fixtures)
from tests.rag_plugin.retrieval_helpers import HANDBOOK, OFF, QUERY


def test_a_failing_collection_is_skipped_and_reported(
    retriever: MultiCollectionRetriever, handbook: CollectionInfo
) -> None:
    gone = CollectionInfo("deleted", None, 3, "table")
    other_model = CollectionInfo("handbook", "user:1", 3, "another-model")
    refs = [CollectionRef(gone), CollectionRef(other_model, label="Mine"), CollectionRef(handbook)]
    result = retriever.run(QUERY, refs, OFF)
    assert [c.content for c in result.chunks] == [HANDBOOK[0][0], HANDBOOK[1][0]]
    assert [(f.label, f.error) for f in result.failures] == [
        ("deleted", str(CollectionNotFoundError("deleted"))),
        (
            "Mine",
            "Collection 'handbook' holds 3-d vectors of the model 'another-model', but the "
            "embedder is 'table' (3-d); use the collection's model.",
        ),
    ]


class RefusingSearcher(CollectionSearcher):
    def search(self, collection: CollectionInfo, query: str, **kwargs: Any) -> SearchOutcome:
        raise InvalidInputError("Unsupported filter on 'lang'.")


def test_invalid_input_from_the_search_propagates(
    store: MemoryStore, searcher: CollectionSearcher, handbook: CollectionInfo
) -> None:
    retriever = MultiCollectionRetriever(RefusingSearcher(store, searcher.embedder_for(handbook)))
    with pytest.raises(InvalidInputError, match="Unsupported filter on 'lang'"):
        retriever.retrieve(QUERY, [CollectionRef(handbook)], OFF)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"weight": -1.0}, "The weight of collection 'handbook' must be a finite number ≥ 0"),
        ({"weight": float("inf")}, "must be a finite number ≥ 0, got inf."),
        ({"priority": 1.5}, "The priority of collection 'handbook' must be an integer, got 1.5."),
    ],
)
def test_collection_ref_validation(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        CollectionRef(CollectionInfo("handbook", None, 3, "table"), **kwargs)
    assert message in str(caught.value)


def test_retrieve_refuses_bad_arguments(
    retriever: MultiCollectionRetriever, handbook: CollectionInfo
) -> None:
    with pytest.raises(InvalidInputError, match="The query is empty"):
        retriever.retrieve("  ", [CollectionRef(handbook)])
    with pytest.raises(InvalidInputError, match="Collection 'handbook' is listed twice"):
        retriever.retrieve(QUERY, [CollectionRef(handbook), CollectionRef(handbook, weight=2)])
    with pytest.raises(InvalidInputError, match="collections must hold CollectionRef items"):
        retriever.retrieve(QUERY, [handbook])  # type: ignore[list-item]
