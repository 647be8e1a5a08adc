"""Finding and reading what ``ragctl ingest-dir`` sends from a folder: text documents, read
as UTF-8 and titled here, and PDF, DOCX and HTML files, uploaded as they are for the portal
to read."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path, PurePath

from rag_plugin.exceptions import InvalidInputError, RagError
from rag_plugin.files.detect import DOCX, HTML, PDF, SUPPORTED_MEDIA_TYPES, detect_media_type
from rag_plugin.files.text import document_title

EXTENSIONS = (".md", ".markdown", ".txt", ".text", ".json", ".jsonl")
SUPPORTED_EXTENSIONS = frozenset(EXTENSIONS)
FILE_EXTENSIONS = {".pdf": PDF, ".docx": DOCX, ".html": HTML, ".htm": HTML}
"""Files uploaded as they are, by extension; the portal tells the type from the content."""
UNSUPPORTED = (
    f"not a file ragctl ingests ({' '.join((*EXTENSIONS, *FILE_EXTENSIONS))}, or a PDF or "
    "HTML file by its first bytes)"
)
EMPTY = "empty (only whitespace)"
EMPTY_FILE = "empty (0 bytes)"
DEFAULT_MAX_UPLOAD_BYTES = 50 * 1024 * 1024
"""The portal's default upload limit (``RAG_MAX_UPLOAD_BYTES``)."""
SNIFF_BYTES = 1024
"""How much of a file of another extension is read to tell whether it is a PDF or HTML (a
PDF's header may be anywhere in its first kilobyte)."""


@dataclass(frozen=True)
class Document:
    """One text file to ingest; ``source`` is its path relative to the docs folder."""

    path: Path
    source: str
    title: str
    content: str
    size: int


@dataclass(frozen=True)
class FileDocument:
    """One PDF, DOCX or HTML file to upload; the portal reads its text and title.

    ``media_type`` is what ragctl expects from the name (or the first bytes); the portal
    tells the type from the content again, and refuses a file that is none it reads.
    """

    path: Path
    source: str
    media_type: str
    size: int

    @property
    def type_name(self) -> str:
        """The type as a person knows it: PDF, DOCX, HTML."""
        return SUPPORTED_MEDIA_TYPES[self.media_type]


Ingestible = Document | FileDocument


@dataclass(frozen=True)
class Skipped:
    """A file (or folder) that is not ingested, with the reason: an unsupported type, an
    unreadable file or folder, an empty file, or a file over the upload limit."""

    path: Path
    reason: str


@dataclass(frozen=True)
class Discovery:
    """What a walk found, in path order: documents (text and files), every file skipped (with
    why), and the empty (or whitespace-only) files among those."""

    documents: tuple[Ingestible, ...]
    skipped: tuple[Skipped, ...]
    empty: tuple[Path, ...]


def is_supported(path: PurePath) -> bool:
    """Whether the file name ends in one of the supported text extensions, in any case."""
    return path.suffix.lower() in SUPPORTED_EXTENSIONS


def source_name(root: Path, path: Path) -> str:
    """The document's stable identity: its path under ``root`` with ``/`` separators."""
    return path.relative_to(root).as_posix()


def discover(root: Path, *, max_upload_bytes: int = DEFAULT_MAX_UPLOAD_BYTES) -> Discovery:
    """Walk ``root`` recursively, in path order: read every text file as UTF-8, and find the
    files to upload (at most ``max_upload_bytes`` each) without reading them yet."""
    if not root.is_dir():
        raise InvalidInputError(f"docs path is not a directory: {root}")
    skipped: list[Skipped] = []
    candidates = sorted(_walk(root, skipped), key=lambda path: path.relative_to(root).parts)
    documents: list[Ingestible] = []
    empty: list[Path] = []
    for path in candidates:
        try:
            found = _document(root, path, max_upload_bytes)
        except OSError as exc:
            found = Skipped(path, str(exc))
        if isinstance(found, Skipped):
            skipped.append(found)
            if found.reason in (EMPTY, EMPTY_FILE):
                empty.append(path)
        else:
            documents.append(found)
    skipped.sort(key=lambda item: item.path.relative_to(root).parts)
    return Discovery(tuple(documents), tuple(skipped), tuple(empty))


def _document(root: Path, path: Path, max_upload_bytes: int) -> Ingestible | Skipped:
    """What to send of one file, or why it is skipped; OSError if it cannot be read."""
    if is_supported(path):
        raw = _read_regular_file(path)
        try:
            # utf-8-sig: a byte-order mark is an encoding artefact, not part of the text.
            content = raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            return Skipped(path, str(exc))
        if not content.strip():
            return Skipped(path, EMPTY)
        title = document_title(content, path)
        return Document(path, source_name(root, path), title, content, len(raw))
    media_type = FILE_EXTENSIONS.get(path.suffix.lower())
    if media_type is None:
        # Its name says nothing, so its first bytes decide; a FIFO or device is never opened.
        if not stat.S_ISREG(path.stat().st_mode):
            return Skipped(path, UNSUPPORTED)
        media_type = _sniffed(_read_head(path), path.name)
        if media_type is None:
            return Skipped(path, UNSUPPORTED)
    else:
        _read_head(path)  # unreadable (permissions, not a regular file) is said now, not later
    size = path.stat().st_size
    if size == 0:
        return Skipped(path, EMPTY_FILE)
    if size > max_upload_bytes:
        return Skipped(
            path,
            f"{size} bytes, over the upload limit of {max_upload_bytes} bytes (the portal's "
            "RAG_MAX_UPLOAD_BYTES; --max-upload-bytes if the portal's is higher)",
        )
    return FileDocument(path, source_name(root, path), media_type, size)


def _sniffed(head: bytes, name: str) -> str | None:
    """PDF or HTML when the first bytes say so; None for anything else.

    A DOCX is a ZIP archive whose parts are listed at its end, so only its name tells it
    here; text of another extension stays unsupported, as it always was.
    """
    try:
        media_type = detect_media_type(head, name)
    except RagError:  # not a type the portal reads, or a ZIP archive cut at SNIFF_BYTES
        return None
    return media_type if media_type in (PDF, HTML) else None


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
    _check_regular(path)
    return path.read_bytes()


def _read_head(path: Path) -> bytes:
    """The file's first :data:`SNIFF_BYTES` bytes (refusing what is not a regular file)."""
    _check_regular(path)
    with path.open("rb") as file:
        return file.read(SNIFF_BYTES)


def _check_regular(path: Path) -> None:
    if not stat.S_ISREG(path.stat().st_mode):
        raise OSError(f"not a regular file: {path}")
