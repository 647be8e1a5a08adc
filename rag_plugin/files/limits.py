"""How much a single file may cost to extract, so that one hostile upload cannot take a
worker's memory, time or disk with it."""

from __future__ import annotations

from dataclasses import dataclass

from rag_plugin.exceptions import FileTooLargeError, InvalidInputError

MIB = 1024 * 1024

_WHOLE_NUMBERS = (
    "max_bytes",
    "max_pages",
    "memory_mb",
    "max_unzipped_bytes",
    "max_compression_ratio",
)


@dataclass(frozen=True, slots=True)
class ExtractionLimits:
    """The limits of one extraction.

    ``timeout_s`` and ``memory_mb`` hold only where the extraction runs isolated
    (:func:`rag_plugin.files.extract_isolated`): ``memory_mb`` is what the parser may allocate
    beyond the worker process's own footprint. ``ocr=False`` marks pages without a text
    layer ``needs_ocr`` instead of running Tesseract on them.
    """

    max_bytes: int = 50 * MIB
    max_pages: int = 2000
    timeout_s: float = 120.0
    memory_mb: int = 1024
    ocr: bool = True
    max_unzipped_bytes: int = 200 * MIB
    """The most a DOCX's archive may hold once decompressed."""
    max_compression_ratio: int = 100
    """The most any one member of a DOCX's archive may be compressed (uncompressed/compressed)."""

    def __post_init__(self) -> None:
        for name in _WHOLE_NUMBERS:
            _require_positive(name, getattr(self, name))
        timeout = self.timeout_s
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0:
            raise InvalidInputError(f"timeout_s must be a positive number, got {timeout!r}.")

    def check_size(self, size: int) -> None:
        """Raise :class:`FileTooLargeError` for a file of ``size`` bytes over ``max_bytes``."""
        if size > self.max_bytes:
            raise FileTooLargeError(
                f"The file has {size} bytes, more than the limit of {self.max_bytes}; "
                "split it into smaller files or raise max_bytes."
            )


def _require_positive(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidInputError(f"{name} must be a positive integer, got {value!r}.")


DEFAULT_LIMITS = ExtractionLimits()
