"""Typo correction over stemming analyzers, as every store must answer it (SPEC L3, L6).

:class:`~tests.rag_plugin.stores.store_contract.StoreContract` inherits this mixin, so each
store's test class runs it with its own ``store`` and ``embedder`` fixtures. A corrected word is
the collection's word with the closest stem that is fewest edits from what was typed (then the
most frequent, then alphabetical); the correction's distance is the edit distance between the
user's word and that word.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from rag_plugin.stores.base import ChunkInput, CollectionInfo, Correction, DocumentInput, Store
from rag_plugin.testing import FakeEmbedder

SEARCH_ENGINES = [
    "Term frequency weighting for search engines.",
    "Inverse document frequency, search quality",
    "Frequencies of searching",
]

STEMS_THAT_ARE_NO_PREFIX = [
    "Two studies of the study",
    "A study design",
    "clear skies",
    "cells dying",
]

GERMAN = ["Häuser an der Straße", "alte Häuser", "ein Haus"]


class CorrectionContract:
    """Correction with a stemming analyzer answers in words of the collection."""

    def collection_of(
        self,
        store: Store,
        embedder: FakeEmbedder,
        documents: Sequence[str],
        analyzer: str = "english",
    ) -> CollectionInfo:
        """A collection holding each of ``documents`` as a one-chunk document."""
        collection = store.create_collection(
            "stemmed", dimensions=embedder.dimensions, embedding_model="m", analyzer=analyzer
        )
        for number, text in enumerate(documents):
            self.put(store, collection, embedder, text, source=f"d{number}")
        return collection

    def put(
        self,
        store: Store,
        collection: CollectionInfo,
        embedder: FakeEmbedder,
        text: str,
        *,
        source: str,
    ) -> str:
        """Store ``text`` as the only chunk of the document from ``source``; return its id."""
        chunk = ChunkInput(0, text, 0, len(text), embedder.embed_query(text), {})
        return store.upsert_document(collection, DocumentInput(source=source), [chunk]).id

    @pytest.mark.parametrize(
        ("query", "corrected", "corrections"),
        [
            (
                "frequncy serach",
                "frequency search",
                [("frequncy", "frequency", 1), ("serach", "search", 2)],
            ),
            # Stopwords and correct words stay as typed, lowercased.
            (
                "The frequncy of SERACH engines",
                "the frequency of search engines",
                [("frequncy", "frequency", 1), ("serach", "search", 2)],
            ),
            ("term frequency search", "term frequency search", []),
            ("Term Frequency", "term frequency", []),
            ("frequncy zzyzx", "frequency zzyzx", [("frequncy", "frequency", 1)]),
            # The stem "weightng" is two edits from "weight"; the words are one apart.
            ("weightng", "weighting", [("weightng", "weighting", 1)]),
            # "engines." counts for "engines": punctuation after a word is not part of it.
            ("enignes", "engines", [("enignes", "engines", 2)]),
            # The stem "search" shows as "search" (2 documents) and "searching" (1): the one
            # nearer to what was typed wins over the commoner one.
            ("serching", "searching", [("serching", "searching", 1)]),
            ("The of!", "The of!", []),  # only stopwords: the query comes back unchanged
        ],
    )
    def test_stemmed_correction_answers_in_the_collection_words(
        self,
        store: Store,
        embedder: FakeEmbedder,
        query: str,
        corrected: str,
        corrections: list[tuple[str, str, int]],
    ) -> None:
        collection = self.collection_of(store, embedder, SEARCH_ENGINES)
        result = store.correct_query(collection, query)
        assert result.query == corrected
        assert result.corrections == tuple(Correction(*c) for c in corrections)

    @pytest.mark.parametrize(
        ("query", "corrected", "distance"),
        [
            # "studi" shows as "study" (twice) and "studies" (once): the nearer one wins.
            ("studdies", "studies", 1),
            ("studdy", "study", 1),
            ("skyy", "skies", 3),  # "sky" is the stem of "skies" but does not begin it
            ("dye", "dying", 3),  # "die" is the stem of "dying"
        ],
    )
    def test_stemmed_correction_finds_words_their_stem_does_not_begin(
        self, store: Store, embedder: FakeEmbedder, query: str, corrected: str, distance: int
    ) -> None:
        collection = self.collection_of(store, embedder, STEMS_THAT_ARE_NO_PREFIX)
        result = store.correct_query(collection, query)
        assert (result.query, result.corrections) == (
            corrected,
            (Correction(query, corrected, distance),),
        )

    @pytest.mark.parametrize(
        ("query", "corrected", "corrections"),
        [
            # Umlauts fold into the stem "haus", whose words are "häuser" (2) and "haus" (1).
            ("Häusr", "häuser", [("häusr", "häuser", 1)]),
            ("Hauss", "haus", [("hauss", "haus", 1)]),
            ("Strase", "straße", [("strase", "straße", 1)]),  # ß folds to "ss"
            ("Hauser", "hauser", []),  # its stem "haus" is in the vocabulary: kept as typed
        ],
    )
    def test_german_correction_spells_umlauts_and_sharp_s(
        self,
        store: Store,
        embedder: FakeEmbedder,
        query: str,
        corrected: str,
        corrections: list[tuple[str, str, int]],
    ) -> None:
        collection = self.collection_of(store, embedder, GERMAN, analyzer="german")
        result = store.correct_query(collection, query)
        assert (result.query, result.corrections) == (
            corrected,
            tuple(Correction(*c) for c in corrections),
        )

    def test_stemmed_correction_follows_deletes_and_reingests(
        self, store: Store, embedder: FakeEmbedder
    ) -> None:
        collection = self.collection_of(store, embedder, [])
        self.put(store, collection, embedder, "frequencies", source="a")
        single = self.put(store, collection, embedder, "frequency", source="b")

        def corrected() -> str:
            return store.correct_query(collection, "frequncy").query

        assert corrected() == "frequency"  # one edit, where "frequencies" is three
        store.delete_document(collection, single)
        assert corrected() == "frequencies"  # the stem's only word left
        self.put(store, collection, embedder, "unrelated words", source="a")  # replaces a
        assert corrected() == "frequncy"  # nothing close any more: kept as typed
        self.put(store, collection, embedder, "Frequency.", source="c")
        assert corrected() == "frequency"
