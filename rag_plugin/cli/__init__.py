"""``ragctl``: bulk ingest, search and chat over the portal's REST API (SPEC X1, X2, R6)."""

from __future__ import annotations

import getpass
import os
import sys
from collections.abc import Sequence

from rag_plugin.cli.commands import Console, run

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``ragctl`` with the process's streams and environment; returns the exit status."""
    console = Console(
        stdout=sys.stdout,
        stderr=sys.stderr,
        environ=os.environ,
        prompt=getpass.getpass if sys.stdin is not None and sys.stdin.isatty() else None,
        stdin=sys.stdin,
    )
    return run(argv, console)
