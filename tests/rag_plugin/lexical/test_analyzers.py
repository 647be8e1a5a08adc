"""The seed tokenizer (L1) and the language analyzers (L6)."""

from __future__ import annotations

import pytest

from rag_plugin.exceptions import InvalidInputError
from rag_plugin.lexical.analyzers import (
    ANALYZER_NAMES,
    MAX_WORD_CHARS,
    EnglishAnalyzer,
    GermanAnalyzer,
    SeedAnalyzer,
    get_analyzer,
    resolve_analyzer,
    text_words,
    tokenize,
)


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("The quick brown fox", ["the", "quick", "brown", "fox"]),
        ("hello-world test_case", ["hello", "world", "test", "case"]),
        ("a I x y", []),  # one-byte tokens are dropped
        ("é ab", ["é", "ab"]),  # "é" is two UTF-8 bytes, so it stays
        ("C++ and C# 3.14", ["and", "14"]),
        ("Straße ÜBER", ["straße", "über"]),
        ("日本語のテキスト", ["日本語のテキスト"]),
        ("x2 42 ½½", ["x2", "42", "½½"]),  # Rust's numerics include No (vulgar fractions)
        ("repeat repeat, REPEAT", ["repeat", "repeat", "repeat"]),
        ("", []),
    ],
)
def test_tokenize_splits_on_non_alphanumerics_and_drops_one_byte_tokens(
    text: str, tokens: list[str]
) -> None:
    assert tokenize(text) == tokens


def test_tokenize_keeps_combining_vowel_signs_inside_words_as_rust_does() -> None:
    # U+093F (vowel sign I) is Other_Alphabetic: Rust keeps it, str.isalnum would split here.
    assert tokenize("हिंदी") == ["हिंदी"]


def test_seed_analyzer_is_the_seed_tokenizer() -> None:
    text = "Running runs and the RUNNER's run_time"
    assert SeedAnalyzer().tokens(text) == tokenize(text)
    assert get_analyzer("seed").name == "seed"


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("running runs", ["run", "run"]),
        ("The cats are running in the gardens", ["cat", "run", "garden"]),
        ("It isn't what it was", []),
        ("Connection connected connecting", ["connect", "connect", "connect"]),
    ],
)
def test_english_analyzer_drops_stopwords_and_stems(text: str, tokens: list[str]) -> None:
    assert EnglishAnalyzer().tokens(text) == tokens


def test_german_analyzer_drops_stopwords_and_stems() -> None:
    assert GermanAnalyzer().tokens("Die Häuser und das Haus laufen") == ["haus", "haus", "lauf"]


@pytest.mark.parametrize("name", ["seed", "english", "german", "English", " SEED "])
def test_get_analyzer_accepts_registered_names_case_insensitively(name: str) -> None:
    analyzer = get_analyzer(name)
    assert analyzer.name == name.strip().lower()
    assert get_analyzer(name) is analyzer  # shared instances


def test_get_analyzer_rejects_an_unknown_name_naming_the_choices() -> None:
    with pytest.raises(InvalidInputError) as raised:
        get_analyzer("klingon")
    assert str(raised.value) == "Unknown analyzer: klingon. Use: seed, english, german"


def test_analyzer_names_start_with_seed() -> None:
    assert ANALYZER_NAMES == ("seed", "english", "german")


def test_resolve_analyzer_passes_instances_through() -> None:
    analyzer = EnglishAnalyzer()
    assert resolve_analyzer(analyzer) is analyzer
    assert resolve_analyzer("english") is get_analyzer("english")


def test_a_word_longer_than_the_limit_is_cut_in_tokens_and_fuzzy_words() -> None:
    blob = "iVBORw0KGgo" + "A" * 5000  # a base64 image, one token and one word
    assert tokenize(f"see {blob} here") == ["see", blob.lower()[:MAX_WORD_CHARS], "here"]
    assert text_words(f"data:image/png;base64,{blob}") == [
        f"data:image/png;base64,{blob}".lower()[:MAX_WORD_CHARS]
    ]
    assert MAX_WORD_CHARS * 4 < 2700  # any cut word fits a PostgreSQL B-tree entry
    assert get_analyzer("english").tokens(blob) == [
        get_analyzer("english").tokens(blob[:MAX_WORD_CHARS])[0]
    ]
