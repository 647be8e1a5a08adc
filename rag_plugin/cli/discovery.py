"""Finding, reading and titling the text documents under a folder (``ragctl ingest-dir``)."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path, PurePath

from rag_plugin.exceptions import InvalidInputError
from rag_plugin.files.text import document_title

EXTENSIONS = (".md", ".markdown", ".txt", ".text", ".json", ".jsonl")
SUPPORTED_EXTENSIONS = frozenset(EXTENSIONS)
UNSUPPORTED = f"not a text file ragctl ingests ({' '.join(EXTENSIONS)})"
EMPTY = "empty (only whitespace)"


@dataclass(frozen=True)
class Document:
    """One text file to ingest; ``source`` is its path relative to the docs folder."""

    path: Path
    source: str
    title: str
    content: str
    size: int


@dataclass(frozen=True)
class Skipped:
    """A file (or folder) that is not ingested, with the reason: an unsupported type, an
    unreadable file or folder, or a file with nothing but whitespace."""

    path: Path
    reason: str


@dataclass(frozen=True)
class Discovery:
    """What a walk found, in path order: documents, every file skipped (with why), and the
    whitespace-only files among those."""

    documents: tuple[Document, ...]
    skipped: tuple[Skipped, ...]
    empty: tuple[Path, ...]


def is_supported(path: PurePath) -> bool:
    """Whether the file name ends in one of the supported text extensions, in any case."""
    return path.suffix.lower() in SUPPORTED_EXTENSIONS


def source_name(root: Path, path: Path) -> str:
    """The document's stable identity: its path under ``root`` with ``/`` separators."""
    return path.relative_to(root).as_posix()


def discover(root: Path) -> Discovery:
    """Walk ``root`` recursively and read every supported file as UTF-8, in path order."""
    if not root.is_dir():
        raise InvalidInputError(f"docs path is not a directory: {root}")
    skipped: list[Skipped] = []
    candidates = sorted(_walk(root, skipped), key=lambda path: path.relative_to(root).parts)
    documents: list[Document] = []
    empty: list[Path] = []
    for path in candidates:
        if not is_supported(path):
            skipped.append(Skipped(path, UNSUPPORTED))
            continue
        try:
            raw = _read_regular_file(path)
            # utf-8-sig: a byte-order mark is an encoding artefact, not part of the text.
            content = raw.decode("utf-8-sig")
        except (OSError, UnicodeDecodeError) as exc:
            skipped.append(Skipped(path, str(exc)))
            continue
        if not content.strip():
            empty.append(path)
            skipped.append(Skipped(path, EMPTY))
            continue
        documents.append(
            Document(
                path=path,
                source=source_name(root, path),
                title=document_title(content, path),
                content=content,
                size=len(raw),
            )
        )
    skipped.sort(key=lambda item: item.path.relative_to(root).parts)
    return Discovery(tuple(documents), tuple(skipped), tuple(empty))


def _walk(root: Path, skipped: list[Skipped]) -> list[Path]:
    """File paths under ``root``, following folder links but never in a cycle."""

    def report(error: OSError) -> None:
        skipped.append(Skipped(Path(error.filename or root), str(error)))

    found: list[Path] = []
    seen: set[tuple[int, int]] = set()
    for folder, subfolders, files in os.walk(root, onerror=report, followlinks=True):
        try:
            identity = _identity(folder)
        except OSError as exc:
            report(exc)
            subfolders.clear()
            continue
        if identity in seen:
            subfolders.clear()
            continue
        seen.add(identity)
        # Walk in name order so that, of two links to one folder, the same one always wins.
        subfolders.sort()
        found.extend(Path(folder, name) for name in files)
    return found


def _identity(folder: str) -> tuple[int, int]:
    info = os.stat(folder)
    return info.st_dev, info.st_ino


def _read_regular_file(path: Path) -> bytes:
    """The file's bytes; refuses FIFOs and devices, whose reads could block forever."""
    mode = path.stat().st_mode
    if not stat.S_ISREG(mode):
        raise OSError(f"not a regular file: {path}")
    return path.read_bytes()
