"""ragctl ingest-dir's file discovery: which files, in what order, with what titles."""

from __future__ import annotations

import os
from pathlib import Path, PurePath

import pytest

from rag_plugin.cli.discovery import (
    Document,
    FileDocument,
    Skipped,
    discover,
    document_title,
    is_supported,
    source_name,
)
from rag_plugin.exceptions import InvalidInputError
from tests.rag_plugin.cli.ingest_dir_helpers import UNSUPPORTED


def write(root: Path, relative: str, data: bytes | str) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        path.write_text(data, encoding="utf-8", newline="")
    else:
        path.write_bytes(data)
    return path


@pytest.mark.parametrize(
    ("name", "supported"),
    [
        ("a.md", True),
        ("a.markdown", True),
        ("a.txt", True),
        ("a.text", True),
        ("a.json", True),
        ("a.JSONL", True),
        ("NOTES.Md", True),
        ("archive.tar.md", True),
        ("a.png", False),
        ("a.md.bak", False),
        ("README", False),
        (".md", False),
        ("a.rst", False),
    ],
)
def test_supported_extensions_are_case_insensitive(name: str, supported: bool) -> None:
    assert is_supported(PurePath(name)) is supported


@pytest.mark.parametrize(
    ("content", "name", "title"),
    [
        ("intro\n# Real Title\nbody", "x.md", "Real Title"),
        ("#   Spaced   \n", "x.md", "Spaced"),
        ("  # Indented heading\r\nbody", "x.md", "Indented heading"),
        ("# \n# Second\n", "x.md", "Second"),
        ("## Sub heading\nbody", "docs-my_file.md", "docs my file"),
        ("#NoSpace\n", "my_file.md", "my file"),
        ("```sh\n# install it\n```\n# After Fence\n", "x.md", "After Fence"),
        ("~~~\n# inside\n~~~\n", "release-notes.txt", "release notes"),
        ("no heading at all", "my.notes.md", "my.notes"),
        ("no heading", "___.md", "document"),
    ],
)
def test_title_prefers_first_heading_then_file_stem(content: str, name: str, title: str) -> None:
    assert document_title(content, PurePath("docs") / name) == title


def test_walk_is_recursive_sorted_by_path_components(tmp_path: Path) -> None:
    write(tmp_path, "b.md", "# B\n")
    write(tmp_path, "a-b.md", "dash\n")
    write(tmp_path, "a/b.md", "nested\n")
    write(tmp_path, "a/z/deep.TXT", "deep\n")
    write(tmp_path, "A.json", "{}\n")
    write(tmp_path, "image.png", "not text\n")

    found = discover(tmp_path)

    # Component order ("a" < "a-b.md"), not string order ("a-b.md" < "a/b.md").
    assert [document.source for document in found.documents] == [
        "A.json",
        "a/b.md",
        "a/z/deep.TXT",
        "a-b.md",
        "b.md",
    ]
    assert [document.path for document in found.documents] == [
        tmp_path / "A.json",
        tmp_path / "a" / "b.md",
        tmp_path / "a" / "z" / "deep.TXT",
        tmp_path / "a-b.md",
        tmp_path / "b.md",
    ]
    assert found.skipped == (Skipped(tmp_path / "image.png", UNSUPPORTED),)
    assert found.empty == ()


def test_document_carries_exact_content_title_and_byte_size(tmp_path: Path) -> None:
    write(tmp_path, "guide/über_uns.md", "Intro\r\n# Über uns\r\nText ✓\r\n")

    (document,) = discover(tmp_path).documents

    assert document.content == "Intro\r\n# Über uns\r\nText ✓\r\n"
    assert document.title == "Über uns"
    assert document.source == "guide/über_uns.md"
    # Ü and ✓ are 2 and 3 bytes in UTF-8: 27 characters, 30 bytes.
    assert document.size == 30


def test_byte_order_mark_is_dropped_from_content_but_counted_in_size(tmp_path: Path) -> None:
    write(tmp_path, "bom.md", b"\xef\xbb\xbf# Title\n")

    (document,) = discover(tmp_path).documents

    assert document.content == "# Title\n"
    assert document.title == "Title"
    assert document.size == 11


