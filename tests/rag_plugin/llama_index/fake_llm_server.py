"""A tiny OpenAI-compatible chat completions server on 127.0.0.1, for answer-path tests.

It answers ``POST /v1/chat/completions`` with canned replies (one per request, the last one
repeated; a test can queue replies for its own next requests) and records every request
body, so tests can assert what the LLM was sent.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

FAIL = "<fail>"
"""A reply that makes the server answer that request with HTTP 500."""


@dataclass
class FakeLLMServer:
    """The server's state: canned replies and the request bodies received."""

    replies: Sequence[str]
    port: int = 0
    queued: list[str] = field(default_factory=list)
    """Replies for the next requests, first in first out, before ``replies`` apply again."""
    delay: float = 0.0
    """Seconds to wait before a reply and before each streamed delta (a slow model)."""
    aborted: int = 0
    """Streams the client closed before their end (a write to it failed)."""
    requests: list[dict[str, Any]] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def api_base(self) -> str:
        """The base URL an OpenAI client is given (with the ``/v1`` version path)."""
        return f"http://127.0.0.1:{self.port}/v1"

    def prompts(self) -> list[str]:
        """The concatenated message contents of each request, in order."""
        return [
            "\n".join(str(message["content"]) for message in body["messages"])
            for body in self.requests
        ]

    def next_reply(self) -> str:
        with self.lock:
            if self.queued:
                return self.queued.pop(0)
            index = min(len(self.requests) - 1, len(self.replies) - 1)
            return self.replies[index]


def _handler(state: FakeLLMServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
            return

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length) or b"{}")
            with state.lock:
                state.paths.append(self.path)
                state.requests.append(body)
            if self.path != "/v1/chat/completions":
                self._send(404, {"error": {"message": f"no route {self.path}"}})
                return
            reply = state.next_reply()
            if reply == FAIL:
                self._send(500, {"error": {"message": "the model is overloaded"}})
                return
            if body.get("stream"):
                try:
                    self._stream(reply, body.get("model", "fake"))
                except (BrokenPipeError, ConnectionResetError):
                    with state.lock:
                        state.aborted += 1
                    self.close_connection = True
                return
            time.sleep(state.delay)
            self._send(
                200,
                {
                    "id": f"chatcmpl-{len(state.requests)}",
                    "object": "chat.completion",
                    "created": 0,
                    "model": body.get("model", "fake"),
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": reply},
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                },
            )

        def _stream(self, reply: str, model: str) -> None:
            """The reply as OpenAI's Server-Sent Events: a delta per word, then [DONE]."""
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            words = reply.split(" ")
            deltas = [word if i == 0 else f" {word}" for i, word in enumerate(words)]
            for delta in deltas:
                time.sleep(state.delay)
                chunk = {
                    "id": f"chatcmpl-{len(state.requests)}",
                    "object": "chat.completion.chunk",
                    "created": 0,
                    "model": model,
                    "choices": [{"index": 0, "delta": {"content": delta}, "finish_reason": None}],
                }
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.flush()
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
            self.close_connection = True

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


@contextmanager
def fake_llm_server(*replies: str) -> Iterator[FakeLLMServer]:
    """Run the server on a free loopback port for the ``with`` block."""
    state = FakeLLMServer(replies=replies or ("",))
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    state.port = server.server_address[1]
    # a short poll interval keeps shutdown (one poll) from adding half a second per test
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
