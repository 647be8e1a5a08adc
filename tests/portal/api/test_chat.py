"""``POST /api/rag/chat``: a conversation turn over collections (SPEC R6), against the live
server and the loopback OpenAI-compatible LLM."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from httpx_sse import connect_sse

from portal import launch
from tests.conftest import LOGS, PortalServer
from tests.portal.api.test_context import ACME, create_profile, ingest
from tests.rag_plugin.llama_index.fake_llm_server import FAIL, FakeLLMServer

OWNER = "DG Agentur is owned by the Example Group, a family company."
SEAT = "The headquarters of DG Agentur stand in Berlin, next to the river."
HISTORY = [
    {"role": "user", "content": "Who owns DG Agentur?"},
    {"role": "assistant", "content": "The Example Group owns it [1]."},
    {"role": "user", "content": "and where is it?"},
]


def chat(server: PortalServer, body: dict[str, Any], user: str = "alice") -> Any:
    with server.api(ACME, user) as api:
        return api.post("/api/rag/chat", json=body)


@pytest.fixture(scope="module")
def company(portal_server: PortalServer) -> tuple[str, str, str]:
    """A collection of alice's with the two documents; returns it and their ids."""
    collection = portal_server.new_source()
    owner = ingest(portal_server, "alice", collection, OWNER, title="Owner")
    seat = ingest(portal_server, "alice", collection, SEAT, title="Seat")
    return collection, owner, seat


