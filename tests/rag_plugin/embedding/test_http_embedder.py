"""E4: the OpenAI-compatible HTTP backend, against httpx.MockTransport and a real local server."""

from __future__ import annotations

import base64
import json
import struct
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest

from rag_plugin.embedding.cache import InMemoryEmbeddingCache
from rag_plugin.embedding.http import HttpEmbedder, parse_embedding_response
from rag_plugin.exceptions import (
    ConfigurationError,
    EmbeddingAuthError,
    EmbeddingError,
    EmbeddingInputError,
    EmbeddingNotFoundError,
    EmbeddingRateLimitedError,
    InvalidInputError,
)

Handler = Callable[[httpx.Request], httpx.Response]


class Recorder:
    """A MockTransport handler that answers one vector per input and keeps every request."""

    def __init__(self, vector_for: Callable[[str], list[float]] | None = None) -> None:
        self.requests: list[httpx.Request] = []
        self.vector_for = vector_for or (lambda text: [float(len(text)), 1.0])

    def bodies(self) -> list[dict[str, Any]]:
        return [json.loads(request.content) for request in self.requests]

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        raw = json.loads(request.content)["input"]
        texts = [raw] if isinstance(raw, str) else raw
        data = [
            {"object": "embedding", "index": i, "embedding": self.vector_for(text)}
            for i, text in enumerate(texts)
        ]
        return httpx.Response(200, json={"object": "list", "data": data, "model": "m"})


def embedder_with(handler: Handler, **kwargs: Any) -> HttpEmbedder:
    return HttpEmbedder(
        "http://embed.test", "text-embed", transport=httpx.MockTransport(handler), **kwargs
    )


def f32_base64(values: list[float]) -> str:
    return base64.b64encode(struct.pack(f"<{len(values)}f", *values)).decode()


def test_single_input_is_sent_as_a_string() -> None:
    recorder = Recorder()

    embedder_with(recorder).embed(["hello"])

    assert recorder.bodies() == [{"model": "text-embed", "input": "hello"}]
    assert str(recorder.requests[0].url) == "http://embed.test/v1/embeddings"
    assert recorder.requests[0].method == "POST"


def test_spec_dedup_example_sends_distinct_texts_as_an_array() -> None:
    recorder = Recorder(lambda text: [3.0, 4.0] if text == "alpha" else [0.0, 2.0])

    vectors = embedder_with(recorder).embed(["alpha", " alpha\n", "beta"])

    assert recorder.bodies() == [{"model": "text-embed", "input": ["alpha", "beta"]}]
    assert vectors == [[0.6, 0.8], [0.6, 0.8], [0.0, 1.0]]


def test_unique_texts_are_batched() -> None:
    recorder = Recorder()

    embedder_with(recorder, batch_size=2).embed(["a", "b", "a", "c"])

    assert [body["input"] for body in recorder.bodies()] == [["a", "b"], "c"]


def test_cached_texts_are_not_requested_again() -> None:
    recorder = Recorder()
    embedder = embedder_with(recorder, cache=InMemoryEmbeddingCache())
    embedder.embed(["a", "b"])

    embedder.embed(["b", "a"])

    assert len(recorder.requests) == 1
    assert embedder.stats.texts_embedded == 2


@pytest.mark.parametrize(
    ("root", "expected"),
    [
        ("http://h:8080", "http://h:8080/v1/embeddings"),
        ("http://h:8080/", "http://h:8080/v1/embeddings"),
        ("https://h/v1", "https://h/v1/embeddings"),
        ("https://h/proxy/v1/", "https://h/proxy/v1/embeddings"),
    ],
)
def test_endpoint_url(root: str, expected: str) -> None:
    assert HttpEmbedder(root, "m").url == expected


def test_data_is_ordered_by_index() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        data = [{"index": 1, "embedding": [0.0, 1.0]}, {"index": 0, "embedding": [1.0, 0.0]}]
        return httpx.Response(200, json={"data": data})

    assert embedder_with(handler).embed(["first", "second"]) == [[1.0, 0.0], [0.0, 1.0]]


