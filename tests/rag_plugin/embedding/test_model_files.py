"""Assembling the bundled offline model folder and inspecting operator-provided folders."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag_plugin.embedding.model_files import (
    BUNDLED_MODEL,
    bundled_model_folder,
    folder_name,
    inspect_local_folder,
    models_root,
)
from rag_plugin.exceptions import ModelLoadError

BUNDLED_FILES = [
    "config.json",
    "model.onnx",
    "rag_plugin_manifest.json",
    "special_tokens_map.json",
    "tokenizer.json",
    "tokenizer_config.json",
]


def test_models_root_prefers_argument_then_env_then_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAG_MODEL_DIR", str(tmp_path / "env"))
    assert models_root(tmp_path / "arg") == tmp_path / "arg"
    assert models_root() == tmp_path / "env"
    monkeypatch.delenv("RAG_MODEL_DIR")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert models_root() == tmp_path / "home" / ".cache" / "rag_plugin" / "models"


def test_folder_name_replaces_slashes() -> None:
    assert folder_name("BAAI/bge-small-en-v1.5") == "BAAI--bge-small-en-v1.5"


def test_bundled_folder_is_assembled_with_256_token_limit(tmp_path: Path) -> None:
    folder = bundled_model_folder(tmp_path)

    assert folder == tmp_path / folder_name(BUNDLED_MODEL)
    assert sorted(p.name for p in folder.iterdir()) == BUNDLED_FILES
    config = json.loads((folder / "tokenizer_config.json").read_text())
    assert config["model_max_length"] == 256
    assert config["do_lower_case"] is True
    # Nothing half-built is left beside it.
    assert [p.name for p in tmp_path.iterdir()] == [folder.name]


def test_complete_bundled_folder_is_reused_as_is(tmp_path: Path) -> None:
    folder = bundled_model_folder(tmp_path)
    marker = folder / "tokenizer.json"
    mtime = marker.stat().st_mtime_ns

    assert bundled_model_folder(tmp_path) == folder
    assert marker.stat().st_mtime_ns == mtime


@pytest.mark.parametrize("damage", ["delete_manifest", "truncate_model", "delete_tokenizer"])
def test_damaged_bundled_folder_is_rebuilt(tmp_path: Path, damage: str) -> None:
    folder = bundled_model_folder(tmp_path)
    size = (folder / "model.onnx").stat().st_size
    if damage == "delete_manifest":
        (folder / "rag_plugin_manifest.json").unlink()
    elif damage == "truncate_model":
        (folder / "model.onnx").write_bytes(b"oops")
    else:
        (folder / "tokenizer.json").unlink()

    rebuilt = bundled_model_folder(tmp_path)

    assert sorted(p.name for p in rebuilt.iterdir()) == BUNDLED_FILES
    assert (rebuilt / "model.onnx").stat().st_size == size
    assert [p.name for p in tmp_path.iterdir()] == [folder.name]


def test_unwritable_models_root_raises_model_load_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")

    with pytest.raises(ModelLoadError, match="Cannot create the model folder under"):
        bundled_model_folder(blocker / "models")


def test_inspect_bundled_folder_reads_dimension_and_mean_pooling(tmp_path: Path) -> None:
    spec = inspect_local_folder(bundled_model_folder(tmp_path))

    assert (spec.model_file, spec.dimensions, spec.pooling, spec.normalization) == (
        "model.onnx",
        384,
        "MEAN",
        True,
    )


def test_inspect_reads_cls_pooling_from_sentence_transformers_config(tmp_path: Path) -> None:
    (tmp_path / "onnx").mkdir()
    (tmp_path / "onnx" / "model.onnx").write_bytes(b"")
    (tmp_path / "tokenizer.json").write_text("{}")
    (tmp_path / "tokenizer_config.json").write_text("{}")
    (tmp_path / "config.json").write_text(json.dumps({"hidden_size": 768}))
    (tmp_path / "1_Pooling").mkdir()
    (tmp_path / "1_Pooling" / "config.json").write_text(
        json.dumps({"pooling_mode_cls_token": True, "pooling_mode_mean_tokens": False})
    )

    spec = inspect_local_folder(tmp_path)

    assert (spec.model_file, spec.dimensions, spec.pooling) == ("onnx/model.onnx", 768, "CLS")


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ({}, "has no ONNX file; expected one of: model.onnx, model_optimized.onnx"),
        ({"model.onnx": ""}, "has no tokenizer.json"),
        ({"model.onnx": "", "tokenizer.json": "{}"}, "has no tokenizer_config.json"),
        (
            {"model.onnx": "", "tokenizer.json": "{}", "tokenizer_config.json": "{}"},
            "needs a config.json with a positive integer hidden_size",
        ),
        (
            {
                "model.onnx": "",
                "tokenizer.json": "{}",
                "tokenizer_config.json": "{}",
                "config.json": '{"hidden_size": "384"}',
            },
            "needs a config.json with a positive integer hidden_size",
        ),
    ],
)
def test_inspect_rejects_incomplete_folders(
    tmp_path: Path, files: dict[str, str], message: str
) -> None:
    for name, content in files.items():
        (tmp_path / name).write_text(content)

    with pytest.raises(ModelLoadError, match=message):
        inspect_local_folder(tmp_path)
