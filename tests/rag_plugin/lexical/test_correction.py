"""Surface words for stemmed corrections: prefixes, counting and range ends (L3, L6)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from rag_plugin.lexical.analyzers import StemmingAnalyzer, get_analyzer
from rag_plugin.lexical.correction import (
    closest_surface,
    prefix_end,
    surface_forms,
    surface_prefixes,
)


class DutchAnalyzer(StemmingAnalyzer):
    """A stemming analyzer whose language surface_prefixes has no rules for."""

    name = "dutch"
    language = "dutch"
    stopwords = frozenset()


@pytest.mark.parametrize(
    ("analyzer", "word"),
    [
        ("english", "study"),
        ("english", "studies"),
        ("english", "dying"),
        ("english", "lying"),
        ("english", "tying"),
        ("english", "skies"),
        ("english", "crying"),
        ("english", "possibility"),
        ("english", "hoping"),
        ("english", "agreed"),
        ("english", "happily"),
        ("english", "relational"),
        ("english", "generalizations"),
        ("english", "βs"),
        ("german", "häuser"),
        ("german", "haeuser"),
        ("german", "straße"),
        ("german", "flüsse"),
        ("german", "ergebnisse"),
        ("german", "mueller"),
        ("german", "fußsohle"),
        ("german", "grüße"),
        ("german", "überprüfungen"),
        ("german", "äußerungen"),
    ],
)
def test_every_word_begins_with_a_surface_prefix_of_its_stem(analyzer: str, word: str) -> None:
    chosen = get_analyzer(analyzer)
    [stem] = chosen.tokens(word)
    assert word.startswith(surface_prefixes(chosen, stem)), stem


@pytest.mark.parametrize(
    ("analyzer", "term", "prefixes"),
    [
        ("seed", "studies", ("studies",)),  # seed terms are the words themselves
        ("english", "studi", ("stud",)),
        ("english", "die", ("di", "dy")),
        ("english", "β", ("β",)),  # not the empty prefix: that would read every word
        ("english", "frequenc", ("frequen",)),
        ("german", "strass", ("stra", "strä")),
        ("german", "mull", ("muel", "mul", "mül")),
        ("german", "haus", ("haeu", "haeü", "hau", "haü", "häu", "häü")),
    ],
)
def test_surface_prefixes(analyzer: str, term: str, prefixes: tuple[str, ...]) -> None:
    assert surface_prefixes(get_analyzer(analyzer), term) == prefixes


def test_german_spellings_stop_early_rather_than_multiply() -> None:
    german = get_analyzer("german")
    prefixes = surface_prefixes(german, "auouauou")
    # Three letters of three spellings each are 27; the fourth would make 81.
    assert len(prefixes) == 18
    assert max(len(prefix) for prefix in prefixes) == 5
    assert "äueoaeüo".startswith(surface_prefixes(german, "auoauo"))


def test_a_language_without_rules_reads_every_word() -> None:
    assert surface_prefixes(DutchAnalyzer(), "huis") == ("",)


@pytest.mark.parametrize(
    ("prefix", "end"),
    [
        ("abc", "abd"),
        ("a\U0010ffff", "b"),
        ("\ud7ff", "\ue000"),  # surrogates are skipped
        ("\U0010ffff", None),
        ("", None),
    ],
)
def test_prefix_end(prefix: str, end: str | None) -> None:
    assert prefix_end(prefix) == end


WORDS = [
    ("search", 2),
    ("search,", 1),
    ("search-engine", 1),
    ("searching", 3),
    ("(search", 5),  # begins with no token: not a surface form
    ("searchers", 1),
    ("the", 9),
]


def words_starting_with(prefixes: Sequence[str]) -> list[tuple[str, int]]:
    return [(word, df) for word, df in WORDS if word.startswith(tuple(prefixes))]


def test_surface_forms_count_leading_tokens_by_df() -> None:
    english = get_analyzer("english")
    # "search" 2 + 1 + 1, "(search" counts for nothing; "searchers" is the stem "searcher"'s
    # only word; no word has the stem "sea".
    found = surface_forms(english, ["search", "searcher", "sea"], words_starting_with)
    assert found == {"search": {"search": 4, "searching": 3}, "searcher": {"searchers": 1}}


@pytest.mark.parametrize(
    ("typed", "expected"),
    [
        ("serching", "searching"),  # 1 edit, where the commoner "search" is 4
        ("serch", "search"),  # 1 edit
        ("searchd", "search"),  # 1 edit from "search" (df 4) and "searched" (df 1): df decides
        ("searchex", "searches"),  # 1 edit from "searches" and "searchez", both df 2: alphabet
    ],
)
def test_closest_surface_prefers_fewest_edits_then_df_then_alphabet(
    typed: str, expected: str
) -> None:
    forms = {"search": 4, "searching": 3, "searched": 1, "searches": 2, "searchez": 2}
    assert closest_surface(typed, forms) == expected


def test_surface_forms_read_only_the_prefixes_ranges() -> None:
    asked: list[Sequence[str]] = []

    def recorded(prefixes: Sequence[str]) -> list[tuple[str, int]]:
        asked.append(prefixes)
        return words_starting_with(prefixes)

    surface_forms(get_analyzer("english"), ["search", "searcher", "die"], recorded)
    # "searc" covers "searcher"'s own "searche": one range, not two overlapping ones.
    assert asked == [["di", "dy", "searc"]]