def test_invalid_utf8_is_skipped_with_the_decoder_error(tmp_path: Path) -> None:
    bad = write(tmp_path, "bad.md", b"ok \xff\xfe not utf-8")
    write(tmp_path, "good.md", "fine\n")

    found = discover(tmp_path)

    assert [document.source for document in found.documents] == ["good.md"]
    assert [(item.path, item.reason) for item in found.skipped] == [
        (bad, "'utf-8' codec can't decode byte 0xff in position 3: invalid start byte")
    ]


def test_fifo_and_broken_link_are_skipped_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.md"
    os.mkfifo(fifo)
    broken = tmp_path / "broken.txt"
    broken.symlink_to(tmp_path / "missing.txt")
    write(tmp_path, "real.md", "text\n")

    found = discover(tmp_path)

    assert [document.source for document in found.documents] == ["real.md"]
    assert [(item.path, item.reason) for item in found.skipped] == [
        (broken, f"[Errno 2] No such file or directory: '{broken}'"),
        (fifo, f"not a regular file: {fifo}"),
    ]


def test_folder_named_like_a_document_is_walked_not_read(tmp_path: Path) -> None:
    write(tmp_path, "notes.md/inner.txt", "inside\n")

    found = discover(tmp_path)

    assert [document.source for document in found.documents] == ["notes.md/inner.txt"]
    assert found.skipped == ()


@pytest.mark.parametrize("blank", ["", "   ", "\n\n\t \r\n"])
def test_whitespace_only_files_are_skipped_as_empty(tmp_path: Path, blank: str) -> None:
    empty = write(tmp_path, "empty.md", blank)
    write(tmp_path, "full.md", "x\n")

    found = discover(tmp_path)

    assert [document.source for document in found.documents] == ["full.md"]
    assert found.empty == (empty,)
    assert found.skipped == (Skipped(empty, "empty (only whitespace)"),)


def test_every_file_not_ingested_is_skipped_with_its_reason_in_path_order(
    tmp_path: Path,
) -> None:
    write(tmp_path, "manual.odt", b"PK\x03\x04 a ZIP archive, but not a Word document")
    write(tmp_path, "a/README", "no extension\n")
    write(tmp_path, "a/notes.md.bak", "backup\n")
    write(tmp_path, "a/latin.md", b"caf\xe9\n")
    write(tmp_path, "a/blank.txt", "\n")
    write(tmp_path, "a/kept.md", "kept\n")
    os.mkfifo(tmp_path / "a" / "pipe.png")  # never opened: its type alone skips it

    found = discover(tmp_path)

    assert [document.source for document in found.documents] == ["a/kept.md"]
    skipped = [(item.path.relative_to(tmp_path).as_posix(), item.reason) for item in found.skipped]
    assert skipped == [
        ("a/README", UNSUPPORTED),
        ("a/blank.txt", "empty (only whitespace)"),
        ("a/latin.md", "'utf-8' codec can't decode byte 0xe9 in position 3: invalid "
         "continuation byte"),
        ("a/notes.md.bak", UNSUPPORTED),
        ("a/pipe.png", UNSUPPORTED),
        ("manual.odt", UNSUPPORTED),
    ]  # fmt: skip


def test_linked_folder_is_followed_once_and_a_link_cycle_ends(tmp_path: Path) -> None:
    write(tmp_path, "real/doc.md", "text\n")
    (tmp_path / "z-link").symlink_to(tmp_path / "real")
    (tmp_path / "real" / "loop").symlink_to(tmp_path)

    found = discover(tmp_path)

    # "real" sorts before "z-link", so the real folder always owns the document.
    assert [document.source for document in found.documents] == ["real/doc.md"]


@pytest.mark.parametrize("kind", ["missing", "file"])
def test_docs_path_that_is_not_a_directory_is_refused(tmp_path: Path, kind: str) -> None:
    target = tmp_path / "docs"
    if kind == "file":
        target.write_text("a file\n")

    with pytest.raises(InvalidInputError) as caught:
        discover(target)

    assert str(caught.value) == f"docs path is not a directory: {target}"


def test_source_is_relative_posix_path(tmp_path: Path) -> None:
    assert source_name(tmp_path, tmp_path / "a" / "b.md") == "a/b.md"


PDF, HTML = "application/pdf", "text/html"
DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"


