"""Loading cross-encoders offline (SPEC R3): unknown names, broken folders, the cache of four."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pytest

from rag_plugin.cross_encoder import CrossEncoderModel, load_cross_encoder
from rag_plugin.exceptions import ModelLoadError
from rag_plugin.rerank import DEFAULT_CROSS_ENCODER_MODEL


class _NullModel:
    """Scores every text 0; only which object the cache hands out matters here."""

    def rerank(self, query: str, documents: Iterable[str]) -> Iterable[float]:
        return [0.0 for _ in documents]


def test_real_fastembed_rejects_a_broken_model_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / DEFAULT_CROSS_ENCODER_MODEL.replace("/", "--")
    folder.mkdir()
    (folder / "model.onnx").write_bytes(b"not an onnx model")
    monkeypatch.setenv("RAG_MODEL_DIR", str(tmp_path))
    with pytest.raises(ModelLoadError, match="could not be loaded offline"):
        load_cross_encoder(DEFAULT_CROSS_ENCODER_MODEL)


def test_unknown_cross_encoder_name_is_a_load_error() -> None:
    with pytest.raises(ModelLoadError, match="'acme/reranker' is not a fastembed cross-encoder"):
        load_cross_encoder("acme/reranker")


def test_loaded_models_are_kept_four_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    import rag_plugin.cross_encoder as cross_encoder_module

    loads: list[str] = []

    def fake_load(name: str, cache_dir: object, model_dir: object) -> CrossEncoderModel:
        loads.append(name)
        return _NullModel()

    monkeypatch.setattr(cross_encoder_module, "_load", fake_load)
    monkeypatch.setattr(cross_encoder_module, "_models", type(cross_encoder_module._models)())
    first = load_cross_encoder("m1")
    for name in ("m2", "m3", "m4", "m1", "m5"):  # m1 is used again, so m2 is the oldest
        load_cross_encoder(name)
    assert load_cross_encoder("m1") is first
    load_cross_encoder("m2")
    assert loads == ["m1", "m2", "m3", "m4", "m5", "m2"]
