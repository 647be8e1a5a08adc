"""Lexical query expansion (SPEC L5): the seed's worked examples and the rules behind them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from rag_plugin.exceptions import InvalidInputError
from rag_plugin.lexical.expansion import (
    GERMAN_STOPWORDS,
    QueryExpander,
    normalize_synonyms,
)

# The two entries of the seed's _QUERY_SYNONYMS that the reference records, as tenant data.
SEED_SYNONYMS: Mapping[str, Sequence[str]] = {
    "inhaber": ["impressum", "betreiber", "verantwortlich", "geschäftsführer"],
    "kontakt": ["email", "telefon", "adresse", "impressum"],
}


@pytest.fixture
def german() -> QueryExpander:
    return QueryExpander("german", SEED_SYNONYMS)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        (
            "Wer ist der Inhaber?",
            ["inhaber", "impressum", "betreiber", "verantwortlich", "geschäftsführer"],
        ),
        (
            "Teamleiter Kontakt",
            ["teamleiter", "team", "kontakt", "email", "telefon", "adresse", "impressum"],
        ),
        ("Wer sind die Vorstandsmitglieder?", ["vorstandsmitglieder", "vorstands", "mitglieder"]),
        ("Was ist AI?", ["ai"]),
    ],
)
def test_seed_worked_examples(german: QueryExpander, query: str, expected: list[str]) -> None:
    assert german.expand(query) == expected


@pytest.mark.parametrize(
    ("token", "expected"),
    [
        # prefix "abteilungs" (10 chars) then the suffix
        ("abteilungsleitung", ["abteilungsleitung", "abteilungs", "leitung"]),
        # "projektmitarbeitende" ends with mitarbeitende, not mitarbeiter
        ("projektmitarbeitende", ["projektmitarbeitende", "projekt", "mitarbeitende"]),
        # "ansprechpartner" itself is not longer than its suffix + 2: no split
        ("ansprechpartner", ["ansprechpartner"]),
        # one character more than the suffix is still not more than suffix + 2
        ("xkontakt", ["xkontakt"]),
        # three more characters: the prefix "abc" is kept
        ("abckontakt", ["abckontakt", "abc", "kontakt"]),
        # "team" alone gets no extra "team"; "teams" does, deduplicated with nothing else
        ("team", ["team"]),
        ("teamsitzung", ["teamsitzung", "team"]),
    ],
)
def test_german_compound_rules(token: str, expected: list[str]) -> None:
    assert QueryExpander("de").expand(token) == expected


def test_english_has_no_compound_splitting() -> None:
    # "steam" contains "team" and ends in nothing German; English leaves tokens whole.
    assert QueryExpander("english").expand("steam teamleiter") == ["steam", "teamleiter"]


@pytest.mark.parametrize(
    ("language", "query", "expected"),
    [
        ("english", "What is the refund policy?", ["refund", "policy"]),
        # every ≥3 token is a stopword: retry with ≥2 characters
        ("english", "Is it AI or ML?", ["ai", "ml"]),
        ("english", "it is what it is", []),
        ("german", "Die Größe der Übung", ["größe", "übung"]),
        ("german", "", []),
    ],
)
def test_stopwords_and_short_token_fallback(language: str, query: str, expected: list[str]) -> None:
    assert QueryExpander(language).expand(query) == expected


def test_max_terms_keeps_the_first_terms_after_dedup() -> None:
    expander = QueryExpander("german", SEED_SYNONYMS, max_terms=4)
    # the full list is inhaber impressum betreiber verantwortlich geschäftsführer kontakt email
    # telefon adresse (impressum again is dropped); the first four survive
    assert expander.expand("Inhaber Kontakt") == [
        "inhaber",
        "impressum",
        "betreiber",
        "verantwortlich",
    ]
    assert len(QueryExpander("german", SEED_SYNONYMS).expand("Inhaber Kontakt")) == 9


def test_expanded_query_joins_with_spaces(german: QueryExpander) -> None:
    expected = "vorstandsmitglieder vorstands mitglieder"
    assert german.expanded_query("Vorstandsmitglieder") == expected
    assert german.expanded_query("und oder") == ""


def test_synonyms_are_normalised_and_the_callers_table_is_untouched() -> None:
    table = {" Urlaub ": ["Ferien", "ferien", "urlaub", "Freie  Tage"]}
    expander = QueryExpander("german", table)
    assert expander.expand("Urlaub planen") == ["urlaub", "ferien", "freie tage", "planen"]
    assert table == {" Urlaub ": ["Ferien", "ferien", "urlaub", "Freie  Tage"]}
    assert dict(normalize_synonyms(table)) == {"urlaub": ("ferien", "freie tage")}


def test_german_stopwords_cover_the_seed_examples() -> None:
    assert {"wer", "ist", "der", "sind", "die", "was"} <= GERMAN_STOPWORDS


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"language": "french"}, "Unknown query expansion language 'french'; use one of: german"),
        ({"max_terms": 0}, "max_terms must be a positive integer, got 0."),
        ({"max_terms": True}, "max_terms must be a positive integer, got True."),
        ({"synonyms": {"kontakt": "email"}}, "The synonyms of 'kontakt' must be a list of words"),
        ({"synonyms": {"": ["x"]}}, "A synonym key must be a non-empty word, got ''."),
        ({"synonyms": {"two words": ["x"]}}, "The synonym key 'two words' must be one word"),
        ({"synonyms": {"kontakt": ["email", ""]}}, "must be non-empty words, got ''."),
        ({"synonyms": ["kontakt"]}, "synonyms must be a mapping"),
    ],
)
def test_invalid_configuration_is_refused(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        QueryExpander(**kwargs)
    assert message in str(caught.value)
