"""Rerankers (SPEC R3): the seed's worked lexical examples, α handling, cross-encoder fallback."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from pathlib import Path

import pytest

from rag_plugin.cross_encoder import CrossEncoderModel
from rag_plugin.exceptions import ConfigurationError, InvalidInputError, ModelLoadError
from rag_plugin.rerank import (
    ALPHA_ENV,
    DEFAULT_CROSS_ENCODER_MODEL,
    MODE_ENV,
    MODEL_ENV,
    CrossEncoderReranker,
    LexicalReranker,
    NoReranker,
    RerankInfo,
    RerankMode,
    make_reranker,
    parse_rerank_mode,
    rerank_alpha,
    rerank_tokens,
)
from rag_plugin.retrieval import RetrievedChunk
from rag_plugin.stores.base import ChunkRecord, CollectionInfo

COLLECTION = CollectionInfo("docs", None, 3, "fake-3")


def item(chunk_id: str, content: str, score: float) -> RetrievedChunk:
    chunk = ChunkRecord(chunk_id, "doc", 0, content, 0, len(content), {"title": chunk_id})
    return RetrievedChunk(chunk, score, COLLECTION, "docs", score)


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (ALPHA_ENV, MODE_ENV, MODEL_ENV):
        monkeypatch.delenv(name, raising=False)


def summary(items: list[RetrievedChunk]) -> list[tuple[str, float | None, float | None]]:
    return [
        (i.id, i.rerank.score if i.rerank else None, i.rerank.overlap if i.rerank else None)
        for i in items
    ]


def test_rerank_050_strong_score_beats_full_overlap() -> None:
    java = item("java", "Java is a programming language for enterprise systems", 0.9)
    python = item("python", "Python is popular for machine learning", 0.5)
    result = LexicalReranker().rerank("python machine learning", [java, python])
    assert summary(result) == [("java", 0.765, 0.0), ("python", 0.575, 1.0)]


def test_rerank_051_single_token_query() -> None:
    high = item("high", "this is a test document", 0.95)
    low = item("low", "another test", 0.1)
    result = LexicalReranker().rerank("test", [low, high])
    assert summary(result) == [("high", 0.9575, 1.0), ("low", 0.235, 1.0)]


def test_rerank_001_three_languages() -> None:
    ruby = item("ruby", "Ruby programming", 0.9)  # 1 of 3 query tokens
    java = item("java", "Java programming tutorial", 0.8)  # 2 of 3
    python = item("python", "Python programming tutorial for beginners", 0.7)  # 3 of 3
    result = LexicalReranker().rerank("python programming tutorial", [ruby, java, python])
    assert summary(result) == [
        ("ruby", 0.815, 0.3333),
        ("java", 0.78, 0.6667),
        ("python", 0.745, 1.0),
    ]
    assert result[0].rerank is not None
    assert result[0].rerank.as_dict() == {
        "mode": "lexical",
        "alpha": 0.15,
        "overlap": 0.3333,
        "score": 0.815,
    }


def test_overlap_can_reorder() -> None:
    off_topic = item("off", "gardening tips", 0.6)
    on_topic = item("on", "python machine learning guide", 0.55)
    result = LexicalReranker(alpha=0.5).rerank("python machine learning", [off_topic, on_topic])
    # off: 0.5·0.6 + 0 = 0.3; on: 0.5·0.55 + 0.5·1 = 0.775
    assert summary(result) == [("on", 0.775, 1.0), ("off", 0.3, 0.0)]


def test_inputs_are_never_mutated() -> None:
    items = [item("a", "alpha", 0.2), item("b", "beta query", 0.1)]
    before = list(items)
    result = LexicalReranker().rerank("query", items)
    assert items == before
    assert all(i.rerank is None for i in items)
    # a: 0.85·0.2 = 0.17; b: 0.85·0.1 + 0.15·1 = 0.235
    assert summary(result) == [("b", 0.235, 1.0), ("a", 0.17, 0.0)]


def test_empty_query_tokens_keep_the_order_without_info() -> None:
    items = [item("a", "alpha", 0.1), item("b", "beta", 0.9)]
    result = LexicalReranker().rerank("? !", items)
    assert [(i.id, i.rerank) for i in result] == [("a", None), ("b", None)]
    assert result is not items


@pytest.mark.parametrize("reranker", [LexicalReranker(), NoReranker()])
def test_empty_input(reranker: LexicalReranker | NoReranker) -> None:
    assert reranker.rerank("anything", []) == []


def test_ties_on_the_rounded_score_keep_the_input_order() -> None:
    # 0.85·0.50004 = 0.425034 and 0.85·0.5 = 0.425 both round to 0.425 (4 places), so the
    # seed's stable sort on its stored, rounded score keeps the input order.
    first = item("first", "nothing", 0.5)
    second = item("second", "nothing", 0.50004)
    result = LexicalReranker().rerank("query", [first, second])
    assert summary(result) == [("first", 0.425, 0.0), ("second", 0.425, 0.0)]


def test_content_and_metadata_are_preserved() -> None:
    original = item("a", "Größe Übung", 0.4)
    (result,) = LexicalReranker().rerank("größe", [original])
    assert (result.chunk, result.score, result.collection) == (
        original.chunk,
        original.score,
        original.collection,
    )


def test_no_reranker_keeps_order() -> None:
    items = [item("first", "x", 0.1), item("second", "y", 0.9), item("third", "z", 0.5)]
    assert [i.id for i in NoReranker().rerank("x y z", items)] == ["first", "second", "third"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Hello World Test", {"hello", "world", "test"}),
        ("I am a test", {"am", "test"}),
        ("Größe Übung Änderung", {"größe", "übung", "änderung"}),
        ("end. (quoted) 'x' y-z, done!", {"end", "quoted", "done"}),
    ],
)
def test_tokens(text: str, expected: set[str]) -> None:
    assert rerank_tokens(text) == expected


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        (None, 0.15),
        ("0.25", 0.25),
        ("1.5", 1.0),
        ("-0.5", 0.0),
        ("not a number", 0.15),
        ("nan", 0.15),
        ("inf", 0.15),
        ("  ", 0.15),
    ],
)
def test_alpha_from_environment(
    monkeypatch: pytest.MonkeyPatch, env: str | None, expected: float
) -> None:
    if env is not None:
        monkeypatch.setenv(ALPHA_ENV, env)
    assert rerank_alpha() == expected
    assert LexicalReranker().alpha == expected


def test_explicit_alpha_wins_over_the_environment_and_is_clamped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(ALPHA_ENV, "0.25")
    assert [LexicalReranker(a).alpha for a in (0.4, 2.0, -1.0, "0.3")] == [0.4, 1.0, 0.0, 0.3]


# -- cross-encoder ---------------------------------------------------------------------


class TableModel:
    """A cross-encoder whose score for each text is looked up in a table."""

    def __init__(self, scores: dict[str, float]) -> None:
        self.scores = scores
        self.calls: list[tuple[str, list[str]]] = []

    def rerank(self, query: str, documents: Iterable[str]) -> Iterable[float]:
        texts = list(documents)
        self.calls.append((query, texts))
        return [self.scores[text] for text in texts]


def test_cross_encoder_orders_by_model_score() -> None:
    model = TableModel({"alpha text": 0.3, "beta text": 0.8})
    loaded: list[str] = []

    def loader(name: str) -> CrossEncoderModel:
        loaded.append(name)
        return model

    items = [item("a", "alpha text", 0.9), item("b", "beta text", 0.2)]
    result = CrossEncoderReranker("test-model", loader=loader).rerank("query", items)
    assert loaded == ["test-model"]
    assert model.calls == [("query", ["alpha text", "beta text"])]
    assert [(i.id, i.rerank.as_dict() if i.rerank else None) for i in result] == [
        ("b", {"mode": "cross-encoder", "model": "test-model", "score": 0.8, "orig_score": 0.2}),
        ("a", {"mode": "cross-encoder", "model": "test-model", "score": 0.3, "orig_score": 0.9}),
    ]
    assert [i.score for i in result] == [0.2, 0.9]  # the retrieval score is kept


def test_cross_encoder_empty_input_loads_nothing() -> None:
    def loader(name: str) -> CrossEncoderModel:
        raise AssertionError("no model should be loaded for no items")

    assert CrossEncoderReranker("m", loader=loader).rerank("q", []) == []


class WrongCountModel:
    def rerank(self, query: str, documents: Iterable[str]) -> Iterable[float]:
        return [0.5]


class NanModel:
    def rerank(self, query: str, documents: Iterable[str]) -> Iterable[float]:
        return [float("nan") for _ in documents]


def _broken_loader(name: str) -> CrossEncoderModel:
    raise ModelLoadError(f"no {name} here")


@pytest.mark.parametrize(
    ("loader", "reason"),
    [
        (_broken_loader, "no m here"),
        (lambda name: WrongCountModel(), "returned 1 scores for 2 texts"),
        (lambda name: NanModel(), "not a finite number"),
    ],
)
def test_cross_encoder_failures_fall_back_to_lexical(
    caplog: pytest.LogCaptureFixture, loader: object, reason: str
) -> None:
    items = [item("java", "Java is fast", 0.9), item("python", "python machine learning", 0.5)]
    with caplog.at_level(logging.WARNING, logger="rag_plugin.rerank"):
        result = CrossEncoderReranker("m", loader=loader).rerank(  # type: ignore[arg-type]
            "python machine learning", items
        )
    assert summary(result) == summary(LexicalReranker().rerank("python machine learning", items))
    assert [i.rerank.mode if i.rerank else None for i in result] == ["lexical", "lexical"]
    assert reason in caplog.text
    assert "falling back to LexicalReranker" in caplog.text


def test_real_fastembed_load_fails_offline_and_falls_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # No model in the operator folder nor the fastembed cache: fastembed itself is asked and
    # must fail at once (local files only), never try the network.
    monkeypatch.setenv("RAG_MODEL_DIR", str(tmp_path / "models"))
    monkeypatch.setenv("FASTEMBED_CACHE_PATH", str(tmp_path / "cache"))
    items = [item("a", "unrelated words", 0.9), item("b", "python code", 0.85)]
    started = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="rag_plugin.rerank"):
        result = make_reranker("ce", DEFAULT_CROSS_ENCODER_MODEL).rerank("python code", items)
    assert time.monotonic() - started < 10
    # lexical: a 0.765, b 0.7225 + 0.15 = 0.8725
    assert summary(result) == [("b", 0.8725, 1.0), ("a", 0.765, 0.0)]
    assert "could not be loaded offline" in caplog.text


# -- modes -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "mode"),
    [
        ("lexical", RerankMode.LEXICAL),
        (" Lexical ", RerankMode.LEXICAL),
        ("cross-encoder", RerankMode.CROSS_ENCODER),
        ("cross_encoder", RerankMode.CROSS_ENCODER),
        ("CE", RerankMode.CROSS_ENCODER),
        ("off", RerankMode.OFF),
        ("false", RerankMode.OFF),
        ("0", RerankMode.OFF),
        ("disabled", RerankMode.OFF),
        ("none", RerankMode.OFF),
        (RerankMode.OFF, RerankMode.OFF),
    ],
)
def test_mode_names(name: str, mode: RerankMode) -> None:
    assert parse_rerank_mode(name) is mode


def test_unknown_mode_names_the_valid_ones() -> None:
    with pytest.raises(InvalidInputError) as caught:
        parse_rerank_mode("semantic")
    assert str(caught.value) == (
        "Unknown rerank mode 'semantic'; use one of: lexical, cross-encoder (cross_encoder, ce), "
        "off (false, 0, disabled, none)."
    )


@pytest.mark.parametrize(
    ("env", "expected"),
    [(None, RerankMode.LEXICAL), ("OFF", RerankMode.OFF), ("ce", RerankMode.CROSS_ENCODER)],
)
def test_no_mode_reads_the_environment(
    monkeypatch: pytest.MonkeyPatch, env: str | None, expected: RerankMode
) -> None:
    if env is not None:
        monkeypatch.setenv(MODE_ENV, env)
    assert parse_rerank_mode(None) is expected


def test_unknown_environment_mode_is_a_configuration_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(MODE_ENV, "fancy")
    with pytest.raises(ConfigurationError, match="RAG_RERANK_MODE='fancy' is not a rerank mode"):
        parse_rerank_mode(None)


def test_make_reranker(monkeypatch: pytest.MonkeyPatch) -> None:
    assert isinstance(make_reranker("off"), NoReranker)
    lexical = make_reranker("lexical", alpha=0.3)
    assert isinstance(lexical, LexicalReranker)
    assert lexical.alpha == 0.3
    named = make_reranker("ce", "BAAI/bge-reranker-base", alpha=0.2)
    assert isinstance(named, CrossEncoderReranker)
    assert named.model_name == "BAAI/bge-reranker-base"
    assert isinstance(named.fallback, LexicalReranker)
    assert named.fallback.alpha == 0.2
    default = make_reranker("ce")
    assert isinstance(default, CrossEncoderReranker)
    assert default.model_name == DEFAULT_CROSS_ENCODER_MODEL
    monkeypatch.setenv(MODEL_ENV, "jinaai/jina-reranker-v1-tiny-en")
    from_env = make_reranker("ce")
    assert isinstance(from_env, CrossEncoderReranker)
    assert from_env.model_name == "jinaai/jina-reranker-v1-tiny-en"


def test_cross_encoder_needs_a_model_name() -> None:
    with pytest.raises(InvalidInputError, match="needs a model name, got ' '"):
        CrossEncoderReranker(" ")


def test_rerank_info_dict_for_cross_encoder() -> None:
    info = RerankInfo(mode="cross-encoder", score=2.5, model="m", original_score=0.4)
    assert info.as_dict() == {
        "mode": "cross-encoder",
        "model": "m",
        "score": 2.5,
        "orig_score": 0.4,
    }
