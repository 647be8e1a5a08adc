"""The HTTP transport of ``ragctl``: ``*.localhost`` tenants reached on loopback."""

from __future__ import annotations

import httpx

__all__ = ["LoopbackTransport", "http_client", "is_localhost_subdomain"]

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
