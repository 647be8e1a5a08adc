"""One entry point from a file's bytes to its text and pages, whatever the format.

Each format's module (and its parser library) is imported only when a file of that format
arrives, so importing ``rag_plugin`` loads no parser, and a process that only hands files to
:func:`rag_plugin.files.extract_isolated` never loads one at all.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from types import MappingProxyType

from rag_plugin.exceptions import CorruptDocumentError, InvalidInputError, RagError
from rag_plugin.files import detect
from rag_plugin.files.document import ExtractedDocument
from rag_plugin.files.limits import DEFAULT_LIMITS, ExtractionLimits

logger = logging.getLogger(__name__)

Extractor = Callable[[bytes, str, ExtractionLimits, str], ExtractedDocument]
"""``(data, filename, limits, media_type)`` → the document."""


def _pdf(data: bytes, filename: str, limits: ExtractionLimits, _: str) -> ExtractedDocument:
    from rag_plugin.files.pdf import extract_pdf

    return extract_pdf(data, limits=limits, filename=filename)


def _docx(data: bytes, filename: str, limits: ExtractionLimits, _: str) -> ExtractedDocument:
    from rag_plugin.files.docx import extract_docx

    return extract_docx(data, limits=limits, filename=filename)


def _html(data: bytes, filename: str, limits: ExtractionLimits, _: str) -> ExtractedDocument:
    from rag_plugin.files.html import extract_html

    return extract_html(data, filename=filename)


def _text(data: bytes, filename: str, limits: ExtractionLimits, media: str) -> ExtractedDocument:
    from rag_plugin.files.text import extract_text

    return extract_text(data, media_type=media, filename=filename)


EXTRACTORS: Mapping[str, Extractor] = MappingProxyType(
    {
        detect.PDF: _pdf,
        detect.DOCX: _docx,
        detect.HTML: _html,
        detect.MARKDOWN: _text,
        detect.TEXT: _text,
        detect.JSON: _text,
        detect.JSONL: _text,
    }
)
"""The extractor of each media type :func:`~rag_plugin.files.detect.detect_media_type` returns."""


def extract(
    data: bytes, *, filename: str = "", limits: ExtractionLimits = DEFAULT_LIMITS
) -> ExtractedDocument:
    """The text, pages and metadata of the file ``data``, its type told by its content.

    ``filename`` is only a hint (it may tell Markdown or JSON from plain text) and is named
    in error messages. This runs the parser in the calling process, without a time or memory
    limit: for files from people you do not trust, use
    :func:`rag_plugin.files.extract_isolated`.

    Raises an :class:`~rag_plugin.exceptions.InvalidInputError` subclass for a file that
    cannot be extracted: too large, of an unsupported type, encrypted, damaged, a
    decompression bomb or with too many pages. A parser that fails in a way it does not
    name is reported as :class:`CorruptDocumentError` (its traceback logged).
    """
    if not isinstance(data, bytes):
        raise InvalidInputError(f"File data must be bytes, got {type(data).__name__}.")
    limits.check_size(len(data))
    media_type = detect.detect_media_type(data, filename)
    try:
        return EXTRACTORS[media_type](data, filename, limits, media_type)
    except (RagError, MemoryError):
        raise
    except Exception as exc:
        # A hostile file reaches parser paths nobody tested; the person who sent it needs to
        # hear that the file could not be read, and the traceback stays in the log.
        name = detect.SUPPORTED_MEDIA_TYPES[media_type]
        logger.warning("The %s parser failed on %r", name, filename, exc_info=exc)
        raise CorruptDocumentError(
            f"The {name} file{detect.named(filename)} cannot be read: the "
            f"parser failed with {type(exc).__name__}: {exc}. Upload an undamaged copy."
        ) from exc
