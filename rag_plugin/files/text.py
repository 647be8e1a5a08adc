"""Markdown, plain text, JSON and JSON Lines: the file's text as it is, on one page.

The text is the UTF-8 content unchanged (a byte-order mark aside), as ``ragctl ingest-dir``
has always read it, so the same file gives the same text, hash and chunks whichever way it
arrives.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import PurePath

from rag_plugin.exceptions import UnsupportedFileTypeError
from rag_plugin.files.document import ExtractedDocument, Page, sections_from_headings

_FENCES = ("```", "~~~")
_HEADING = re.compile(r"(#{1,6}) (.*)")


def markdown_headings(content: str) -> Iterator[tuple[int, str, int]]:
    """``(offset, heading, level)`` of every ``#`` heading outside code fences, in order."""
    open_fence: str | None = None
    offset = 0
    for line in content.split("\n"):
        stripped = line.strip()
        fence = stripped[:3]
        if fence in _FENCES:
            # A "# " line inside a fenced block is a shell comment, not a heading.
            if open_fence is None:
                open_fence = fence
            elif fence == open_fence:
                open_fence = None
        elif open_fence is None and (match := _HEADING.match(stripped)):
            heading = match.group(2).strip()
            if heading:
                yield offset + len(line) - len(line.lstrip()), heading, len(match.group(1))
        offset += len(line) + 1


def document_title(content: str, path: PurePath) -> str:
    """The first ``# `` heading outside code fences, else the stem with ``-``/``_`` as spaces."""
    for _, heading, level in markdown_headings(content):
        if level == 1:
            return heading
    stem = path.stem.replace("-", " ").replace("_", " ").strip()
    return stem or "document"


def extract_text(data: bytes, *, media_type: str, filename: str = "") -> ExtractedDocument:
    """One page holding the decoded text; sections from its Markdown headings."""
    try:
        # utf-8-sig: a byte-order mark is an encoding artefact, not part of the text.
        content = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UnsupportedFileTypeError(
            f"The file {filename!r} is not valid UTF-8 text ({exc}); save it as UTF-8."
        ) from exc
    return ExtractedDocument(
        text=content,
        pages=(Page(1, 0, len(content)),),
        title=document_title(content, PurePath(filename)),
        media_type=media_type,
        metadata={"page_count": 1},
        sections=sections_from_headings(content, list(markdown_headings(content))),
    )
