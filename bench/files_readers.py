"""The readers bench/files.py compares: ours in process, ours isolated, LlamaIndex's.

:func:`read_ours` runs :func:`rag_plugin.files.extract` in this process, :func:`read_isolated`
:func:`rag_plugin.files.extract_isolated` (a child process per file, as the ingestion job
reads it) and :func:`llama_read` ``SimpleDirectoryReader(input_files=...).load_data()`` with its
default readers; :func:`check_llama_readers` refuses to run without those readers.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rag_plugin.files import ExtractedDocument, extract, extract_isolated


def llama_read(paths: Sequence[Path]) -> list[Any]:
    """LlamaIndex's documents of ``paths`` with SimpleDirectoryReader's default readers."""
    from llama_index.core import SimpleDirectoryReader

    return list(SimpleDirectoryReader(input_files=[str(path) for path in paths]).load_data())


def read_ours(paths: Sequence[Path]) -> list[ExtractedDocument]:
    return [extract(path.read_bytes(), filename=path.name) for path in paths]


def read_isolated(paths: Sequence[Path]) -> list[ExtractedDocument]:
    with children_without_main():
        return [extract_isolated(path.read_bytes(), filename=path.name) for path in paths]


@contextmanager
def children_without_main() -> Iterator[None]:
    """While it lasts, :func:`extract_isolated`'s children do not import the main script.

    A forkserver child imports its parent's main module before it runs (multiprocessing
    prepares it so, from ``__main__.__spec__`` or ``__file__``): the worker's is manage.py,
    which imports nothing, but bench/files.py's imports (fpdf2, fontTools, the portal's launch
    helpers) cost each child about half a second, which no job pays.
    """
    main = sys.modules["__main__"]
    spec, path = main.__spec__, vars(main).pop("__file__", None)
    main.__spec__ = None
    try:
        yield
    finally:
        main.__spec__ = spec
        if path is not None:
            main.__file__ = path


def check_llama_readers() -> None:
    """Refuse to run without LlamaIndex's file readers (the baseline would read bytes)."""
    from llama_index.core.readers.file.base import _try_loading_included_file_formats

    defaults = _try_loading_included_file_formats()
    # Its slides module calls logging.basicConfig(level=INFO) on import: every INFO line of
    # fontTools (fpdf2's font subsetting) and pgserver would be printed.
    logging.getLogger().setLevel(logging.WARNING)
    if ".pdf" not in defaults or ".docx" not in defaults:
        raise RuntimeError(
            "llama-index-readers-file is not installed, so SimpleDirectoryReader would read "
            "PDF and DOCX bytes as text: run `make bench-deps`."
        )
