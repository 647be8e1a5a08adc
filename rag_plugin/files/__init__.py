"""Files to text: PDF, DOCX, HTML, Markdown, plain text and JSON(L) become one text with the
exact character span of every page (SPEC F1–F2).

:func:`extract` reads a file in the calling process; :func:`extract_isolated` reads it in a
child process under memory, CPU and time limits, for files from people you do not trust.
No parser library is imported until a file of its format arrives.
"""

from rag_plugin.files.detect import (
    DOCX,
    HTML,
    JSON,
    JSONL,
    MARKDOWN,
    PDF,
    SUPPORTED_MEDIA_TYPES,
    TEXT,
    detect_media_type,
)
from rag_plugin.files.document import (
    PAGE_SEPARATOR,
    ExtractedDocument,
    Page,
    PageRange,
    Section,
)
from rag_plugin.files.extract import extract
from rag_plugin.files.isolation import extract_isolated
from rag_plugin.files.limits import DEFAULT_LIMITS, ExtractionLimits

__all__ = [
    "DEFAULT_LIMITS",
    "DOCX",
    "HTML",
    "JSON",
    "JSONL",
    "MARKDOWN",
    "PAGE_SEPARATOR",
    "PDF",
    "SUPPORTED_MEDIA_TYPES",
    "TEXT",
    "ExtractedDocument",
    "ExtractionLimits",
    "Page",
    "PageRange",
    "Section",
    "detect_media_type",
    "extract",
    "extract_isolated",
]
