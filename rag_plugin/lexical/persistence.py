"""JSON files for the in-memory lexical indexes: atomic writes, reads that fail as StoreError."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any, ClassVar, Self

from rag_plugin.exceptions import StoreError

__all__ = ["JsonFileIndex", "read_json_object", "write_json_atomically"]

logger = logging.getLogger(__name__)


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


class JsonFileIndex:
    """``save``/``load``/``load_or_new`` for an index that converts itself to and from JSON.

    Subclasses name themselves in ``what`` (used in messages) and implement ``to_json`` and
    ``from_json`` (which raises ValueError or TypeError on bad content).
    """

    what: ClassVar[str]

    def to_json(self) -> dict[str, Any]:
        raise NotImplementedError

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Self:
        raise NotImplementedError

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the index to ``path`` as JSON (atomically)."""
        write_json_atomically(path, self.to_json(), self.what)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Self:
        """Read an index saved by :meth:`save`; raise StoreError if it cannot be read."""
        data = read_json_object(path, cls.what)
        try:
            return cls.from_json(data)
        except (ValueError, TypeError) as exc:
            raise StoreError(f"Failed to deserialize {cls.what} from {path}: {exc}") from exc

    @classmethod
    def load_or_new(cls, path: str | os.PathLike[str], **kwargs: Any) -> Self:
        """The index saved at ``path``, or a new empty one if it is missing or corrupt."""
        if not os.path.exists(path):
            return cls(**kwargs)
        try:
            return cls.load(path)
        except StoreError as exc:
            logger.warning("Starting with an empty %s: %s", cls.what, exc)
            return cls(**kwargs)
