"""extract_isolated(): the same results as extract(), with a hostile file's damage kept in a
child process: out of time, out of memory or crashed, the caller gets a clear error."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from portal.embedded_db import PROJECT_ROOT
from rag_plugin.exceptions import (
    CorruptDocumentError,
    DecompressionBombError,
    EncryptedDocumentError,
    ExtractionTimeoutError,
    RagError,
    TooManyPagesError,
    UnsupportedFileTypeError,
)
from rag_plugin.files import ExtractionLimits, extract, extract_isolated, isolation
from tests.rag_plugin.files import makers


@pytest.mark.parametrize("name", ["report.docx", "otters.html"])
def test_the_child_returns_what_extract_returns(name: str, report_docx: bytes) -> None:
    data = report_docx if name.endswith(".docx") else makers.ARTICLE_HTML

    assert extract_isolated(data, filename=name) == extract(data, filename=name)


@pytest.mark.parametrize(
    ("data", "limits", "error"),
    [
        (
            makers.simple_pdf([["x"]], owner_password="o", user_password="u"),
            ExtractionLimits(),
            EncryptedDocumentError,
        ),
        (makers.png(makers.chart_image()).getvalue(), ExtractionLimits(), UnsupportedFileTypeError),
        (makers.simple_pdf([["a"], ["b"]]), ExtractionLimits(max_pages=1), TooManyPagesError),
        (makers.zip_bomb_docx(20), ExtractionLimits(), DecompressionBombError),
    ],
    ids=["encrypted", "image", "pages", "bomb"],
)
def test_the_childs_errors_come_back_as_the_same_class_and_message(
    data: bytes, limits: ExtractionLimits, error: type[RagError]
) -> None:
    with pytest.raises(error) as local:
        extract(data, filename="upload", limits=limits)

    with pytest.raises(error) as isolated:
        extract_isolated(data, filename="upload", limits=limits)

    assert type(isolated.value) is error
    assert str(isolated.value) == str(local.value)


def _group_members(group: int, name: str) -> list[psutil.Process]:
    """The running processes called ``name`` in process group ``group``."""
    found = []
    for process in psutil.process_iter(["name"]):
        try:
            if process.info["name"] == name and os.getpgid(process.pid) == group:
                found.append(process)
        except (ProcessLookupError, psutil.Error):
            continue
    return found


def _sigkill_pending(pid: int) -> bool:
    """Whether SIGKILL is pending for ``pid`` (it dies when next scheduled), or it is gone."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return True
    pending = 0
    for line in status.splitlines():
        if line.startswith(("SigPnd:", "ShdPnd:")):
            pending |= int(line.split()[1], 16)
    return bool(pending & (1 << (signal.SIGKILL - 1)))


def test_an_extraction_past_its_time_is_killed_with_its_tesseract(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # OCR of three scanned pages takes seconds; the limit is half of one.
    data = makers.scanned_pdf(3)
    real_kill = isolation._kill
    groups: list[int] = []

    def recording_kill(child: Any) -> None:
        groups.append(child.pid)  # the child's own process group, Tesseract's too
        real_kill(child)

    monkeypatch.setattr(isolation, "_kill", recording_kill)
    started = time.time()
    with pytest.raises(ExtractionTimeoutError) as caught:
        extract_isolated(data, filename="scan.pdf", limits=ExtractionLimits(timeout_s=0.5))
    # Looked up by the killed child's process group, so another test's Tesseract (a
    # server's or a job worker's, running at the same time) never counts. A killed one may
    # not have run since its SIGKILL arrived (a loaded CI machine): pending counts as killed.
    left = [
        process
        for process in _group_members(groups[0], "tesseract")
        if process.status() != psutil.STATUS_ZOMBIE and not _sigkill_pending(process.pid)
    ]

    assert time.time() - started < 5
    assert str(caught.value) == (
        "Extracting the text of the file 'scan.pdf' took longer than the limit of 0.5 s; split "
        "it into smaller files or raise timeout_s."
    )
    assert caught.value.code == "EXTRACTION_TIMEOUT"
    assert left == []


def test_a_child_out_of_memory_is_a_corrupt_file_naming_the_limit() -> None:
    # Decoding 9 MB of text needs 9 MB more than the child may take.
    with pytest.raises(CorruptDocumentError) as caught:
        extract_isolated(b"otter " * 1_500_000, limits=ExtractionLimits(memory_mb=4))

    assert str(caught.value) == (
        "The file cannot be read: the parser ran out of memory (the limit is 4 MB). Upload a "
        "smaller or simpler file, or raise memory_mb."
    )


def test_a_parser_that_crashes_is_a_corrupt_file_naming_the_signal() -> None:
    # PDFium aborts the process when an allocation fails: reading this page's text layer
    # takes ~100 MB, far beyond 1 MB and whatever the fork server had free (a 60-page file
    # needing 6 MB was read within 1 MB where the fork server happened to have the room).
    data = makers.dense_pdf()

    with pytest.raises(CorruptDocumentError) as caught:
        extract_isolated(data, filename="big.pdf", limits=ExtractionLimits(memory_mb=1))

    assert str(caught.value) == (
        "The file 'big.pdf' cannot be read: the parser crashed (signal 6). It may be damaged, "
        "or need more than the memory limit of 1 MB: upload an undamaged copy or raise "
        "memory_mb."
    )
    # The file itself is sound: with the default limit it is read.
    assert extract_isolated(data).text == extract(data).text


CALLER = """
import sys
from rag_plugin.files import ExtractionLimits, extract_isolated
data = open(sys.argv[1], "rb").read()
# The first call starts the fork server; its start-up does not count against the limit.
document = extract_isolated(data, limits=ExtractionLimits(timeout_s=1))
parsers = sorted({"pypdfium2", "docx", "trafilatura", "pytesseract", "lxml"} & set(sys.modules))
print(document.text, parsers)
"""


def test_the_caller_never_loads_a_parser_and_a_cold_start_is_not_a_timeout(
    tmp_path: Path,
) -> None:
    pdf = tmp_path / "child.pdf"
    pdf.write_bytes(makers.simple_pdf([["Read in a child."]]))

    result = subprocess.run(
        [sys.executable, "-c", CALLER, str(pdf)],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "Read in a child. []"
