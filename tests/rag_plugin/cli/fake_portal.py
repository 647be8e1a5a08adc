"""A tiny HTTP server on 127.0.0.1 that speaks the portal's REST contract, for ragctl tests.

Ingest requests with ``"async": true`` (or over ``sync_max_bytes`` of content) become jobs in
``queue`` (``fake_jobs.py``), which move one step each time they are read; ``has_jobs = False``
makes it an older portal that ingests at once and has no job routes. File uploads are
``fake_files.py``'s.
"""

from __future__ import annotations

import json
import re
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from tests.rag_plugin.cli import fake_files
from tests.rag_plugin.cli.fake_jobs import FakeJobQueue, input_bytes

PASSWORD = "correct horse"
USERS = {"alice": "alice@acme.test", "bob": "bob@acme.test"}
PARAGRAPH = re.compile(r"\S.*?(?=\n[ \t]*\n|\s*\Z)", flags=re.DOTALL)
JOB_ROUTE = re.compile(r"/api/rag/jobs/(?P<id>[^/]+)(?:/(?P<action>cancel|retry))?")


@dataclass(frozen=True)
class Recorded:
    """One request as the server saw it."""

    method: str
    path: str
    host: str
    authorization: str | None
    body: Any
    query: dict[str, str] = field(default_factory=dict)


@dataclass
class StoredDocument:
    """A document as the fake stores it; its chunks are blank-line-separated paragraphs."""

    document_id: str
    title: str
    source: str
    tags: list[str]
    content: str
    chunking_strategy: str | None
    chunks: list[tuple[int, int]]


