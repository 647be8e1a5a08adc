"""Schemathesis against the live server: the OpenAPI schema tells the truth (SPEC A6, issue 16).

Every operation is exercised with generated valid and invalid requests and a valid token, and
every check schemathesis has (``--checks all``: no 5xx, documented status codes, content types
and response bodies, invalid data refused, valid data accepted, ...) must pass. The fuzzing
user is made for this test alone, so what it ingests or deletes touches no other test's data.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

from portal import launch
from portal.launch import PROJECT_ROOT
from tests.conftest import PortalServer

ACME = "acme.localhost"
CONFIG = Path(__file__).with_name("schemathesis.toml")  # seed, examples per operation, hooks
MIN_CASES = 1_000


def make_user(server: PortalServer, username: str, password: str) -> None:
    code = (
        "from tenants.services import user_ensure; "
        f"user_ensure(schema_name='acme', username={username!r}, password={password!r})"
    )
    launch.manage(server.env, "shell", "-c", code)


def test_schemathesis_finds_no_failure_on_any_operation(
    portal_server: PortalServer, tmp_path: Path
) -> None:
    username, password = f"fuzz_{uuid.uuid4().hex[:8]}", uuid.uuid4().hex
    make_user(portal_server, username, password)
    token = launch.login(portal_server.port, ACME, username, password)
    # The schema is read through a client that sends the tenant's Host header (schemathesis
    # sends its --header values on the test requests only, not when it loads the schema).
    with portal_server.client(ACME) as client:
        schema = client.get("/api/schema", headers={"Accept": "application/json"})
    assert schema.status_code == 200
    (tmp_path / "openapi.json").write_bytes(schema.content)
    base = f"http://127.0.0.1:{portal_server.port}"
    command = [
        str(Path(sys.executable).parent / "schemathesis"),
        "--config-file",
        str(CONFIG),
        "run",
        "openapi.json",
        "--url",
        base,
        "--checks",
        "all",
        "--workers",
        "2",
        "--header",
        f"Host: {ACME}:{portal_server.port}",
        "--header",
        f"Authorization: Bearer {token}",
        # A fresh connection per request: none is sent down a kept-alive connection just as
        # gunicorn closes it for idleness (an HTTP/1.1 race of client and server, not the API's).
        "--header",
        "Connection: close",
        "--report",
        "har",
        "--no-color",
    ]
    env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT)}  # for the hooks module

    reports = tmp_path / "reports"
    result = subprocess.run(
        [*command, "--report-dir", str(reports)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
        env=env,
        check=False,
    )
    returncode, output = result.returncode, result.stdout + result.stderr
    assert returncode == 0, output + network_report(reports)
    generated = re.search(r"(\d+) generated", output)
    assert generated is not None, output
    assert int(generated.group(1)) >= MIN_CASES, output


def network_report(reports: Path, slowest: int = 5) -> str:
    """The requests that got no response (timed out, connection lost), and the slowest ones:
    what a failure caused by the network, not the API, looks like."""
    entries = [
        entry
        for har in sorted(reports.glob("*.json"))
        for entry in json.loads(har.read_text())["log"]["entries"]
    ]

    def line(entry: dict[str, Any]) -> str:
        request, response = entry["request"], entry["response"]
        return (
            f"  {request['method']} {request['url']} -> {response['status'] or 'no response'}"
            f" after {entry['time']} ms, sent {entry['startedDateTime']}"
        )

    unanswered = [
        f"{line(entry)}\n    body: {entry['request'].get('postData', {}).get('text', '')[:500]}"
        for entry in entries
        if not entry["response"]["status"]
    ]
    by_time = sorted(entries, key=lambda entry: -float(entry["time"]))[:slowest]
    return (
        f"\n\nRequests without a response ({len(unanswered)} of {len(entries)}):\n"
        + "\n".join(unanswered or ["  none"])
        + f"\nThe {slowest} slowest:\n"
        + "\n".join(line(entry) for entry in by_time)
    )
