"""DOCX files made by python-docx: order, headings as sections, tables as rows, page breaks,
and archives that would decompress without end."""

from __future__ import annotations

import io
import zipfile

import docx
import pytest
from docx.oxml import parse_xml

from rag_plugin.exceptions import CorruptDocumentError, DecompressionBombError
from rag_plugin.files import DOCX, ExtractionLimits, Page, Section, extract
from rag_plugin.files.limits import MIB
from tests.rag_plugin.files import makers


def save(document: object) -> bytes:
    buffer = io.BytesIO()
    document.save(buffer)  # type: ignore[attr-defined]
    return buffer.getvalue()


def test_body_is_read_in_order_with_tables_as_rows_and_a_page_per_break(
    report_docx: bytes,
) -> None:
    document = extract(report_docx, filename="census.docx")

    assert document.text == f"{makers.DOCX_PAGE_1}\n\n{makers.DOCX_PAGE_2}"
    end = len(makers.DOCX_PAGE_1)
    assert document.pages == (
        Page(1, 0, end),
        Page(2, end + 2, len(document.text), has_image=True),
    )
    assert document.media_type == DOCX


def test_headings_are_sections_a_chunk_can_name(report_docx: bytes) -> None:
    document = extract(report_docx)
    text = document.text

    assert document.sections == (
        Section(0, text.index("\n\nMethods"), "Otter census", 0),
        Section(text.index("Methods"), text.index("\n\nResults"), "Methods", 1),
        Section(text.index("Results"), len(text), "Results", 2),
    )
    assert document.section_at(text.index("Rhine")) == "Methods"
    assert document.section_at(text.index("First line of page two")) == "Methods"
    assert document.section_at(text.index("Numbers rose")) == "Results"


def test_a_rendered_page_break_mark_is_not_a_page_break(report_docx: bytes) -> None:
    with zipfile.ZipFile(io.BytesIO(report_docx)) as archive:
        assert b"lastRenderedPageBreak" in archive.read("word/document.xml")

    assert extract(report_docx).metadata["page_count"] == 2
    assert extract(makers.report_docx(rendered_break=False)).text == extract(report_docx).text


def test_title_is_the_first_title_paragraph_and_author_and_date_the_properties(
    report_docx: bytes,
) -> None:
    document = extract(report_docx)

    assert document.title == "Otter census"
    assert document.metadata == {
        "author": "Ada Lovelace",
        "created": "2023-05-06T07:08:09+00:00",
        "page_count": 2,
    }


def test_the_core_properties_title_comes_first_then_a_heading_1() -> None:
    titled = docx.Document()
    titled.core_properties.title = "Census 2023"
    titled.add_heading("Otter census", 0)
    headed = docx.Document()
    headed.add_paragraph("Foreword")
    headed.add_heading("Methods", 1)

    assert extract(save(titled)).title == "Census 2023"
    assert extract(save(headed)).title == "Methods"


def test_a_paragraph_set_to_start_a_page_starts_one() -> None:
    document = docx.Document()
    document.add_paragraph("One.")
    document.add_paragraph("Two.").paragraph_format.page_break_before = True
    document.add_paragraph("Three.")

    extracted = extract(save(document))

    assert extracted.text == "One.\n\nTwo.\n\nThree."
    assert extracted.pages == (Page(1, 0, 4), Page(2, 6, 18))


def test_tabs_line_breaks_and_merged_cells_are_kept_as_text() -> None:
    document = docx.Document()
    paragraph = document.add_paragraph("Name:\t")
    paragraph.add_run("Otter").add_break()
    paragraph.add_run("Second line")
    table = document.add_table(rows=2, cols=3)
    table.cell(0, 0).merge(table.cell(0, 1)).text = "Merged"
    table.cell(0, 2).text = "C"
    table.cell(1, 0).text = "a"
    table.cell(1, 1).add_paragraph("b2")  # a cell of two paragraphs
    table.cell(1, 1).paragraphs[0].text = "b1"
    table.cell(1, 2).text = "c"

    extracted = extract(save(document))

    assert extracted.text == "Name:\tOtter\nSecond line\n\nMerged | C\na | b1 b2 | c"


def test_an_archive_that_would_decompress_to_300_mb_is_a_bomb() -> None:
    data = makers.zip_bomb_docx(300)
    assert len(data) < 2 * MIB

    with pytest.raises(DecompressionBombError) as caught:
        extract(data, filename="bomb.docx")

    assert str(caught.value) == (
        f"The DOCX 'bomb.docx' would decompress to {300 * MIB + 13 + 8} bytes, more than the "
        f"limit of {200 * MIB}; no real document of {len(data)} bytes does that."
    )
    assert caught.value.code == "DECOMPRESSION_BOMB"
    assert isinstance(caught.value, CorruptDocumentError)


def test_a_member_compressed_more_than_the_ratio_is_a_bomb() -> None:
    data = makers.zip_bomb_docx(20)

    with pytest.raises(DecompressionBombError, match=r"holds 'word/media/zeros\.bin', compressed"):
        extract(data, filename="bomb.docx")
    # Past a ratio limit above its own, python-docx finds it is no real document.
    with pytest.raises(CorruptDocumentError, match="the parser failed with AttributeError"):
        extract(data, limits=ExtractionLimits(max_compression_ratio=10_000))


def test_a_docx_with_broken_xml_is_corrupt() -> None:
    buffer = io.BytesIO()
    source = zipfile.ZipFile(io.BytesIO(makers.report_docx()))
    with source, zipfile.ZipFile(buffer, "w") as target:
        for item in source.infolist():
            content = source.read(item)
            if item.filename == "word/document.xml":
                content = content[: len(content) // 2]
            target.writestr(item, content)

    with pytest.raises(CorruptDocumentError) as caught:
        extract(buffer.getvalue(), filename="cut.docx")

    assert str(caught.value).startswith(
        "The DOCX 'cut.docx' is damaged and cannot be read: python-docx failed with XMLSyntaxError"
    )


W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
MC = "http://schemas.openxmlformats.org/markup-compatibility/2006"


def test_a_moved_texts_old_place_and_a_text_box_fallback_are_not_read_twice() -> None:
    document = docx.Document()
    paragraph = document.add_paragraph("Otters ")
    paragraph._p.append(
        parse_xml(
            f'<w:moveFrom xmlns:w="{W}" w:id="1" w:author="A">'
            "<w:r><w:t>moved</w:t></w:r></w:moveFrom>"
        )
    )
    paragraph.add_run("swim.")
    boxed = document.add_paragraph()
    boxed._p.append(
        parse_xml(
            f'<w:r xmlns:w="{W}" xmlns:mc="{MC}"><mc:AlternateContent>'
            "<mc:Choice Requires='wps'><w:t>In a box.</w:t></mc:Choice>"
            "<mc:Fallback><w:t>In a box.</w:t></mc:Fallback>"
            "</mc:AlternateContent></w:r>"
        )
    )

    assert extract(save(document)).text == "Otters swim.\n\nIn a box."