def test_base64_embeddings_are_little_endian_float32() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        assert json.loads(request.content)["encoding_format"] == "base64"
        return httpx.Response(200, json={"data": [{"index": 0, "embedding": f32_base64([3, 4])}]})

    assert embedder_with(handler, encoding_format="base64").embed(["x"]) == [[0.6, 0.8]]


def test_api_key_argument_is_sent_as_bearer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAG_EMBEDDING_API_KEY", "from-env")
    recorder = Recorder()

    embedder_with(recorder, api_key="sk-test").embed(["x"])

    assert recorder.requests[0].headers["Authorization"] == "Bearer sk-test"


def test_api_key_falls_back_to_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAG_EMBEDDING_API_KEY", "from-env")
    recorder = Recorder()

    embedder_with(recorder).embed(["x"])

    assert recorder.requests[0].headers["Authorization"] == "Bearer from-env"


def test_no_key_sends_no_authorization(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RAG_EMBEDDING_API_KEY", raising=False)
    recorder = Recorder()

    embedder_with(recorder).embed(["x"])

    assert "Authorization" not in recorder.requests[0].headers


@pytest.mark.parametrize(
    ("status", "error", "fragment"),
    [
        (400, EmbeddingInputError, "answered HTTP 400: the input was refused (too long)"),
        (401, EmbeddingAuthError, "answered HTTP 401: the API key was rejected (too long)"),
        (403, EmbeddingAuthError, "answered HTTP 403: the API key was rejected"),
        (404, EmbeddingNotFoundError, "answered HTTP 404: service or model not found"),
        (413, EmbeddingInputError, "answered HTTP 413: the input was refused"),
        (422, EmbeddingInputError, "answered HTTP 422: the input was refused"),
        (429, EmbeddingRateLimitedError, "answered HTTP 429: rate limited (too long)"),
        (500, EmbeddingError, "answered HTTP 500 (too long)"),
        (502, EmbeddingError, "answered HTTP 502"),
        (503, EmbeddingError, "answered HTTP 503"),
        (302, EmbeddingError, "answered HTTP 302"),
    ],
)
def test_status_mapping(status: int, error: type[EmbeddingError], fragment: str) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(status, json={"error": {"message": "too long"}})

    with pytest.raises(error) as caught:
        embedder_with(handler, api_key="sk-secret").embed(["x"])

    assert type(caught.value) is error
    assert fragment in str(caught.value)
    assert "sk-secret" not in str(caught.value)


def test_input_error_is_also_an_invalid_input_error() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(400, text="bad input")

    with pytest.raises(InvalidInputError, match=r"\(bad input\)"):
        embedder_with(handler).embed(["x"])


def test_rate_limit_reports_retry_after() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(429, headers={"Retry-After": "7"}, text="")

    with pytest.raises(
        EmbeddingRateLimitedError, match=r"rate limited \(no detail\); retry after 7 s"
    ):
        embedder_with(handler).embed(["x"])


def test_timeout_becomes_embedding_error() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("slow", request=request)

    with pytest.raises(EmbeddingError, match=r"timed out after 2.5 s"):
        embedder_with(handler, timeout=2.5).embed(["x"])


def test_connection_error_becomes_embedding_error() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    with pytest.raises(EmbeddingError, match=r"request to http://embed.test/v1/embeddings failed"):
        embedder_with(handler).embed(["x"])


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"not json", "Invalid embedding response JSON: Expecting value"),
        (b"[]", "Embedding response contained no data"),
        (b'{"data": []}', "Embedding response contained no data"),
        (b'{"object": "list"}', "Embedding response contained no data"),
        (b'{"data": [3]}', r"Invalid embedding response JSON: data\[0\] is no object"),
        (
            b'{"data": [{"index": "0", "embedding": [1.0]}]}',
            r"data\[0\].index is '0'",
        ),
        (
            b'{"data": [{"index": 0, "embedding": "AAAAAAA="}]}',
            "Base64 embedding byte length 5 is not a multiple of 4",
        ),
        (
            b'{"data": [{"index": 0, "embedding": "***"}]}',
            r"data\[0\].embedding is not base64",
        ),
        (
            b'{"data": [{"index": 0, "embedding": [1.0, "x"]}]}',
            "neither a list of numbers nor a base64 string",
        ),
        (b'{"data": [{"index": 0}]}', "neither a list of numbers nor a base64 string"),
    ],
)
def test_parse_errors(content: bytes, message: str) -> None:
    with pytest.raises(EmbeddingError, match=message):
        parse_embedding_response(content)


