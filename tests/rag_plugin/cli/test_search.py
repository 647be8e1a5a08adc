"""ragctl search and collections against a real HTTP server on loopback (SPEC X2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag_plugin.cli import main
from rag_plugin.cli.output import snippet
from tests.rag_plugin.cli.fake_portal import FakePortal


@pytest.fixture
def ingested(tmp_path: Path, fake_portal: FakePortal, capsys: pytest.CaptureFixture[str]) -> str:
    """A fake portal holding two documents in collection "docs"; returns the acme base URL."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "install.md").write_text(
        "# Installing\n\nRun pip install to set up ragctl.\n\nThen start the server.\n"
    )
    (docs / "search-tips.txt").write_text("Search with hybrid strategy for best recall.\n")
    host = fake_portal.url("acme.localhost")
    argv = ["ingest-dir", "--host", host, "--collection", "docs", "--docs-path", str(docs)]
    assert main([*argv, "--token", "alice"]) == 0
    capsys.readouterr()
    fake_portal.requests.clear()
    return host


def search_argv(host: str, *extra: str) -> list[str]:
    return ["search", "--host", host, "--token", "alice", "--collection", "docs", *extra]


def test_search_prints_ranked_results_with_offsets(
    ingested: str, fake_portal: FakePortal, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(search_argv(ingested, "--query", "install server"))

    captured = capsys.readouterr()
    assert code == 0
    assert captured.err == ""
    assert captured.out == (
        "3 results for 'install server' (strategy=semantic, 7 ms)\n"
        "\n"
        "1. Installing  [score 0.500000]\n"
        "   source: install.md  chars 0-12  chunk 0  id doc1_0\n"
        "   # Installing\n"
        "\n"
        "2. Installing  [score 0.500000]\n"
        "   source: install.md  chars 14-47  chunk 1  id doc1_1\n"
        "   Run pip install to set up ragctl.\n"
        "\n"
        "3. Installing  [score 0.500000]\n"
        "   source: install.md  chars 49-71  chunk 2  id doc1_2\n"
        "   Then start the server.\n"
    )
    assert fake_portal.requests[0].body == {
        "collection": "docs",
        "query": "install server",
        "limit": 10,
    }
    assert fake_portal.requests[0].host == f"acme.localhost:{fake_portal.port}"


def test_search_sends_top_k_and_strategy(
    ingested: str, fake_portal: FakePortal, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(search_argv(ingested, "--query", "hybrid", "--top-k", "3", "--strategy", "bm25"))

    assert code == 0
    assert capsys.readouterr().out == (
        "1 result for 'hybrid' (strategy=bm25, 7 ms)\n"
        "\n"
        "1. search tips  [score 1.000000]\n"
        "   source: search-tips.txt  chars 0-44  chunk 0  id doc2_0\n"
        "   Search with hybrid strategy for best recall.\n"
    )
    assert fake_portal.requests[0].body == {
        "collection": "docs",
        "query": "hybrid",
        "limit": 3,
        "strategy": "bm25",
    }


def test_search_json_prints_the_server_response_unchanged(
    ingested: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(search_argv(ingested, "--query", "recall", "--json"))

    response = json.loads(capsys.readouterr().out)
    assert code == 0
    assert response == {
        "results": [
            {
                "id": "doc2_0",
                "content": "Search with hybrid strategy for best recall.",
                "score": 1.0,
                "metadata": {
                    "title": "search tips",
                    "source": "search-tips.txt",
                    "created_at": "2025-01-01T00:00:00Z",
                    "tags": [],
                    "document_id": "doc2",
                    "chunk_index": 0,
                    "start_offset": 0,
                    "end_offset": 44,
                },
            }
        ],
        "total": 1,
        "strategy": "semantic",
        "reranked": False,
        "duration_ms": 7,
    }


def test_search_without_hits_says_so(ingested: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(search_argv(ingested, "--query", "zebra")) == 0

    assert capsys.readouterr().out == "0 results for 'zebra' (strategy=semantic, 7 ms)\n"


def test_search_in_unknown_collection_fails_with_the_server_message(
    fake_portal: FakePortal, capsys: pytest.CaptureFixture[str]
) -> None:
    host = fake_portal.url("acme.localhost")

    code = main(
        ["search", "--host", host, "--token", "alice", "--collection", "nope", "--query", "x"]
    )

    captured = capsys.readouterr()
    assert code == 1
    assert captured.out == ""
    assert captured.err == "error: search failed: HTTP 404: Collection 'nope' not found\n"


def test_search_with_a_bad_token_fails_with_401(
    ingested: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["search", "--host", ingested, "--token", "forged", "--collection", "docs"]

    code = main([*argv, "--query", "x"])

    assert code == 1
    assert capsys.readouterr().err == "error: search failed: HTTP 401: Unauthorized\n"


def test_collections_lists_counts(ingested: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["collections", "--host", ingested, "--token", "alice"]) == 0

    assert capsys.readouterr().out == "docs\tdocuments=2 chunks=4 dim=384\n"


def test_collections_json(ingested: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["collections", "--host", ingested, "--token", "alice", "--json"]) == 0

    assert json.loads(capsys.readouterr().out) == [
        {"name": "docs", "document_count": 2, "chunk_count": 4, "dimensions": 384}
    ]


@pytest.mark.parametrize(
    ("content", "limit", "expected"),
    [
        ("short  text\n\nhere", 240, "short text here"),
        ("one two three four", 9, "one two…"),
        ("one two three four", 7, "one two…"),
        ("abcdefghijkl", 5, "abcde…"),
    ],
)
def test_snippet_is_one_line_cut_at_a_word(content: str, limit: int, expected: str) -> None:
    assert snippet(content, limit) == expected


def test_search_sends_filters_and_rerank(ingested: str, fake_portal: FakePortal) -> None:
    argv = search_argv(
        ingested,
        "--query",
        "hybrid",
        "--filter",
        "page=3",
        "--filter",
        "topic=birds",
        "--filter",
        "draft=false",
        "--rerank",
        "lexical",
    )
    assert main(argv) == 0
    assert fake_portal.requests[0].body == {
        "collection": "docs",
        "query": "hybrid",
        "limit": 10,
        "filters": {"page": 3, "topic": "birds", "draft": False},
        "rerank": "lexical",
    }


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--filter", "page"], "expected KEY=VALUE"),
        (["--filter", "=3"], "expected KEY=VALUE"),
        (["--filter", "a=1", "--filter", "a=2"], "--filter a is given twice"),
    ],
)
def test_bad_filters_are_refused_before_any_request(
    ingested: str,
    fake_portal: FakePortal,
    capsys: pytest.CaptureFixture[str],
    extra: list[str],
    message: str,
) -> None:
    assert main(search_argv(ingested, "--query", "x", *extra)) != 0
    assert message in capsys.readouterr().err
    assert fake_portal.routes() == []
