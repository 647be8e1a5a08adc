"""JSON files for the in-memory lexical indexes: atomic writes, reads that fail as StoreError."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from rag_plugin.exceptions import StoreError

__all__ = ["read_json_object", "write_json_atomically"]


def write_json_atomically(path: str | os.PathLike[str], data: Any, what: str) -> None:
    """Write ``data`` as JSON to ``path``; a crash mid-write leaves the old file intact."""
    target = Path(path)
    temporary = target.with_name(target.name + ".tmp")
    try:
        text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise StoreError(f"Failed to serialize {what}: {exc}") from exc
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        temporary.write_text(text, encoding="utf-8")
        os.replace(temporary, target)
    except OSError as exc:
        raise StoreError(f"Failed to write {what} to {target}: {exc}") from exc


def read_json_object(path: str | os.PathLike[str], what: str) -> dict[str, Any]:
    """The JSON object stored in ``path``; unreadable or non-object content raises StoreError."""
    source = Path(path)
    try:
        text = source.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise StoreError(f"Failed to read {what} from {source}: {exc}") from exc
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise StoreError(f"Failed to deserialize {what} from {source}: {exc}") from exc
    if not isinstance(data, dict):
        raise StoreError(
            f"Failed to deserialize {what} from {source}: expected a JSON object, "
            f"got {type(data).__name__}."
        )
    return data
