"""``ragctl``: bulk ingest, search and chat over the portal's REST API (SPEC X1, X2, R6)."""

from __future__ import annotations

import getpass
import os
import sys
from collections.abc import Sequence
from contextlib import redirect_stderr, redirect_stdout

from rag_plugin.cli.console import Console
from rag_plugin.cli.options import build_parser

__all__ = ["main", "run"]


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


def run(argv: Sequence[str] | None, console: Console) -> int:
    """Run one ``ragctl`` command; 0 on success, 1 on failure, 2 on bad arguments."""
    try:
        # argparse writes usage errors and --help itself; send them to this console's streams.
        with redirect_stdout(console.stdout), redirect_stderr(console.stderr):
            args = build_parser().parse_args(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 2
    # Imported here, not above: the commands load httpx and tqdm (a quarter of a second),
    # which --help and a usage error never need.
    from rag_plugin.cli.commands import dispatch

    return dispatch(args, console)
