"""``ragctl chat`` against the real portal and the loopback LLM (SPEC R6)."""

from __future__ import annotations

import io
import json

import pytest

from rag_plugin.cli import run
from rag_plugin.cli.console import Console
from tests.conftest import PortalServer
from tests.portal.api.test_context import ingest
from tests.rag_plugin.llama_index.fake_llm_server import FakeLLMServer

ACME = "acme.localhost"
SEAT = "The headquarters of DG Agentur stand in Berlin, next to the river."


@pytest.fixture(scope="module")
def collection(portal_server: PortalServer) -> str:
    name = portal_server.new_source()
    ingest(portal_server, "alice", name, SEAT, title="Seat", source="seat.md")
    return name


def ragctl(server: PortalServer, *argv: str, stdin: str = "") -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    console = Console(out, err, stdin=io.StringIO(stdin))
    login = ["--host", server.url_for(ACME), "--user", "alice", "--password", server.password]
    code = run(["chat", *login, *argv], console)
    return code, out.getvalue(), err.getvalue()


def test_an_interactive_chat_streams_each_answer_and_sends_the_history(
    portal_server: PortalServer, fake_llm: FakeLLMServer, collection: str
) -> None:
    before = len(fake_llm.requests)
    fake_llm.queued[:] = ["It is in Berlin [1].", "Where is DG Agentur?", "By the river [1]."]
    code, out, err = ragctl(
        portal_server,
        "--collection",
        collection,
        stdin="Where is DG Agentur?\n\nand where exactly?\n",
    )
    assert (code, err) == (0, "")
    assert out.count("you> ") == 4  # two questions, the blank line (skipped), then the end
    assert "It is in Berlin [1].\n  [1] Seat (" in out
    assert f"{collection}: seat.md)" in out
    assert "By the river [1].\n" in out
    # The second question went with the first answer: condensed, then answered with history.
    answer_call = fake_llm.requests[before + 2 :][-1]
    contents = [m["content"] for m in answer_call["messages"][1:]]
    assert contents == ["Where is DG Agentur?", "It is in Berlin [1].", "and where exactly?"]
    assert answer_call["stream"] is True


def test_one_question_with_json_prints_the_servers_answer(
    portal_server: PortalServer, fake_llm: FakeLLMServer, collection: str
) -> None:
    fake_llm.queued[:] = ["Berlin [1]."]
    code, out, _ = ragctl(
        portal_server, "--collection", collection, "--message", "Where is it?", "--json"
    )
    assert code == 0
    body = json.loads(out)
    assert (body["answer"], body["cited"], body["condense"]) == ("Berlin [1].", [1], "none")


def test_json_without_a_message_and_an_unknown_collection_are_errors(
    portal_server: PortalServer,
) -> None:
    code, _, err = ragctl(portal_server, "--collection", "docs", "--json")
    assert code == 1
    assert "--json answers one question" in err
    code, _, err = ragctl(portal_server, "--collection", "nope_missing", "--message", "hi")
    assert code == 1
    assert err.startswith("error: chat failed:")


def test_a_long_conversation_sends_its_latest_turns_only(
    portal_server: PortalServer, fake_llm: FakeLLMServer, collection: str
) -> None:
    fake_llm.queued[:] = ["A1", "first condensed", "A2", "second condensed", "A3"]
    before = len(fake_llm.requests)
    code, _, err = ragctl(
        portal_server,
        "--collection",
        collection,
        "--max-messages",
        "3",
        stdin="Q1\nQ2\nQ3\n",
    )
    assert (code, err) == (0, "")
    answer_call = fake_llm.requests[before:][-1]
    assert [m["content"] for m in answer_call["messages"][1:]] == ["Q2", "A2", "Q3"]
