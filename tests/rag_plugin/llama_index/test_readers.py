"""FileReader: one LlamaIndex Document per file, with the page spans as metadata."""

from __future__ import annotations

from pathlib import Path

import pytest
from llama_index.core.schema import MetadataMode

from rag_plugin.exceptions import EncryptedDocumentError, FileTooLargeError
from rag_plugin.files import DOCX, ExtractionLimits, extract
from rag_plugin.llama_index.readers import FileReader
from tests.rag_plugin.files import makers


@pytest.fixture
def census(tmp_path: Path) -> Path:
    path = tmp_path / "census.docx"
    path.write_bytes(makers.report_docx())
    return path


def test_a_file_is_one_document_with_its_text_title_and_page_spans(census: Path) -> None:
    (document,) = FileReader(isolated=False).load_data(census, extra_info={"tenant": "acme"})

    extracted = extract(census.read_bytes())
    assert document.text == extracted.text
    assert document.metadata == {
        "author": "Ada Lovelace",
        "created": "2023-05-06T07:08:09+00:00",
        "page_count": 2,
        "title": "Otter census",
        "media_type": DOCX,
        "file_name": "census.docx",
        "file_path": str(census),
        "pages": [[1, 0, 172], [2, 174, 234]],
        "sections": [[0, 49, "Otter census"], [51, 197, "Methods"], [199, 234, "Results"]],
        "tenant": "acme",
    }
    assert [document.text[start:end] for _, start, end in document.metadata["pages"]] == [
        makers.DOCX_PAGE_1,
        makers.DOCX_PAGE_2,
    ]


def test_spans_stay_out_of_what_the_models_see(census: Path) -> None:
    (document,) = FileReader(isolated=False).load_data(census)

    embedded = document.get_content(MetadataMode.EMBED)

    assert "title: Otter census" in embedded
    assert "pages" not in embedded
    assert "[[1, 0, 172]" not in document.get_content(MetadataMode.LLM)


def test_by_default_the_file_is_read_in_a_child_process(tmp_path: Path, census: Path) -> None:
    locked = tmp_path / "locked.pdf"
    locked.write_bytes(makers.simple_pdf([["x"]], owner_password="o", user_password="u"))

    (document,) = FileReader().load_data(census)

    assert document.text == extract(census.read_bytes()).text
    with pytest.raises(EncryptedDocumentError, match=r"'locked\.pdf' is encrypted"):
        FileReader().load_data(locked)


def test_a_file_over_the_limit_is_refused_before_it_is_read(census: Path) -> None:
    reader = FileReader(limits=ExtractionLimits(max_bytes=100), isolated=False)

    with pytest.raises(FileTooLargeError, match=r"more than the limit of 100"):
        reader.load_data(census)
