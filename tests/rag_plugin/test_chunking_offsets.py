"""The offset invariant (SPEC C2): in every mode the chunks slice back out of the text by offset."""

from __future__ import annotations

import pytest

from rag_plugin.chunking import ChunkerConfig, TextChunker
from tests.rag_plugin.chunking_helpers import CHARACTER, EMOJI_TEXT, SEMANTIC, TEN_WORDS, WORD

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