def test_parse_mixes_lists_and_base64() -> None:
    content = json.dumps(
        {
            "data": [
                {"index": 1, "embedding": f32_base64([0.5, -2.0])},
                {"index": 0, "embedding": [1, 2]},
            ]
        }
    )

    assert parse_embedding_response(content) == [[1.0, 2.0], [0.5, -2.0]]


def test_missing_index_means_position() -> None:
    content = json.dumps({"data": [{"embedding": [1.0]}, {"embedding": [2.0]}]})

    assert parse_embedding_response(content) == [[1.0], [2.0]]


def test_wrong_vector_count_is_an_embedding_error() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"data": [{"index": 0, "embedding": [1.0]}]})

    with pytest.raises(EmbeddingError, match="returned 1 vectors for 2 texts"):
        embedder_with(handler).embed(["a", "b"])


def test_configured_dimensions_are_enforced() -> None:
    recorder = Recorder(lambda _text: [1.0, 0.0, 0.0])

    with pytest.raises(EmbeddingError, match="expected 2 dimensions, got 3"):
        embedder_with(recorder, dimensions=2).embed(["x"])


def test_dimensions_are_asked_once_when_not_configured() -> None:
    recorder = Recorder(lambda _text: [1.0, 0.0, 0.0])
    embedder = embedder_with(recorder)

    assert embedder.dimensions == 3
    assert embedder.dimensions == 3
    assert len(recorder.requests) == 1


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"base_url": "embed.test"}, "must start with http:// or https://"),
        ({"model": " "}, "model name must not be empty"),
        ({"dimensions": 0}, "dimensions must be a positive integer"),
        ({"timeout": 0}, "timeout must be positive"),
    ],
)
def test_invalid_configuration(kwargs: dict[str, Any], message: str) -> None:
    arguments: dict[str, Any] = {"base_url": "http://h", "model": "m", **kwargs}
    with pytest.raises(ConfigurationError, match=message):
        HttpEmbedder(**arguments)


class _EmbeddingsHandler(BaseHTTPRequestHandler):
    """A tiny OpenAI-style server: one base64 vector per input, derived from its length."""

    seen: list[tuple[str, str, Any]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.seen.append((self.path, self.headers.get("Authorization", ""), body["input"]))
        texts = [body["input"]] if isinstance(body["input"], str) else body["input"]
        data = [
            {"index": i, "embedding": f32_base64([float(len(t)), 0.0])}
            for i, t in reversed(list(enumerate(texts)))
        ]
        payload = json.dumps({"data": data}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output clean


@pytest.fixture
def local_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _EmbeddingsHandler)
    _EmbeddingsHandler.seen = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_real_http_round_trip_on_loopback(local_server: str) -> None:
    with HttpEmbedder(local_server, "m", api_key="k", batch_size=2, timeout=5) as embedder:
        vectors = embedder.embed(["aa", "b", "aa", "ccc"])

    assert vectors == [[1.0, 0.0], [1.0, 0.0], [1.0, 0.0], [1.0, 0.0]]
    assert _EmbeddingsHandler.seen == [
        ("/v1/embeddings", "Bearer k", ["aa", "b"]),
        ("/v1/embeddings", "Bearer k", "ccc"),
    ]


def test_real_connection_refused_is_an_embedding_error() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _EmbeddingsHandler)
    port = server.server_address[1]
    server.server_close()  # nothing listens on the port now

    with pytest.raises(EmbeddingError, match="failed"):
        HttpEmbedder(f"http://127.0.0.1:{port}", "m", timeout=5).embed(["x"])
