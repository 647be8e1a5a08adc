"""``ragctl``'s command line: ``--help`` and usage errors load no HTTP or progress library."""

from __future__ import annotations

import json

from tests.test_dependency_rules import python_output

HELP_IN_A_FRESH_PROCESS = """
import io, json, sys
from rag_plugin.cli import run
from rag_plugin.cli.console import Console

out, err = io.StringIO(), io.StringIO()
status = run(sys.argv[1:], Console(stdout=out, stderr=err))
heavy = sorted(m for m in ("httpx", "httpx_sse", "tqdm", "rich", "click") if m in sys.modules)
print(json.dumps({"status": status, "out": out.getvalue(), "err": err.getvalue(), "heavy": heavy}))
"""


def _run(*argv: str) -> dict[str, object]:
    code = f"import sys; sys.argv = ['ragctl', *{list(argv)!r}]\n" + HELP_IN_A_FRESH_PROCESS
    found: dict[str, object] = json.loads(python_output(code))
    return found


def test_help_lists_every_command_without_loading_the_http_client() -> None:
    found = _run("--help")
    assert found["status"] == 0
    for command in ("ingest-dir", "search", "collections", "chat", "jobs"):
        assert command in str(found["out"])
    assert found["heavy"] == []


def test_a_usage_error_loads_no_http_client_either() -> None:
    found = _run("search", "--collection", "docs")
    assert found["status"] == 2
    assert "--query" in str(found["err"])
    assert found["heavy"] == []


def test_a_command_that_runs_loads_it() -> None:
    # The guard above must be able to fail: a real command does load httpx.
    found = _run("search", "--collection", "docs", "--query", "x", "--host", "ftp://nowhere")
    assert found["status"] == 1
    assert "--host must be an http://" in str(found["err"])
    assert "httpx" in found["heavy"]  # type: ignore[operator]