@dataclass
class FakePortal:
    """State behind the server: stored documents and every request received."""

    port: int = 0
    requests: list[Recorded] = field(default_factory=list)
    # (collection, source) -> document; re-ingesting a source replaces it, as the portal does.
    documents: dict[tuple[str, str], StoredDocument] = field(default_factory=dict)
    # Sources the server refuses with this status, to exercise per-document failures.
    refuse: dict[str, int] = field(default_factory=dict)
    # A status for /api/rag/ingest/batch, as from a portal that predates the route (404, 405).
    batch_missing: int | None = None
    ingest_count: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    # Whether this portal has ingestion jobs (False: one that predates them).
    has_jobs: bool = True
    # Ingest requests with more UTF-8 bytes of content than this are jobs even without async.
    sync_max_bytes: int = 256 * 1024
    # Uploads whose Content-Length is over this are refused (413), as RAG_MAX_UPLOAD_BYTES.
    max_upload_bytes: int = 50 * 1024 * 1024
    # Sources of uploaded files whose results list these pages as needing OCR.
    needs_ocr: dict[str, list[int]] = field(default_factory=dict)
    queue: FakeJobQueue = field(init=False)

    def __post_init__(self) -> None:
        self.queue = FakeJobQueue(self._written)

    scheme: str = "http"

    def url(self, host: str = "127.0.0.1") -> str:
        return f"{self.scheme}://{host}:{self.port}"

    def routes(self) -> list[str]:
        return [f"{request.method} {request.path}" for request in self.requests]

    def sources(self, collection: str) -> list[str]:
        return sorted(source for name, source in self.documents if name == collection)

    def ingests(self) -> list[tuple[str, list[str]]]:
        """Each ingest request (and upload): its path and the sources it carried, in order."""
        sent: list[tuple[str, list[str]]] = []
        for request in self.requests:
            if request.path == "/api/rag/ingest":
                sent.append((request.path, [request.body.get("source")]))
            elif request.path == "/api/rag/files":
                sent.append((request.path, request.body.fields.get("source", [])))
            elif request.path == "/api/rag/ingest/batch":
                sources = [document.get("source") for document in request.body["documents"]]
                sent.append((request.path, sources))
        return sent

    def polls(self) -> list[str]:
        """The job ids of each ``GET /api/rag/jobs/<id>``, in order."""
        return [
            request.path.rsplit("/", 1)[1]
            for request in self.requests
            if request.method == "GET" and JOB_ROUTE.fullmatch(request.path)
        ]

    def handle(
        self,
        method: str,
        path: str,
        host: str,
        authorization: str | None,
        body: Any,
        query: dict[str, str] | None = None,
    ) -> tuple[int, Any]:
        with self.lock:
            self.requests.append(Recorded(method, path, host, authorization, body, query or {}))
            if (method, path) == ("POST", "/api/auth/login"):
                return self._login(body)
            user = (authorization or "").removeprefix("Bearer ")
            if authorization is None or user not in USERS:
                return 401, {"error": "Unauthorized", "code": "AUTHENTICATION_FAILED"}
            if (method, path) == ("POST", "/api/rag/ingest"):
                return self._ingest(body, user)
            if (method, path) == ("POST", "/api/rag/ingest/batch") and self.batch_missing is None:
                return self._ingest_batch(body, user)
            if (method, path) == ("POST", "/api/rag/files"):
                return fake_files.upload(self, body, user)
            if self.has_jobs and (method, path) == ("GET", "/api/rag/jobs"):
                return self.queue.listing(user, query or {})
            route = JOB_ROUTE.fullmatch(path)
            if self.has_jobs and route is not None:
                return self.queue.route(method, user, route["id"], route["action"])
            if path == "/api/rag/ingest/batch" and self.batch_missing == 405:
                return 405, {"error": f'Method "{method}" not allowed.', "code": "ERROR"}
            if (method, path) == ("POST", "/api/rag/search"):
                return self._search(body)
            if (method, path) == ("GET", "/api/rag/collections"):
                return self._collections()
            return 404, {"error": f"Not found: {path}", "code": "NOT_FOUND"}

    def _login(self, body: Any) -> tuple[int, Any]:
        by_email = {email: name for name, email in USERS.items()}
        user = body.get("username") or by_email.get(body.get("email", ""))
        if user not in USERS or body.get("password") != PASSWORD:
            return 401, {"error": "Invalid credentials", "code": "AUTHENTICATION_FAILED"}
        # The token is the user name: enough for a fake, and readable in assertions.
        return 200, {"access_token": user, "token_type": "Bearer", "expires_in": 3600}

    def _ingest(self, body: Any, user: str) -> tuple[int, Any]:
        collection, content = body.get("collection", ""), body.get("content", "")
        if not collection or not content:
            return 400, {"error": "Invalid input: Content required", "code": "INVALID_INPUT"}
        source = body.get("source") or ""
        if source in self.refuse:
            status = self.refuse[source]
            return status, {"error": f"refused {source}", "code": "INTERNAL_ERROR"}
        if self._as_job(body, [body]):
            keys = ("content", "title", "source", "tags", "metadata")
            fields = {key: body[key] for key in keys if key in body}
            return self.queue.submit(user, body, [fields], "document")
        stored = self._store(collection, body, body.get("chunking_strategy"))
        return 200, {**self._ingested(stored), "collection": collection}

    def _ingest_batch(self, body: Any, user: str) -> tuple[int, Any]:
        """All the documents or none, like the portal: a refused one is named by position."""
        collection, documents = body.get("collection", ""), body.get("documents")
        if not collection or not isinstance(documents, list) or not 1 <= len(documents) <= 100:
            return 400, {"error": "Invalid input: documents", "code": "INVALID_INPUT"}
        for position, document in enumerate(documents):
            source = document.get("source") or ""
            if not document.get("content"):
                error = f"documents[{position}].content: This field is required."
                return 400, {"error": error, "code": "INVALID_INPUT"}
            if source in self.refuse:
                error = f"documents[{position}]: refused {source}"
                return self.refuse[source], {"error": error, "code": "INVALID_INPUT"}
        if self._as_job(body, documents):
            return self.queue.submit(user, body, documents, "batch")
        strategy = body.get("chunking_strategy")
        results = [
            {**self._ingested(self._store(collection, document, strategy)), "unchanged": False}
            for document in documents
        ]
        return 200, {
            "collection": collection,
            "chunks_created": sum(result["chunks_created"] for result in results),
            "documents": results,
        }

    def _as_job(self, body: Any, documents: list[dict[str, Any]]) -> bool:
        if not self.has_jobs:
            return False  # an older portal ignores "async"
        return body.get("async") is True or input_bytes(documents) > self.sync_max_bytes

    def _written(self, collection: str, fields: Any, strategy: str | None) -> dict[str, Any]:
        """Store one document of a job that succeeded; its entry in the job's results."""
        stored = self._store(collection, fields, strategy)
        return {
            "document_id": stored.document_id,
            "source": stored.source,
            "chunks_created": len(stored.chunks),
            "unchanged": False,
            **fields.get("file", {}),  # a file's media type, pages and pages needing OCR
        }

    def _store(self, collection: str, fields: Any, strategy: str | None) -> StoredDocument:
        """Replace what the collection holds under the document's source."""
        self.ingest_count += 1
        content, source = fields["content"], fields.get("source") or ""
        stored = StoredDocument(
            document_id=f"doc{self.ingest_count}",
            title=fields.get("title") or "",
            source=source,
            tags=list(fields.get("tags") or []),
            content=content,
            chunking_strategy=strategy,
            chunks=[(match.start(), match.end()) for match in PARAGRAPH.finditer(content)],
        )
        self.documents[(collection, source)] = stored
        return stored

    @staticmethod
    def _ingested(stored: StoredDocument) -> dict[str, Any]:
        return {
            "chunks_created": len(stored.chunks),
            "document_ids": [
                f"{stored.document_id}_{index}" for index in range(len(stored.chunks))
            ],
            "document_id": stored.document_id,
            "source": stored.source,
        }

    def _search(self, body: Any) -> tuple[int, Any]:
        collection = body.get("collection", "")
        if not any(name == collection for name, _ in self.documents):
            return 404, {"error": f"Collection '{collection}' not found", "code": "NOT_FOUND"}
        terms = body.get("query", "").lower().split()
        hits = []
        for (name, _), document in sorted(self.documents.items()):
            if name != collection:
                continue
            for index, (start, end) in enumerate(document.chunks):
                text = document.content[start:end]
                matched = sum(1 for term in terms if term in text.lower())
                if matched:
                    hits.append((matched / len(terms), document, index, start, end, text))
        hits.sort(key=lambda hit: -hit[0])
        results = [
            {
                "id": f"{document.document_id}_{index}",
                "content": text,
                "score": score,
                "metadata": {
                    "title": document.title,
                    "source": document.source,
                    "created_at": "2025-01-01T00:00:00Z",
                    "tags": document.tags,
                    "document_id": document.document_id,
                    "chunk_index": index,
                    "start_offset": start,
                    "end_offset": end,
                },
            }
            for score, document, index, start, end, text in hits[: body.get("limit", 10)]
        ]
        return 200, {
            "results": results,
            "total": len(results),
            "strategy": body.get("strategy") or "semantic",
            "reranked": False,
            "duration_ms": 7,
        }

    def _collections(self) -> tuple[int, Any]:
        names = sorted({name for name, _ in self.documents})
        return 200, [
            {
                "name": name,
                "document_count": len(self.sources(name)),
                "chunk_count": sum(
                    len(doc.chunks) for (owner, _), doc in self.documents.items() if owner == name
                ),
                "dimensions": 384,
            }
            for name in names
        ]


def _handler(portal: FakePortal) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self._answer()

        def do_POST(self) -> None:
            self._answer()

        def _answer(self) -> None:
            declared = self.headers.get("Content-Length")
            length = int(declared or 0)
            raw = self.rfile.read(length) if length else b""
            content_type = self.headers.get("Content-Type", "")
            body: Any
            if content_type.startswith("multipart/form-data"):
                body = fake_files.parse_form(content_type, raw, length if declared else None)
            else:
                body = json.loads(raw) if raw else {}
            url = urlsplit(self.path)
            status, payload = portal.handle(
                self.command,
                url.path,
                self.headers.get("Host", ""),
                self.headers.get("Authorization"),
                body,
                dict(parse_qsl(url.query)),
            )
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            """Keep test output quiet; the portal records requests instead."""

    return Handler


@contextmanager
def running_fake_portal(tls: ssl.SSLContext | None = None) -> Iterator[FakePortal]:
    """Serve a fresh :class:`FakePortal` on 127.0.0.1 (a free port) for the block's duration."""
    portal = FakePortal()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(portal))
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    portal.port = server.server_address[1]
    portal.scheme = "https" if tls is not None else "http"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield portal
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
