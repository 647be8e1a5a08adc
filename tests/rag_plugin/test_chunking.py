"""Tests for rag_plugin.chunking (SPEC C1-C6, seed behaviour A1 and the ARES tests in A6).

Where SPEC deliberately differs from the seed, the expected values below are the SPEC's,
written by hand, and each deviation is named next to the case:
- offsets are exact character offsets into the original text (seed word mode drifts);
- word and character windows stop at the first window that reaches the end of the text
  (the seed keeps emitting shrinking tail windows);
- ``min_chunk_size`` counts characters (the seed counts UTF-8 bytes);
- indices are compacted after filtering in every mode (the seed leaves gaps in semantic mode);
- ``chunk_size`` 0 is an error (the seed emits empty windows).
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable

import pytest

from rag_plugin.chunking import (
    API_CHUNKERS,
    Chunk,
    ChunkerConfig,
    ChunkingStrategy,
    TextChunker,
    api_chunker_config,
)
from rag_plugin.exceptions import InvalidInputError

WORD = ChunkingStrategy.WORD
SEMANTIC = ChunkingStrategy.SEMANTIC
CHARACTER = ChunkingStrategy.CHARACTER

TEN_WORDS = "one two three four five six seven eight nine ten"
NATO = "alpha bravo charlie delta echo foxtrot golf hotel india juliet"
ALPHABET = "abcdefghijklmnopqrstuvwxyz"
EMOJI_TEXT = "Hello 🌍 world — 你好"


def tuples(config: ChunkerConfig, text: str) -> list[tuple[int, str, int, int]]:
    """The chunks of ``text`` as (index, content, start, end) tuples."""
    return [
        (c.index, c.content, c.start_offset, c.end_offset) for c in TextChunker(config).chunk(text)
    ]


# --- C1: strategy names -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("word", WORD),
        ("semantic", SEMANTIC),
        ("character", CHARACTER),
        ("words", WORD),
        ("sentence", SEMANTIC),
        ("paragraph", SEMANTIC),
        ("char", CHARACTER),
        ("chars", CHARACTER),
        ("SEMANTIC", SEMANTIC),
        ("Chars", CHARACTER),
        (" Word ", WORD),
    ],
)
def test_parse_accepts_names_aliases_and_any_case(name: str, expected: ChunkingStrategy) -> None:
    assert ChunkingStrategy.parse(name) is expected


@pytest.mark.parametrize("name", ["token-based", "Token-Based", "", "wordy"])
def test_parse_unknown_name_names_input_and_valid_set(name: str) -> None:
    with pytest.raises(InvalidInputError) as excinfo:
        ChunkingStrategy.parse(name)
    assert str(excinfo.value) == (
        f"Unknown chunking strategy: {name}. Use: word, semantic, character"
    )


@pytest.mark.parametrize("strategy", list(ChunkingStrategy))
def test_strategy_str_round_trips_through_parse(strategy: ChunkingStrategy) -> None:
    assert ChunkingStrategy.parse(str(strategy)) is strategy


def test_strategy_str_is_the_value() -> None:
    assert [str(s) for s in ChunkingStrategy] == ["word", "semantic", "character"]


# --- C6: configuration ----------------------------------------------------------------------


def test_default_config() -> None:
    assert ChunkerConfig() == ChunkerConfig(WORD, 512, 50, 20)


def test_config_with_only_chunk_size_keeps_other_defaults() -> None:
    # Seed test_chunker_config_serde_defaults: {"chunk_size": 64} -> Word, 64, 50, 20.
    assert dataclasses.astuple(ChunkerConfig(chunk_size=64)) == (WORD, 64, 50, 20)


def test_config_accepts_strategy_names() -> None:
    assert ChunkerConfig(strategy="chars").strategy is CHARACTER  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("factory", "expected"),
    [
        (lambda: ChunkerConfig.for_word(200, 50), (WORD, 200, 50, 20)),
        (lambda: ChunkerConfig.for_semantic(500), (SEMANTIC, 500, 0, 20)),
        (lambda: ChunkerConfig.for_character(500, 100), (CHARACTER, 500, 100, 20)),
    ],
)
def test_constructors_set_min_20(
    factory: Callable[[], ChunkerConfig], expected: tuple[object, ...]
) -> None:
    assert dataclasses.astuple(factory()) == expected


@pytest.mark.parametrize(
    ("strategy", "expected"),
    [
        (None, (WORD, 200, 50, 20)),
        ("word", (WORD, 200, 50, 20)),
        ("paragraph", (SEMANTIC, 500, 0, 20)),
        (CHARACTER, (CHARACTER, 500, 100, 20)),
    ],
)
def test_api_chunker_config_uses_fixed_sizes(
    strategy: ChunkingStrategy | str | None, expected: tuple[object, ...]
) -> None:
    assert dataclasses.astuple(api_chunker_config(strategy)) == expected


def test_api_chunkers_cover_every_strategy() -> None:
    assert set(API_CHUNKERS) == set(ChunkingStrategy)


def test_api_chunker_config_rejects_unknown_strategy() -> None:
    with pytest.raises(InvalidInputError, match=r"^Unknown chunking strategy: tokens\. Use: "):
        api_chunker_config("tokens")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"chunk_size": 0}, "chunk_size must be a positive integer, got 0."),
        ({"chunk_size": -5}, "chunk_size must be a positive integer, got -5."),
        ({"chunk_size": 2.5}, "chunk_size must be a positive integer, got 2.5."),
        ({"chunk_size": True}, "chunk_size must be a positive integer, got True."),
        ({"chunk_overlap": -1}, "chunk_overlap must be a non-negative integer, got -1."),
        ({"chunk_overlap": "5"}, "chunk_overlap must be a non-negative integer, got '5'."),
        ({"min_chunk_size": -20}, "min_chunk_size must be a non-negative integer, got -20."),
        (
            {"strategy": "token"},
            "Unknown chunking strategy: token. Use: word, semantic, character",
        ),
    ],
)
def test_config_rejects_invalid_values(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidInputError) as excinfo:
        ChunkerConfig(**kwargs)  # type: ignore[arg-type]
    assert str(excinfo.value) == message


def test_zero_chunk_size_is_an_error_not_empty_chunks() -> None:
    # Seed test_zero_chunk_size_produces_no_word_chunks: SPEC C6 makes size 0 an error.
    with pytest.raises(InvalidInputError, match="chunk_size"):
        ChunkerConfig.for_word(0, 0)


@pytest.mark.parametrize(("size", "overlap", "step"), [(5, 2, 3), (3, 3, 1), (3, 10, 1)])
def test_overlap_ge_size_is_allowed_with_step_one(size: int, overlap: int, step: int) -> None:
    assert ChunkerConfig(WORD, size, overlap, 1).step == step


def test_config_is_immutable() -> None:
    config = ChunkerConfig()
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.chunk_size = 10  # type: ignore[misc]


def test_text_chunker_exposes_its_config() -> None:
    config = ChunkerConfig.for_character(30, 3)
    assert TextChunker(config).config is config
    assert TextChunker().config == ChunkerConfig()


# --- C2-C5: worked examples (reference A1), adapted to SPEC -------------------------------


WORKED_EXAMPLES = [
    pytest.param(
        ChunkerConfig(WORD, 5, 2, 20),
        TEN_WORDS,
        [
            (0, "one two three four five", 0, 23),
            (1, "four five six seven eight", 14, 39),
            (2, "seven eight nine ten", 28, 48),
        ],
        id="word-5-2-ten-words",  # same as the seed; the seed's dropped "ten" window is gone
    ),
    pytest.param(
        ChunkerConfig(WORD, 4, 2, 5),
        NATO,
        [
            (0, "alpha bravo charlie delta", 0, 25),
            (1, "charlie delta echo foxtrot", 12, 38),
            (2, "echo foxtrot golf hotel", 26, 49),
            (3, "golf hotel india juliet", 39, 62),
        ],
        id="word-4-2-nato",  # seed adds the tail "india juliet" (50, 62); SPEC stops earlier
    ),
    pytest.param(
        ChunkerConfig(WORD, 3, 10, 1),
        "a b c d e f",
        [(0, "a b c", 0, 5), (1, "b c d", 2, 7), (2, "c d e", 4, 9), (3, "d e f", 6, 11)],
        id="word-overlap-ge-size",  # seed: 6 chunks, adding tails "e f" and "f"
    ),
    pytest.param(
        ChunkerConfig(CHARACTER, 12, 4, 4),
        ALPHABET,
        [(0, "abcdefghijkl", 0, 12), (1, "ijklmnopqrst", 8, 20), (2, "qrstuvwxyz", 16, 26)],
        id="char-12-4-alphabet",
    ),
    pytest.param(
        ChunkerConfig(CHARACTER, 20, 5, 10),
        "This is a test string that should be chunked by characters.",
        [
            (0, "This is a test strin", 0, 20),
            (1, "string that should b", 15, 35),
            (2, "uld be chunked by ch", 30, 50),
            (3, "by characters.", 45, 59),
        ],
        id="char-20-5-sentence",
    ),
    pytest.param(
        ChunkerConfig(CHARACTER, 10, 2, 5),
        EMOJI_TEXT,
        [(0, "Hello 🌍 wo", 0, 10), (1, "world — 你好", 8, 18)],
        id="char-10-2-emoji",  # seed adds tail "你好" (6 bytes >= 5); SPEC: no tail, 2 chars < 5
    ),
    pytest.param(ChunkerConfig.for_character(8, 2), "0123456789abcdef", [], id="char-8-2-min-20"),
    pytest.param(
        ChunkerConfig(WORD, 100, 10, 5), "Short text", [(0, "Short text", 0, 10)], id="small-text"
    ),
    pytest.param(ChunkerConfig(WORD, 2, 0, 50), "hi there", [], id="min-filters-short"),
    pytest.param(
        ChunkerConfig.for_semantic(50),
        "Hello world. This is a test.",
        [(0, "Hello world. This is a test.", 0, 28)],
        id="semantic-chunk-metadata",
    ),
    pytest.param(
        ChunkerConfig(SEMANTIC, 100, 0, 20),
        "The first sentence is about cats. The second sentence is about dogs and their owners. "
        "The third sentence is about birds.",
        [
            (
                0,
                "The first sentence is about cats. "
                "The second sentence is about dogs and their owners.",
                0,
                85,
            ),
            (1, "The third sentence is about birds.", 86, 120),
        ],
        id="semantic-three-sentences",
    ),
    pytest.param(
        ChunkerConfig(SEMANTIC, 40, 0, 1),
        "Para one line.\n\nPara two is here.\n\n\nPara three, a bit longer than the others are.",
        [
            (0, "Para one line.\n\nPara two is here.", 0, 33),
            (1, "Para three, a bit longer than the others", 36, 76),
            (2, "are.", 77, 81),
        ],
        id="semantic-paragraphs",
    ),
    pytest.param(
        # "Ok." (28..31) is below min 10; the seed would number the kept chunks 0 and 2.
        ChunkerConfig(SEMANTIC, 30, 0, 10),
        "First sentence is here now. Ok. Then another long sentence.",
        [(0, "First sentence is here now.", 0, 27), (1, "Then another long sentence.", 32, 59)],
        id="semantic-indices-compacted",
    ),
    pytest.param(
        # Irregular spacing survives inside word chunks because content is a slice of the text.
        ChunkerConfig(WORD, 2, 1, 1),
        "  tab\tseparated\n\nnew   lines  ",
        [(0, "tab\tseparated", 2, 15), (1, "separated\n\nnew", 6, 20), (2, "new   lines", 17, 28)],
        id="word-irregular-whitespace",
    ),
    pytest.param(
        # Whitespace-only character windows are dropped; the others are still numbered 0, 1.
        ChunkerConfig(CHARACTER, 4, 0, 1),
        "abcd        efgh",
        [(0, "abcd", 0, 4), (1, "efgh", 12, 16)],
        id="char-whitespace-window-dropped",
    ),
]


@pytest.mark.parametrize(("config", "text", "expected"), WORKED_EXAMPLES)
def test_worked_examples(
    config: ChunkerConfig, text: str, expected: list[tuple[int, str, int, int]]
) -> None:
    assert tuples(config, text) == expected


# --- ARES unit tests (A6), adapted ---------------------------------------------------------


def test_word_chunks_hold_at_most_chunk_size_words() -> None:
    text = "the quick brown fox jumps over lazy"
    chunks = TextChunker(ChunkerConfig(WORD, 3, 0, 1)).chunk(text)
    assert [c.content for c in chunks] == ["the quick brown", "fox jumps over", "lazy"]


def test_word_overlap_shares_words_between_neighbours() -> None:
    chunks = TextChunker(ChunkerConfig(WORD, 4, 2, 5)).chunk(NATO)
    assert len(chunks) == 4
    for previous, current in itertools.pairwise(chunks):
        assert previous.content.split()[-2:] == current.content.split()[:2]


def test_overlap_equal_to_size_advances_one_word_at_a_time() -> None:
    chunks = TextChunker(ChunkerConfig(WORD, 3, 3, 1)).chunk("a b c d e f")
    assert [c.start_offset for c in chunks] == [0, 2, 4, 6]


def test_character_overlap_shares_characters() -> None:
    chunks = TextChunker(ChunkerConfig(CHARACTER, 12, 4, 4)).chunk(ALPHABET)
    assert len(chunks) == 3
    for previous, current in itertools.pairwise(chunks):
        assert current.content.startswith(previous.content[-4:])


def test_very_long_document_word_chunking() -> None:
    # 10,000 words, step 40: windows start at 0, 40, ..., 9960; the one at 9960 is the first
    # to reach the last word, so it holds words 9960..9999 (40 words) and nothing follows.
    chunks = TextChunker(ChunkerConfig(WORD, 50, 10, 20)).chunk("word " * 10_000)
    assert len(chunks) == 250
    assert [len(c.content.split()) for c in chunks] == [50] * 249 + [40]
    assert (chunks[-1].index, chunks[-1].start_offset, chunks[-1].end_offset) == (249, 49800, 49999)


def test_semantic_chunking_filters_below_min_size() -> None:
    config = ChunkerConfig(SEMANTIC, 100, 0, 10_000)
    assert TextChunker(config).chunk("Hello world. This is a test of semantic chunks.") == []


def test_min_chunk_size_counts_characters_not_bytes() -> None:
    # "你好世界" is 4 characters but 12 UTF-8 bytes; the seed would keep it with min 5.
    assert tuples(ChunkerConfig(WORD, 10, 0, 5), "你好世界") == []
    assert tuples(ChunkerConfig(WORD, 10, 0, 4), "你好世界") == [(0, "你好世界", 0, 4)]


def test_emoji_survives_character_chunking() -> None:
    chunks = TextChunker(ChunkerConfig(CHARACTER, 10, 2, 5)).chunk(EMOJI_TEXT)
    assert "🌍" in "".join(c.content for c in chunks)


@pytest.mark.parametrize("strategy", list(ChunkingStrategy))
@pytest.mark.parametrize("text", ["", " ", "   \t\n  \r\n", "\u3000\u00a0"])
def test_empty_or_whitespace_text_gives_no_chunks(strategy: ChunkingStrategy, text: str) -> None:
    assert TextChunker(ChunkerConfig(strategy, 10, 2, 0)).chunk(text) == []


def test_chunk_rejects_non_string_text() -> None:
    with pytest.raises(InvalidInputError, match="must be a str, got bytes"):
        TextChunker().chunk(b"bytes")  # type: ignore[arg-type]


def test_chunk_is_immutable() -> None:
    chunk = Chunk(0, "abc", 0, 3)
    with pytest.raises(dataclasses.FrozenInstanceError):
        chunk.index = 1  # type: ignore[misc]


# --- C2: the offset invariant over every mode ---------------------------------------------


INVARIANT_TEXTS = [
    pytest.param(TEN_WORDS, id="ascii"),
    pytest.param(EMOJI_TEXT * 7, id="emoji-cjk-dash"),
    pytest.param(
        "Ünïcödé façade naïve café. Straße öffnen! Ελληνικά κείμενα εδώ. Кириллица тоже.",
        id="accents-greek-cyrillic",
    ),
    pytest.param(
        "日本語の文章です。句読点で区切られています。中文句子也在这里。한국어 문장도 있습니다.",
        id="cjk",
    ),
    pytest.param(
        "👩‍👩‍👧‍👦 family 🇩🇪 flag 🏳️‍🌈 zwj e\u0301 combining. " * 5,
        id="emoji-sequences",
    ),
    pytest.param(
        "\t\tleading tabs\n\n\nthree newlines   three spaces\r\n"
        "windows line\u00a0nbsp  \t trailing \n",
        id="irregular-whitespace",
    ),
    pytest.param(
        "# Title\n\nFirst paragraph. It has two sentences.\n\n- item one\n- item two\n\n"
        "Second paragraph with a very long sentence that keeps going well past any "
        "reasonable chunk size so that the splitter must cut it somewhere in the middle.",
        id="markdownish",
    ),
    pytest.param("x" * 97, id="one-long-word"),
]

INVARIANT_CONFIGS = [
    pytest.param(ChunkerConfig(WORD, 3, 1, 0), id="word-3-1"),
    pytest.param(ChunkerConfig(WORD, 1, 0, 0), id="word-1-0"),
    pytest.param(ChunkerConfig(WORD, 4, 9, 0), id="word-overlap-ge-size"),
    pytest.param(ChunkerConfig(SEMANTIC, 20, 0, 0), id="semantic-20"),
    pytest.param(ChunkerConfig(SEMANTIC, 7, 0, 0), id="semantic-7"),
    pytest.param(ChunkerConfig(CHARACTER, 9, 3, 0), id="char-9-3"),
    pytest.param(ChunkerConfig(CHARACTER, 5, 5, 0), id="char-overlap-eq-size"),
]


@pytest.mark.parametrize("config", INVARIANT_CONFIGS)
@pytest.mark.parametrize("text", INVARIANT_TEXTS)
def test_offsets_slice_back_to_content(config: ChunkerConfig, text: str) -> None:
    chunks = TextChunker(config).chunk(text)
    assert chunks
    assert [c.index for c in chunks] == list(range(len(chunks)))
    for chunk in chunks:
        assert text[chunk.start_offset : chunk.end_offset] == chunk.content
    # Chunks come in text order and the last one reaches the last non-space character.
    assert [c.start_offset for c in chunks] == sorted(c.start_offset for c in chunks)
    assert chunks[-1].end_offset >= len(text.rstrip())


@pytest.mark.parametrize("config", INVARIANT_CONFIGS)
@pytest.mark.parametrize("text", INVARIANT_TEXTS)
def test_chunks_cover_every_word(config: ChunkerConfig, text: str) -> None:
    covered: set[int] = set()
    for chunk in TextChunker(config).chunk(text):
        covered.update(range(chunk.start_offset, chunk.end_offset))
    uncovered = "".join(ch for i, ch in enumerate(text) if i not in covered)
    assert uncovered.strip() == ""
