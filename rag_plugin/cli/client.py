"""A small client for the portal's REST API that reaches ``*.localhost`` tenants on loopback."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Protocol, TypeGuard
from urllib.parse import quote

import httpx
from httpx_sse import connect_sse

from rag_plugin.cli.errors import ApiError as ApiError  # raised by every request
from rag_plugin.cli.job import Job, JobPage, Submitted
from rag_plugin.cli.options import DEFAULT_HOST
from rag_plugin.cli.transport import error_details, http_client, reaching
from rag_plugin.exceptions import InvalidInputError


@dataclass(frozen=True)
class IngestResult:
    """What the server reports after ingesting one document."""

    chunks: int
    document_id: str | None


class OutgoingDocument(Protocol):
    """The text and description of one document to send (ragctl's discovered files fit)."""

    @property
    def content(self) -> str: ...

    @property
    def title(self) -> str: ...

    @property
    def source(self) -> str: ...


def document_fields(
    document: OutgoingDocument, tags: Sequence[str], metadata: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """One document as both ingest routes take it: content, title, source, tags and, when
    there is any, metadata."""
    fields: dict[str, Any] = {
        "content": document.content,
        "title": document.title,
        "source": document.source,
        "tags": list(tags),
    }
    if metadata:
        fields["metadata"] = dict(metadata)
    return fields


def encoded_size(value: Any) -> int:
    """Bytes of ``value`` as JSON, encoded the way httpx encodes a request body."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return len(text.encode("utf-8"))


def normalize_host(host: str) -> str:
    """The base URL without trailing slashes; rejects anything but http(s) URLs with a host."""
    cleaned = host.strip().rstrip("/")
    try:
        url = httpx.URL(cleaned)
    except httpx.InvalidURL:
        url = None
    if url is None or url.scheme not in {"http", "https"} or not url.host:
        raise InvalidInputError(
            f"--host must be an http:// or https:// URL such as {DEFAULT_HOST}, got {host!r}"
        )
    return cleaned


def api_url(host: str, path: str) -> str:
    """Join the base URL and an API path with exactly one slash between them."""
    return f"{host.rstrip('/')}/{path.lstrip('/')}"


class RagClient:
    """Login, ingest, search, jobs and collections over the portal's REST API."""

    def __init__(
        self, host: str, *, timeout: float = 300.0, transport: httpx.BaseTransport | None = None
    ) -> None:
        self.host = normalize_host(host)
        self._http = http_client(timeout, transport)

    def __enter__(self) -> RagClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def use_token(self, token: str) -> None:
        """Send ``token`` as the bearer token on every later request."""
        self._http.headers["Authorization"] = f"Bearer {token}"

    def login(self, user: str, password: str) -> str:
        """Exchange a user name (or e-mail address, if it has an @) and password for a token."""
        field = "email" if "@" in user else "username"
        body = self._request("POST", "/api/auth/login", {field: user, "password": password})
        token = _first_string(body, ("access_token",), ("token",), ("data", "token"))
        if token is None:
            raise ApiError("login response did not include an access token")
        return token

    def ingest(
        self,
        *,
        collection: str,
        content: str,
        title: str,
        source: str,
        tags: Sequence[str],
        chunking_strategy: str | None,
        metadata: Mapping[str, Any] | None = None,
        job: bool = False,
    ) -> IngestResult | Submitted:
        """Ingest one document; the server replaces an earlier document with the same source.

        ``job``: ask for a background job. The server answers with the job (202) then, and
        also for content over its size threshold; an older portal ingests at once (200).
        """
        payload: dict[str, Any] = {
            "collection": collection,
            "content": content,
            "title": title,
            "source": source,
            "tags": list(tags),
        }
        if metadata:
            payload["metadata"] = dict(metadata)
        if chunking_strategy is not None:
            payload["chunking_strategy"] = chunking_strategy
        if job:
            payload["async"] = True
        status, body = self._send("POST", "/api/rag/ingest", payload)
        if status == 202:
            return Submitted.from_json(body)
        chunks = body.get("chunks_created") if isinstance(body, dict) else None
        if not _is_integer(chunks):
            raise ApiError(f"ingest response has no integer chunks_created: {body!r:.200}")
        document_id = body.get("document_id")
        return IngestResult(chunks, document_id if isinstance(document_id, str) else None)

    def ingest_batch(
        self,
        *,
        collection: str,
        documents: Sequence[OutgoingDocument],
        tags: Sequence[str],
        chunking_strategy: str | None,
        metadata: Mapping[str, Any] | None = None,
        job: bool = False,
    ) -> list[IngestResult] | Submitted:
        """Ingest several documents in one request: the server writes all of them or none
        (``job`` as for :meth:`ingest`; a job, too, writes all or none)."""
        payload: dict[str, Any] = {
            "collection": collection,
            "documents": [document_fields(document, tags, metadata) for document in documents],
        }
        if chunking_strategy is not None:
            payload["chunking_strategy"] = chunking_strategy
        if job:
            payload["async"] = True
        status, body = self._send("POST", "/api/rag/ingest/batch", payload)
        if status == 202:
            return Submitted.from_json(body)
        entries = body.get("documents") if isinstance(body, dict) else None
        if not isinstance(entries, list) or len(entries) != len(documents):
            raise ApiError(
                f"batch ingest response has no list of {len(documents)} documents: {body!r:.200}"
            )
        results: list[IngestResult] = []
        for position, entry in enumerate(entries):
            chunks = entry.get("chunks_created") if isinstance(entry, dict) else None
            document_id = entry.get("document_id") if isinstance(entry, dict) else None
            if not _is_integer(chunks) or not isinstance(document_id, str):
                raise ApiError(
                    f"batch ingest response documents[{position}] has no integer "
                    f"chunks_created and string document_id: {entry!r:.200}"
                )
            results.append(IngestResult(chunks, document_id))
        return results

    def upload_file(
        self,
        *,
        collection: str,
        filename: str,
        data: bytes,
        source: str,
        tags: Sequence[str],
        chunking_strategy: str | None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Submitted:
        """Upload one file to ingest (``POST /api/rag/files``, multipart): the server tells
        its type from the content, keeps it, and answers with its job (202). The server
        replaces an earlier document with the same source, as for text."""
        form: dict[str, Any] = {"collection": collection, "source": source, "tags": list(tags)}
        if chunking_strategy is not None:
            form["chunking_strategy"] = chunking_strategy
        if metadata:
            # A form field has no JSON type: the object goes as text.
            form["metadata"] = json.dumps(dict(metadata), ensure_ascii=False, allow_nan=False)
        # Bytes, whose length httpx knows: it sends a Content-Length, which the portal
        # requires so that it can refuse an upload over its limit before reading it.
        _, body = self._send(
            "POST", "/api/rag/files", None, form=form, files={"file": (filename, data)}
        )
        return Submitted.from_upload_json(body)

    def search(
        self,
        *,
        collection: str,
        query: str,
        limit: int,
        strategy: str | None,
        filters: Mapping[str, Any] | None = None,
        rerank: str | None = None,
    ) -> dict[str, Any]:
        """The server's search response, unchanged."""
        payload: dict[str, Any] = {"collection": collection, "query": query, "limit": limit}
        if strategy is not None:
            payload["strategy"] = strategy
        if filters:
            payload["filters"] = dict(filters)
        if rerank is not None:
            payload["rerank"] = rerank
        body = self._request("POST", "/api/rag/search", payload)
        if not isinstance(body, dict) or not isinstance(body.get("results"), list):
            raise ApiError(f"search response has no results list: {body!r:.200}")
        return body

    def collections(self) -> list[dict[str, Any]]:
        """The caller's collections as the server lists them."""
        body = self._request("GET", "/api/rag/collections", None)
        if not isinstance(body, list) or not all(isinstance(item, dict) for item in body):
            raise ApiError(f"collections response is not a list of objects: {body!r:.200}")
        return body

    def jobs(
        self,
        *,
        state: str | None = None,
        collection: str | None = None,
        shared: bool | None = None,
        limit: int | None = None,
    ) -> JobPage:
        """A page of the caller's ingestion jobs, newest first (``GET /api/rag/jobs``)."""
        params: dict[str, str] = {}
        if state is not None:
            params["state"] = state
        if collection is not None:
            params["collection"] = collection
        if shared is not None:
            params["shared"] = "true" if shared else "false"
        if limit is not None:
            params["limit"] = str(limit)
        return JobPage.from_json(self._request("GET", "/api/rag/jobs", None, params=params))

    def job(self, job_id: str) -> Job:
        """One job as it stands now; someone else's or an unknown id is a 404."""
        return Job.from_json(self._request("GET", _job_path(job_id), None))

    def cancel_job(self, job_id: str) -> Job:
        """Cancel a queued job, or ask a running one to stop at its next stage (409 if ended)."""
        return Job.from_json(self._request("POST", f"{_job_path(job_id)}/cancel", None))

    def retry_job(self, job_id: str) -> Job:
        """Queue a failed or cancelled job again (409 for any other state)."""
        return Job.from_json(self._request("POST", f"{_job_path(job_id)}/retry", None))

    def chat(self, payload: Mapping[str, Any]) -> dict[str, Any]:
        """The server's answer to one chat turn (``POST /api/rag/chat``), unchanged."""
        body = self._request("POST", "/api/rag/chat", dict(payload))
        if not isinstance(body, dict) or "answer" not in body:
            raise ApiError(f"chat response has no answer: {body!r:.200}")
        return body

    def chat_events(self, payload: Mapping[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
        """One chat turn answered as Server-Sent Events: (event, data) as they arrive."""
        url = api_url(self.host, "/api/rag/chat")
        with (
            reaching(url),
            connect_sse(self._http, "POST", url, json={**payload, "stream": True}) as source,
        ):
            response = source.response
            streamed = response.headers.get("content-type", "").startswith("text/event-stream")
            if not response.is_success and not streamed:
                response.read()
                message, code = error_details(response)
                raise ApiError(message, status=response.status_code, code=code)
            for event in source.iter_sse():
                data = json.loads(event.data)
                if event.event == "error" or not response.is_success:
                    raise ApiError(
                        str(data.get("error", data)),
                        status=response.status_code,
                        code=data.get("code"),
                    )
                yield event.event, data

    def _request(
        self,
        method: str,
        path: str,
        payload: dict[str, Any] | None,
        params: Mapping[str, str] | None = None,
    ) -> Any:
        return self._send(method, path, payload, params)[1]

    def _send(
        self,
        method: str,
        path: str,
        payload: dict[str, Any] | None,
        params: Mapping[str, str] | None = None,
        *,
        form: Mapping[str, Any] | None = None,
        files: Mapping[str, tuple[str, bytes]] | None = None,
    ) -> tuple[int, Any]:
        """The status and JSON body of a successful answer; an error status is an ApiError.

        ``payload`` goes as JSON, or ``form`` and ``files`` as ``multipart/form-data``.
        """
        url = api_url(self.host, path)
        with reaching(url):
            response = self._http.request(
                method, url, json=payload, params=params, data=form, files=files
            )
        if not response.is_success:
            message, code = error_details(response)
            raise ApiError(message, status=response.status_code, code=code)
        try:
            return response.status_code, response.json()
        except ValueError as exc:
            raise ApiError(f"{url} answered with invalid JSON: {response.text!r:.200}") from exc


def _job_path(job_id: str) -> str:
    """The job's URL path; the id is escaped, so a typed id cannot reach another route."""
    return f"/api/rag/jobs/{quote(job_id, safe='')}"


def _is_integer(value: Any) -> TypeGuard[int]:
    """Whether a JSON value is an integer (JSON's true and false are not counts)."""
    return isinstance(value, int) and not isinstance(value, bool)


def _first_string(body: Any, *paths: tuple[str, ...]) -> str | None:
    """The first non-empty string found at one of the key paths in a JSON object."""
    for path in paths:
        value = body
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        if isinstance(value, str) and value:
            return value
    return None
