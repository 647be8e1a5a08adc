"""The HTTP transport of ``ragctl``: ``*.localhost`` tenants reached on loopback, and a failed
request or an error answer turned into :class:`~rag_plugin.cli.errors.ApiError`."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import httpx

from rag_plugin.cli.errors import ApiError

__all__ = [
    "LoopbackTransport",
    "error_details",
    "http_client",
    "is_localhost_subdomain",
    "reaching",
]

LOOPBACK = "127.0.0.1"
CONNECT_TIMEOUT = 10.0


def is_localhost_subdomain(name: str) -> bool:
    """Whether ``name`` is under ``.localhost``, which RFC 6761 reserves for loopback."""
    return name.lower().rstrip(".").endswith(".localhost")


class LoopbackTransport(httpx.BaseTransport):
    """Sends requests for ``*.localhost`` names to 127.0.0.1, keeping the name in Host and SNI.

    Tenants are routed by host name, so ``acme.localhost`` must arrive as the ``Host`` header
    even on machines whose resolver does not know the name (curl and browsers do the same).
    """

    def __init__(self, inner: httpx.BaseTransport | None = None) -> None:
        self._inner = inner if inner is not None else httpx.HTTPTransport()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        name = request.url.host
        if not is_localhost_subdomain(name):
            return self._inner.handle_request(request)
        extensions = dict(request.extensions)
        if request.url.scheme == "https":
            # Without this, TLS would offer (and verify) "127.0.0.1" instead of the real name.
            extensions.setdefault("sni_hostname", name)
        rerouted = httpx.Request(
            request.method,
            request.url.copy_with(host=LOOPBACK),
            headers=request.headers,  # already carries Host: <name>[:port]
            stream=request.stream,
            extensions=extensions,
        )
        return self._inner.handle_request(rerouted)

    def close(self) -> None:
        self._inner.close()


def http_client(timeout: float, transport: httpx.BaseTransport | None = None) -> httpx.Client:
    """An httpx client whose ``*.localhost`` requests go to loopback; ``transport`` is a seam."""
    timeouts = httpx.Timeout(timeout, connect=min(timeout, CONNECT_TIMEOUT))
    headers = {"Accept": "application/json", "User-Agent": "ragctl"}
    if transport is not None:
        wrapped = LoopbackTransport(transport)
        return httpx.Client(timeout=timeouts, headers=headers, transport=wrapped)
    # A mount (not transport=) keeps httpx's proxy settings from the environment for other hosts.
    return httpx.Client(
        timeout=timeouts, headers=headers, mounts={"all://*.localhost": LoopbackTransport()}
    )


@contextmanager
def reaching(url: str) -> Iterator[None]:
    """Turn a request's transport failures (no connection, no answer in time) into ApiError."""
    try:
        yield
    except httpx.TimeoutException as exc:
        raise ApiError(f"no answer from {url} in time ({type(exc).__name__})") from exc
    except httpx.TransportError as exc:
        raise ApiError(f"could not reach {url}: {exc}") from exc


def error_details(response: httpx.Response) -> tuple[str, str | None]:
    """The API's ``{"error", "code"}`` body, or the start of whatever else came back."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict):
        message = body.get("error", body.get("detail"))
        code = body.get("code")
        request_id = body.get("request_id")
        if isinstance(message, str) and message:
            if isinstance(request_id, str) and request_id:
                message = f"{message} (request id {request_id})"  # what the server logged
            return message, code if isinstance(code, str) else None
    text = " ".join(response.text.split())[:200]
    return text or response.reason_phrase, None
