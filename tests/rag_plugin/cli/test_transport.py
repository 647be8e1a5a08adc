"""ragctl's transport: *.localhost tenants on loopback (with TLS), failures as ApiError."""

from __future__ import annotations

import json
import ssl
import subprocess
from pathlib import Path

import httpx
import pytest

from rag_plugin.cli.client import ApiError, RagClient
from rag_plugin.cli.transport import LoopbackTransport, is_localhost_subdomain
from tests.rag_plugin.cli.fake_portal import PASSWORD, FakePortal, running_fake_portal


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("acme.localhost", True),
        ("a.b.localhost", True),
        ("ACME.LOCALHOST", True),
        ("acme.localhost.", True),
        ("localhost", False),
        ("notlocalhost", False),
        ("acme.localhost.example.com", False),
        ("example.com", False),
    ],
)
def test_localhost_subdomain_detection(name: str, expected: bool) -> None:
    assert is_localhost_subdomain(name) is expected


def capture(seen: list[httpx.Request]) -> httpx.MockTransport:
    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=[])

    return httpx.MockTransport(handler)


@pytest.mark.parametrize(
    ("url", "sent_url", "host_header", "sni"),
    [
        (
            "http://acme.localhost:8000/api/x",
            "http://127.0.0.1:8000/api/x",
            "acme.localhost:8000",
            None,
        ),
        (
            "https://acme.localhost/api/x",
            "https://127.0.0.1/api/x",
            "acme.localhost",
            "acme.localhost",
        ),
        ("https://rag.example.com/api/x", "https://rag.example.com/api/x", "rag.example.com", None),
        ("http://localhost:8000/api/x", "http://localhost:8000/api/x", "localhost:8000", None),
    ],
)
def test_loopback_transport_reroutes_only_localhost_subdomains(
    url: str, sent_url: str, host_header: str, sni: str | None
) -> None:
    seen: list[httpx.Request] = []
    with httpx.Client(transport=LoopbackTransport(capture(seen))) as client:
        client.post(url, json={"k": "v"})

    (sent,) = seen
    assert str(sent.url) == sent_url
    assert sent.headers["Host"] == host_header
    assert sent.extensions.get("sni_hostname") == sni
    assert json.loads(sent.read()) == {"k": "v"}


def test_real_request_to_localhost_subdomain_reaches_loopback_with_tenant_host(
    fake_portal: FakePortal,
) -> None:
    host = fake_portal.url("acme.localhost")

    with RagClient(host) as client:
        token = client.login("alice", PASSWORD)
        client.use_token(token)
        listed = client.collections()

    assert listed == []
    assert [(r.method, r.path, r.host) for r in fake_portal.requests] == [
        ("POST", "/api/auth/login", f"acme.localhost:{fake_portal.port}"),
        ("GET", "/api/rag/collections", f"acme.localhost:{fake_portal.port}"),
    ]
    assert fake_portal.requests[0].body == {"username": "alice", "password": PASSWORD}
    assert fake_portal.requests[1].authorization == "Bearer alice"


def test_error_status_becomes_api_error_with_server_message(fake_portal: FakePortal) -> None:
    with RagClient(fake_portal.url()) as client, pytest.raises(ApiError) as caught:
        client.login("alice", "wrong")

    assert (caught.value.status, caught.value.code, str(caught.value)) == (
        401,
        "AUTHENTICATION_FAILED",
        "HTTP 401: Invalid credentials",
    )


def test_a_server_error_names_the_request_id_the_server_logged_it_under() -> None:
    body = {"error": "Internal error", "code": "DATABASE_ERROR", "request_id": "ab" * 16}
    transport = httpx.MockTransport(lambda request: httpx.Response(500, json=body))
    with RagClient("http://rag.example", transport=transport) as client:
        client.use_token("t")
        with pytest.raises(ApiError) as caught:
            client.collections()

    assert (caught.value.status, caught.value.code, str(caught.value)) == (
        500,
        "DATABASE_ERROR",
        f"HTTP 500: Internal error (request id {'ab' * 16})",
    )


def test_unreachable_server_is_an_api_error_naming_the_url() -> None:
    with running_fake_portal() as portal:
        url = portal.url("acme.localhost")
    # The server is shut down now: nothing listens on that port any more.
    with RagClient(url) as client, pytest.raises(ApiError) as caught:
        client.collections()

    assert caught.value.status is None
    assert str(caught.value).startswith(f"could not reach {url}/api/rag/collections: ")


@pytest.fixture
def acme_certificate(tmp_path: Path) -> tuple[Path, Path]:
    """A self-signed certificate for acme.localhost, made with the openssl command."""
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
            "-keyout", str(key), "-out", str(cert), "-subj", "/CN=acme.localhost",
            "-addext", "subjectAltName=DNS:acme.localhost",
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )  # fmt: skip
    return cert, key


def test_https_localhost_subdomain_offers_and_verifies_the_real_name(
    acme_certificate: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    cert, key = acme_certificate
    offered: list[str | None] = []
    server_tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_tls.load_cert_chain(cert, key)
    server_tls.sni_callback = lambda _socket, name, _context: offered.append(name)
    # httpx reads SSL_CERT_FILE when it builds its TLS context: trust only this certificate.
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))

    with (
        running_fake_portal(tls=server_tls) as portal,
        RagClient(portal.url("acme.localhost")) as client,
    ):
        token = client.login("alice", PASSWORD)

    assert token == "alice"
    assert offered == ["acme.localhost"]
    assert portal.requests[0].host == f"acme.localhost:{portal.port}"
