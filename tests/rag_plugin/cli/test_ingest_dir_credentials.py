"""ragctl ingest-dir's credentials and host: options, a prompt and the environment (SPEC X1)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_plugin.cli import main, run
from tests.rag_plugin.cli.fake_jobs import job_id
from tests.rag_plugin.cli.fake_portal import PASSWORD, FakePortal
from tests.rag_plugin.cli.ingest_dir_helpers import (
    BROKEN_NOTE,
    ForbiddenTransport,
    ingest_argv,
    make_console,
    make_docs,
)


def test_wrong_password_stops_before_any_ingest(
    tmp_path: Path, fake_portal: FakePortal, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = make_docs(tmp_path)

    code = main(ingest_argv(fake_portal, docs, "--user", "alice", "--password", "wrong"))

    captured = capsys.readouterr()
    assert code == 1
    assert captured.out == ""
    assert captured.err == (
        BROKEN_NOTE.format(docs=docs) + "error: login failed: HTTP 401: Invalid credentials\n"
    )
    assert fake_portal.routes() == ["POST /api/auth/login"]
    assert fake_portal.documents == {}


@pytest.mark.parametrize(
    ("auth", "message"),
    [
        ([], "error: --user is required unless --token is provided or $RAG_TOKEN is set\n"),
        (["--password", PASSWORD], "error: --user is required unless --token is provided "
         "or $RAG_TOKEN is set\n"),
        (["--user", "alice"], "error: --password is required unless --token is provided\n"),
    ],
)  # fmt: skip
def test_missing_credentials_fail_without_a_request(
    tmp_path: Path, auth: list[str], message: str
) -> None:
    docs = make_docs(tmp_path)
    console, stdout, stderr = make_console(transport=ForbiddenTransport())

    code = run(["ingest-dir", "--collection", "c", "--docs-path", str(docs), *auth], console)

    assert code == 1
    assert stdout.getvalue() == ""
    assert stderr.getvalue() == BROKEN_NOTE.format(docs=docs) + message


def test_password_is_prompted_for_on_a_terminal(tmp_path: Path, fake_portal: FakePortal) -> None:
    docs = make_docs(tmp_path)
    prompts: list[str] = []

    def prompt(text: str) -> str:
        prompts.append(text)
        return PASSWORD

    console, _, _ = make_console(prompt=prompt)
    code = run(ingest_argv(fake_portal, docs, "--user", "alice"), console)

    assert code == 0
    assert prompts == ["Password for alice: "]
    assert fake_portal.requests[0].body == {"username": "alice", "password": PASSWORD}


def test_token_and_host_come_from_the_environment(
    tmp_path: Path,
    fake_portal: FakePortal,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    docs = make_docs(tmp_path)
    monkeypatch.setenv("RAG_HOST", fake_portal.url("globex.localhost") + "/")
    monkeypatch.setenv("RAG_TOKEN", "bob")

    code = main(["ingest-dir", "--collection", "docs", "--docs-path", str(docs)])

    assert code == 0
    assert fake_portal.routes()[0] == "POST /api/rag/ingest/batch"
    assert fake_portal.polls() == [job_id(1)] * 4
    assert {(r.host, r.authorization) for r in fake_portal.requests} == {
        (f"globex.localhost:{fake_portal.port}", "Bearer bob")
    }


def test_explicit_user_wins_over_token_in_the_environment(
    tmp_path: Path, fake_portal: FakePortal, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = make_docs(tmp_path)
    monkeypatch.setenv("RAG_TOKEN", "bob")

    code = main(ingest_argv(fake_portal, docs, "--user", "alice", "--password", PASSWORD))

    assert code == 0
    assert fake_portal.routes()[0] == "POST /api/auth/login"
    assert fake_portal.requests[1].authorization == "Bearer alice"