def test_pdf_docx_and_html_files_are_uploads_in_path_order_among_the_text(
    tmp_path: Path,
) -> None:
    write(tmp_path, "b/report.PDF", b"%PDF-1.7 made elsewhere")
    write(tmp_path, "a/census.docx", b"PK\x03\x04 not even read")
    write(tmp_path, "site/index.html", "<p>Welcome</p>\n")
    write(tmp_path, "site/old.HTM", "<p>Old</p>\n")
    write(tmp_path, "a/notes.md", "# Notes\n")

    found = discover(tmp_path)

    assert found.documents == (
        FileDocument(tmp_path / "a" / "census.docx", "a/census.docx", DOCX, 18),
        Document(tmp_path / "a" / "notes.md", "a/notes.md", "Notes", "# Notes\n", 8),
        FileDocument(tmp_path / "b" / "report.PDF", "b/report.PDF", PDF, 23),
        FileDocument(tmp_path / "site" / "index.html", "site/index.html", HTML, 15),
        FileDocument(tmp_path / "site" / "old.HTM", "site/old.HTM", HTML, 11),
    )
    assert (found.skipped, found.empty) == ((), ())


def test_a_file_named_as_a_pdf_is_uploaded_whatever_it_holds(tmp_path: Path) -> None:
    # The portal tells the type from the content and refuses it: ragctl does not guess.
    write(tmp_path, "fake.pdf", "plain text with a .pdf name\n")

    (document,) = discover(tmp_path).documents

    assert document == FileDocument(tmp_path / "fake.pdf", "fake.pdf", PDF, 28)


@pytest.mark.parametrize(
    ("name", "head", "media_type"),
    [
        ("manual.bin", b"%PDF-1.4\n%binary", PDF),
        ("download", b"\n" * 900 + b"%PDF-1.7", PDF),  # the header anywhere in the first KiB
        ("page.xhtml", b"\xef\xbb\xbf  <!DOCTYPE html><title>x</title>", HTML),
        ("saved.aspx", b"<html><body>hello</body></html>", HTML),
    ],
)
def test_a_pdf_or_html_of_another_name_is_found_by_its_first_bytes(
    tmp_path: Path, name: str, head: bytes, media_type: str
) -> None:
    write(tmp_path, name, head)

    found = discover(tmp_path)

    assert found.documents == (FileDocument(tmp_path / name, name, media_type, len(head)),)


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("late.bin", b"\n" * 1024 + b"%PDF-1.7"),  # past the first KiB
        # A DOCX is told by its name only: a ZIP archive lists its parts at its end.
        ("census.zip", b"PK\x03\x04" + bytes(2000)),
        ("photo.png", b"\x89PNG\r\n\x1a\n" + bytes(64)),
        ("README", b"Plain text: never ingested without a text extension.\n"),
    ],
)
def test_other_files_stay_unsupported(tmp_path: Path, name: str, data: bytes) -> None:
    write(tmp_path, name, data)

    found = discover(tmp_path)

    assert (found.documents, found.skipped) == ((), (Skipped(tmp_path / name, UNSUPPORTED),))


def test_an_empty_upload_is_skipped_as_empty(tmp_path: Path) -> None:
    empty = write(tmp_path, "empty.pdf", b"")

    found = discover(tmp_path)

    assert found.documents == ()
    assert found.skipped == (Skipped(empty, "empty (0 bytes)"),)
    assert found.empty == (empty,)


def test_a_file_over_the_upload_limit_is_skipped_with_both_sizes(tmp_path: Path) -> None:
    write(tmp_path, "fits.pdf", b"%PDF-" + bytes(5))
    big = write(tmp_path, "big.html", b"<html>" + bytes(5))

    found = discover(tmp_path, max_upload_bytes=10)

    assert [document.source for document in found.documents] == ["fits.pdf"]
    assert found.skipped == (
        Skipped(
            big,
            "11 bytes, over the upload limit of 10 bytes (the portal's RAG_MAX_UPLOAD_BYTES; "
            "--max-upload-bytes if the portal's is higher)",
        ),
    )


def test_an_upload_that_cannot_be_read_is_skipped_with_the_error(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.pdf"
    os.mkfifo(fifo)
    broken = tmp_path / "gone.docx"
    broken.symlink_to(tmp_path / "missing.docx")

    found = discover(tmp_path)

    assert found.documents == ()
    assert [(item.path, item.reason) for item in found.skipped] == [
        (broken, f"[Errno 2] No such file or directory: '{broken}'"),
        (fifo, f"not a regular file: {fifo}"),
    ]
