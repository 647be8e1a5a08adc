"""Running ragctl in-process for the ingest-dir tests: a docs folder and what ingest-dir prints
for it, a captured console, and transports that forbid or intercept requests."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from rag_plugin.cli import run
from rag_plugin.cli.console import Console
from tests.rag_plugin.cli.fake_portal import FakePortal


class ForbiddenTransport(httpx.BaseTransport):
    """Fails the test on any request: for paths that must not touch the network."""

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        pytest.fail(f"unexpected request {request.method} {request.url}")


class TerminalStream(io.StringIO):
    """A captured stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def make_console(
    *,
    terminal: bool = False,
    transport: httpx.BaseTransport | None = None,
    prompt: Callable[[str], str] | None = None,
) -> tuple[Console, io.StringIO, io.StringIO]:
    """A console writing into two captured streams (stderr a fake terminal if asked)."""
    stdout, stderr = io.StringIO(), TerminalStream() if terminal else io.StringIO()
    return Console(stdout, stderr, transport=transport, prompt=prompt), stdout, stderr


def make_docs(root: Path) -> Path:
    """Nested folders, upper-case extensions, one invalid-UTF-8 file, one blank file."""
    docs = root / "docs"
    (docs / "guide" / "advanced").mkdir(parents=True)
    (docs / "guide" / "intro.md").write_text("# Getting Started\n\nInstall ragctl.\n")
    (docs / "guide" / "advanced" / "TUNING.MD").write_text("Tune the index.\n\nThen search.\n")
    (docs / "release_notes.TXT").write_text("Version one.\n")
    (docs / "data.jsonl").write_text('{"a": 1}\n')
    (docs / "broken.md").write_bytes(b"caf\xe9 latin-1\n")
    (docs / "blank.txt").write_text("  \n\n")
    (docs / "picture.png").write_bytes(b"\x89PNG")
    return docs


DATA, TUNING, INTRO, NOTES = (
    "data.jsonl",
    "guide/advanced/TUNING.MD",
    "guide/intro.md",
    "release_notes.TXT",
)
"""The sources of make_docs' four ingestible documents, in the order they are sent."""

UNSUPPORTED = (
    "not a file ragctl ingests (.md .markdown .txt .text .json .jsonl .pdf .docx .html .htm, "
    "or a PDF or HTML file by its first bytes)"
)
BROKEN_NOTE = (
    "skipped\t{docs}/blank.txt\tempty (only whitespace)\n"
    "skipped\t{docs}/broken.md\t'utf-8' codec can't decode byte 0xe9 in position 3: invalid "
    "continuation byte\n"
    f"skipped\t{{docs}}/picture.png\t{UNSUPPORTED}\n"
)
"""What make_docs' folder prints on stderr first: every file not ingested, with why."""


def ingest_argv(portal: FakePortal, docs: Path, *extra: str) -> list[str]:
    return [
        "ingest-dir",
        "--host",
        portal.url("acme.localhost"),
        "--collection",
        "docs",
        "--docs-path",
        str(docs),
        *extra,
    ]


def expected_run_output(docs: Path) -> str:
    return (
        f"ingested\t{docs}/data.jsonl\t1 chunks\n"
        f"ingested\t{docs}/guide/advanced/TUNING.MD\t2 chunks\n"
        f"ingested\t{docs}/guide/intro.md\t2 chunks\n"
        f"ingested\t{docs}/release_notes.TXT\t1 chunks\n"
        "summary\tdocuments=4 succeeded=4 failed=0 chunks=6\n"
    )


class Intercepting(httpx.BaseTransport):
    """Sends requests on to the fake portal; ``before`` may answer a request itself first, and
    every job object polled is kept."""

    def __init__(self, before: Callable[[httpx.Request], httpx.Response | None] = lambda _: None):
        self.inner = httpx.HTTPTransport()
        self.before = before
        self.polled: list[tuple[str, str | None]] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        answer = self.before(request)
        if answer is not None:
            return answer
        response = self.inner.handle_request(request)
        if request.method == "GET" and request.url.path.startswith("/api/rag/jobs/"):
            response.read()
            job = json.loads(response.content)
            self.polled.append((job["state"], job["stage"]))
        return response

    def close(self) -> None:
        self.inner.close()


def ingest(
    portal: FakePortal,
    docs: Path,
    *extra: str,
    transport: httpx.BaseTransport | None = None,
    terminal: bool = False,
) -> tuple[int, str, str]:
    """Run ingest-dir as alice; the exit status, stdout and stderr."""
    console, stdout, stderr = make_console(terminal=terminal, transport=transport)
    code = run(ingest_argv(portal, docs, "--token", "alice", *extra), console)
    return code, stdout.getvalue(), stderr.getvalue()