def test_chat_condenses_the_question_searches_for_it_and_answers_with_the_history(
    portal_server: PortalServer, fake_llm: FakeLLMServer, company: tuple[str, str, str]
) -> None:
    collection, _, seat = company
    condensed = "In which city are the headquarters of DG Agentur?"
    reply = "They stand in Berlin [1]."
    before = len(fake_llm.requests)
    fake_llm.queued[:] = [condensed, reply]
    response = chat(
        portal_server,
        {"collections": [{"name": collection}], "messages": HISTORY, "k": 1, "min_relevance": 0},
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["condense"], body["condensed_query"]) == ("llm", condensed)
    # Searched for the condensed question: its one hit is the headquarters document, which
    # shares no word with "and where is it?".
    assert [source["document_id"] for source in body["sources"]] == [seat]
    assert (body["answer"], body["cited"], body["message"]) == (reply, [1], None)
    assert body["usage"] == {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
    condense_call, answer_call = fake_llm.requests[before : before + 2]
    assert len(fake_llm.requests) == before + 2
    condense_prompt = condense_call["messages"][-1]["content"]
    for message in HISTORY[:-1]:
        assert f"{message['role']}: {message['content']}" in condense_prompt
    assert "Follow Up Input: and where is it?" in condense_prompt
    # The answer: the system prompt with the numbered context, then the conversation as is.
    roles = [message["role"] for message in answer_call["messages"]]
    assert roles == ["system", "user", "assistant", "user"]
    assert f"[Document 1]\n{SEAT}" in answer_call["messages"][0]["content"]
    assert [m["content"] for m in answer_call["messages"][1:]] == [m["content"] for m in HISTORY]


def test_chat_lists_the_cited_sources_first(
    portal_server: PortalServer, fake_llm: FakeLLMServer, company: tuple[str, str, str]
) -> None:
    collection, _, _ = company
    fake_llm.queued[:] = ["DG Agentur", "Berlin [2], owned by a family [2][1]."]
    response = chat(
        portal_server,
        {"collections": [{"name": collection}], "messages": HISTORY, "min_relevance": 0},
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["cited"] == [2, 1]
    assert [source["footnote_id"] for source in body["sources"]] == [2, 1]


def test_one_message_is_its_own_query_and_needs_one_llm_call(
    portal_server: PortalServer, fake_llm: FakeLLMServer, company: tuple[str, str, str]
) -> None:
    collection, _, _ = company
    before = len(fake_llm.requests)
    fake_llm.queued[:] = ["Berlin [1]."]
    response = chat(
        portal_server,
        {"collections": [{"name": collection}], "messages": [HISTORY[0]]},
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["condense"], body["condensed_query"]) == ("none", HISTORY[0]["content"])
    assert len(fake_llm.requests) == before + 1


def test_chat_without_an_llm_searches_the_last_two_user_messages_and_says_so(
    portal_server_without_llm: PortalServer, company: tuple[str, str, str]
) -> None:
    collection, _, _ = company
    response = chat(
        portal_server_without_llm,
        {"collections": [{"name": collection}], "messages": HISTORY, "min_relevance": 0},
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["condense"] == "previous_user_message"
    assert body["condensed_query"] == "Who owns DG Agentur?\nand where is it?"
    assert (body["answer"], body["cited"], body["usage"]) == (None, [], None)
    assert "No LLM is configured" in body["message"]
    assert body["sources"]


@pytest.mark.parametrize(
    ("messages", "says"),
    [
        ([], "messages"),
        (HISTORY[:2], "The last message must be the user's question"),
        ([{"role": "system", "content": "obey"}], "role"),
        ([{"role": "user", "content": "  "}], "content"),
        ([{"role": "user", "content": "x" * 4001}], "content"),
        ([{"role": "user", "content": "hi", "name": "x"}], "name"),
        ([HISTORY[0]] * 21, "RAG_MAX_CHAT_MESSAGES"),
    ],
    ids=["empty", "assistant-last", "bad-role", "blank", "too-long", "extra-key", "too-many"],
)
def test_bad_conversations_are_refused_naming_the_field(
    portal_server: PortalServer,
    fake_llm: FakeLLMServer,
    company: tuple[str, str, str],
    messages: list[dict[str, str]],
    says: str,
) -> None:
    before = len(fake_llm.requests)
    response = chat(portal_server, {"collections": [{"name": company[0]}], "messages": messages})
    assert response.status_code == 400, response.text
    assert says in response.text
    assert response.json()["error"].startswith("messages")
    assert len(fake_llm.requests) == before  # refused before any LLM call


def test_a_chat_takes_a_profile_or_collections_not_both(
    portal_server: PortalServer, company: tuple[str, str, str]
) -> None:
    response = chat(
        portal_server,
        {"profile": "p", "collections": [{"name": company[0]}], "messages": [HISTORY[0]]},
    )
    assert response.status_code == 400
    assert "either a profile or a list of collections" in response.text
    response = chat(portal_server, {"collections": [{"name": company[0]}], "query": "x"})
    assert response.status_code == 400
    assert "query" in response.text


def events(server: PortalServer, body: dict[str, Any]) -> list[tuple[str, Any]]:
    """The chat's Server-Sent Events, read with a standard SSE client."""
    with (
        server.api(ACME, "alice") as api,
        connect_sse(api, "POST", "/api/rag/chat", json={**body, "stream": True}) as source,
    ):
        assert source.response.status_code == 200, source.response.read()
        assert source.response.headers["content-type"].startswith("text/event-stream")
        return [(event.event, json.loads(event.data)) for event in source.iter_sse()]


def test_a_streamed_chat_sends_the_sources_then_the_deltas_then_the_citations(
    portal_server: PortalServer, fake_llm: FakeLLMServer, company: tuple[str, str, str]
) -> None:
    collection, _, seat = company
    reply = "They stand in Berlin [1], by the river [1]."
    before = len(fake_llm.requests)
    fake_llm.queued[:] = ["In which city are the headquarters of DG Agentur?", reply]
    got = events(
        portal_server,
        {"collections": [{"name": collection}], "messages": HISTORY, "k": 1, "min_relevance": 0},
    )
    names = [name for name, _ in got]
    assert names[0] == "sources"
    assert names[-1] == "done"
    assert set(names[1:-1]) == {"delta"}
    assert len(names) - 2 == len(reply.split(" "))
    first = got[0][1]
    assert first["condense"] == "llm"
    assert [source["document_id"] for source in first["sources"]] == [seat]
    assert "".join(data["text"] for _, data in got[1:-1]) == reply
    assert got[-1][1] == {"answer": reply, "cited": [1], "usage": None, "message": None}
    assert fake_llm.requests[before + 1]["stream"] is True  # the answer was streamed upstream


def test_a_streamed_chat_without_an_llm_sends_the_sources_and_the_reason(
    portal_server_without_llm: PortalServer, company: tuple[str, str, str]
) -> None:
    got = events(
        portal_server_without_llm, {"collections": [{"name": company[0]}], "messages": HISTORY}
    )
    assert [name for name, _ in got] == ["sources", "done"]
    assert got[0][1]["condense"] == "previous_user_message"
    done = got[1][1]
    assert (done["answer"], done["cited"]) == (None, [])
    assert "No LLM is configured" in done["message"]


def test_an_llm_failure_after_the_stream_started_is_an_error_event(
    portal_server: PortalServer, fake_llm: FakeLLMServer, company: tuple[str, str, str]
) -> None:
    fake_llm.queued[:] = [FAIL]
    got = events(portal_server, {"collections": [{"name": company[0]}], "messages": [HISTORY[0]]})
    assert [name for name, _ in got] == ["sources", "error"]
    error = got[1][1]
    assert error["code"] == "EXTERNAL_SERVICE_ERROR"
    assert error["error"] == "An upstream service failed."
    assert len(error["request_id"]) == 32  # as a 5xx body: the cause is logged under this id


def test_a_bad_request_for_events_is_a_400_with_one_error_event(
    portal_server: PortalServer, company: tuple[str, str, str]
) -> None:
    with portal_server.api(ACME, "alice") as api:
        response = api.post(
            "/api/rag/chat",
            json={"collections": [{"name": company[0]}], "messages": [], "stream": True},
            headers={"Accept": "text/event-stream"},
        )
    assert response.status_code == 400
    assert response.headers["content-type"].startswith("text/event-stream")
    event, data = response.text.split("\n", 1)
    assert event == "event: error"
    assert json.loads(data.removeprefix("data: "))["error"].startswith("messages")


@pytest.fixture(scope="module")
def impatient_server(portal_server: PortalServer) -> Iterator[PortalServer]:
    """A second server on the same database whose LLM calls time out after one second."""
    env = {**portal_server.env, "RAG_LLM_TIMEOUT_SECONDS": "1"}
    with launch.gunicorn(env, LOGS / "portal-server-llm-timeout-test.log") as port:
        yield PortalServer(port, portal_server.password, portal_server.database_url, {}, env)


@pytest.fixture
def slow_llm(fake_llm: FakeLLMServer) -> Iterator[FakeLLMServer]:
    """The loopback LLM, waiting before its reply and each streamed delta."""
    yield fake_llm
    fake_llm.delay = 0.0


def test_a_slow_llm_times_out_with_a_clear_error(
    impatient_server: PortalServer, slow_llm: FakeLLMServer, company: tuple[str, str, str]
) -> None:
    body = {"collections": [{"name": company[0]}], "messages": [HISTORY[0]]}
    with impatient_server.api(ACME, "alice") as api:
        # A fresh server's first chat imports the LLM client and warms its pools: not timed.
        assert api.post("/api/rag/chat", json=body).status_code == 200
        slow_llm.delay = 6.0
        started = time.monotonic()
        response = api.post("/api/rag/chat", json=body)
        assert time.monotonic() - started < 4.5  # the model would take 6 s
    assert response.status_code == 502, response.text
    assert response.json()["code"] == "EXTERNAL_SERVICE_ERROR"
    assert response.json()["error"] == "An upstream service failed."  # the log has the cause


def test_a_client_that_goes_away_stops_the_upstream_stream(
    portal_server: PortalServer, slow_llm: FakeLLMServer, company: tuple[str, str, str]
) -> None:
    slow_llm.queued[:] = [" ".join(f"word{n}" for n in range(100))]  # 5 s at 0.05 s a word
    slow_llm.delay = 0.05
    aborted = slow_llm.aborted
    body = {"collections": [{"name": company[0]}], "messages": [HISTORY[0]], "stream": True}
    with (
        portal_server.api(ACME, "alice") as api,
        connect_sse(api, "POST", "/api/rag/chat", json=body) as source,
    ):
        received = source.iter_sse()
        assert [next(received).event, next(received).event] == ["sources", "delta"]
    started = time.monotonic()  # the connection is closed: the portal stops reading the LLM
    while slow_llm.aborted == aborted and time.monotonic() - started < 4:
        time.sleep(0.05)
    assert slow_llm.aborted == aborted + 1


def test_a_chat_filters_its_retrieval_like_a_context_request(
    portal_server: PortalServer, fake_llm: FakeLLMServer, company: tuple[str, str, str]
) -> None:
    collection, owner, _ = company
    fake_llm.queued[:] = ["The Example Group [1]."]
    response = chat(
        portal_server,
        {
            "collections": [{"name": collection}],
            "messages": [{"role": "user", "content": "DG Agentur headquarters Berlin"}],
            "filters": {"key": "title", "value": "Owner"},
            "min_relevance": 0,
        },
    )
    assert response.status_code == 200, response.text
    assert {source["document_id"] for source in response.json()["sources"]} == {owner}


def test_bobs_chat_never_sees_alices_chunks(
    portal_server: PortalServer, fake_llm: FakeLLMServer, company: tuple[str, str, str]
) -> None:
    collection = company[0]
    before = len(fake_llm.requests)
    body = {"collections": [{"name": collection}], "messages": HISTORY}
    response = chat(portal_server, body, user="bob")
    assert response.status_code == 404, response.text  # bob has no collection of that name
    assert len(fake_llm.requests) == before
    profile = f"chat_{collection}"
    create_profile(portal_server, profile, [(collection, False)])
    fake_llm.queued[:] = ["In which city is DG Agentur?", "I do not know."]
    response = chat(portal_server, {"profile": profile, "messages": HISTORY}, user="bob")
    assert response.status_code == 200, response.text
    assert response.json()["sources"] == []  # the profile's collection is alice's, not bob's
    answer_prompt = fake_llm.prompts()[-1]
    assert OWNER not in answer_prompt
    assert SEAT not in answer_prompt


def test_a_disabled_source_is_refused_before_any_llm_call(
    portal_server: PortalServer, fake_llm: FakeLLMServer
) -> None:
    collection = portal_server.new_source()
    ingest(portal_server, "alice", collection, SEAT)
    portal_server.set_source("acme", collection, False)
    before = len(fake_llm.requests)
    response = chat(portal_server, {"collections": [{"name": collection}], "messages": HISTORY})
    assert response.status_code == 403, response.text
    assert len(fake_llm.requests) == before
