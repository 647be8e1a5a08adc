"""``ragctl``'s command line: its sub-commands, options and their defaults.

Light on purpose: ``ragctl --help`` and a usage error load only this and argparse; the
commands themselves (``commands.py``: httpx, tqdm) load once one runs.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rag_plugin.cli.arguments import key_value, positive
from rag_plugin.cli.discovery import DEFAULT_MAX_UPLOAD_BYTES
from rag_plugin.cli.job import STATES

__all__ = [
    "BATCH_MAX_DOCUMENTS",
    "DEFAULT_HOST",
    "HOST_ENV",
    "TOKEN_ENV",
    "build_parser",
]

CHUNKING_STRATEGIES = ("word", "semantic", "character")
SEARCH_STRATEGIES = ("semantic", "bm25", "fuzzy", "hybrid")
HOST_ENV = "RAG_HOST"
TOKEN_ENV = "RAG_TOKEN"  # noqa: S105 (the variable's name, not a secret)
DEFAULT_HOST = "http://localhost:8000"
BATCH_MAX_DOCUMENTS = 100
"""The portal's limit on documents per ``/api/rag/ingest/batch`` request."""
DEFAULT_BATCH_SIZE = 20
DEFAULT_WAIT_TIMEOUT = 3600.0
MAX_MESSAGES = 20
"""``chat --max-messages``' default: the portal's default ``RAG_MAX_CHAT_MESSAGES``."""
DEFAULT_JOBS_LIMIT = 50
MAX_JOBS_LIMIT = 1000


def build_parser() -> argparse.ArgumentParser:
    """The ``ragctl`` argument parser with its five sub-commands."""
    connection = argparse.ArgumentParser(add_help=False)
    connection.add_argument(
        "--host", help=f"portal base URL (default: ${HOST_ENV} or {DEFAULT_HOST})"
    )
    connection.add_argument("--token", help=f"bearer token (default: ${TOKEN_ENV})")
    connection.add_argument("--user", help="user name or e-mail address to log in with")
    connection.add_argument("--password", help="password for --user (prompted on a terminal)")
    connection.add_argument(
        "--timeout", type=positive(float), default=300.0, help="seconds per request (300)"
    )
    connection.add_argument("--json", action="store_true", help="machine-readable JSON output")

    parser = argparse.ArgumentParser(
        prog="ragctl", description="Bulk ingest and search over the rag-plugin portal's REST API."
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    ingest = commands.add_parser(
        "ingest-dir",
        parents=[connection],
        help="ingest every text, PDF, DOCX and HTML file under a folder",
    )
    ingest.add_argument("--collection", required=True)
    ingest.add_argument("--docs-path", required=True, type=Path)
    ingest.add_argument("--chunking-strategy", choices=CHUNKING_STRATEGIES)
    ingest.add_argument("--tag", action="append", default=[], dest="tags", metavar="TAG")
    ingest.add_argument(
        "--metadata",
        action="append",
        type=key_value,
        default=[],
        metavar="KEY=VALUE",
        help="metadata on every document (repeatable; VALUE as JSON if it parses, else text)",
    )
    ingest.add_argument(
        "--batch-size",
        type=positive(int, most=BATCH_MAX_DOCUMENTS),
        default=DEFAULT_BATCH_SIZE,
        metavar="N",
        help=f"documents per request ({DEFAULT_BATCH_SIZE}; 1 sends each document on its own)",
    )
    ingest.add_argument(
        "--max-upload-bytes",
        type=positive(int),
        default=DEFAULT_MAX_UPLOAD_BYTES,
        metavar="BYTES",
        help="skip PDF, DOCX and HTML files larger than this: the portal's upload limit "
        f"(RAG_MAX_UPLOAD_BYTES, {DEFAULT_MAX_UPLOAD_BYTES} by default)",
    )
    ingest.add_argument(
        "--dry-run", action="store_true", help="list what would be sent; no network at all"
    )
    ingest.add_argument(
        "--no-wait",
        action="store_true",
        help="submit the ingestion jobs, print their ids and exit without waiting for them",
    )
    ingest.add_argument(
        "--wait-timeout",
        type=positive(float),
        default=DEFAULT_WAIT_TIMEOUT,
        metavar="SECONDS",
        help=f"give up waiting for the jobs after this long ({DEFAULT_WAIT_TIMEOUT:.0f}; they go "
        "on in the portal) and exit non-zero",
    )

    search = commands.add_parser("search", parents=[connection], help="search a collection")
    search.add_argument("--collection", required=True)
    search.add_argument("--query", required=True)
    search.add_argument("--top-k", type=positive(int), default=10)
    search.add_argument("--strategy", choices=SEARCH_STRATEGIES)
    search.add_argument(
        "--filter",
        action="append",
        type=key_value,
        default=[],
        dest="filters",
        metavar="KEY=VALUE",
        help="only chunks whose metadata KEY equals VALUE (repeatable, all must hold; VALUE "
        "as JSON if it parses, else text)",
    )
    search.add_argument("--rerank", choices=("lexical", "cross-encoder", "off"))

    commands.add_parser("collections", parents=[connection], help="list your collections")
    _add_chat_parser(commands, connection)
    _add_jobs_parser(commands, connection)
    return parser


def _add_chat_parser(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    connection: argparse.ArgumentParser,
) -> None:
    """The ``chat`` sub-command's arguments."""
    parser = commands.add_parser(
        "chat", parents=[connection], help="chat with a profile's or collections' documents"
    )
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--profile", help="a retrieval profile of your tenant")
    target.add_argument(
        "--collection",
        action="append",
        dest="collections",
        metavar="NAME",
        help="a collection of yours to search (repeatable)",
    )
    parser.add_argument(
        "--message", help="ask this one question and exit (with --json: the server's JSON)"
    )
    parser.add_argument(
        "--max-messages",
        type=int,
        default=MAX_MESSAGES,
        help=f"messages sent per question, the oldest turns dropped first ({MAX_MESSAGES}, "
        "the portal's default RAG_MAX_CHAT_MESSAGES)",
    )


def _add_jobs_parser(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    connection: argparse.ArgumentParser,
) -> None:
    """The ``jobs`` sub-command's arguments."""
    parser = commands.add_parser(
        "jobs",
        parents=[connection],
        help="list, watch, cancel or retry ingestion jobs",
        description="Without ACTION: list your ingestion jobs, newest first. "
        "cancel ID / retry ID: cancel or retry one job and print its new state.",
    )
    parser.add_argument("action", nargs="?", choices=("cancel", "retry"), metavar="ACTION",
                        help="cancel or retry (with ID)")  # fmt: skip
    parser.add_argument("job_id", nargs="?", metavar="ID", help="the job to cancel or retry")
    parser.add_argument("--state", choices=STATES, help="only jobs in this state")
    parser.add_argument("--collection", help="only jobs on this collection")
    parser.add_argument(
        "--shared", action="store_true", help="only jobs on the tenant's shared collections"
    )
    parser.add_argument(
        "--limit",
        type=positive(int, most=MAX_JOBS_LIMIT),
        default=DEFAULT_JOBS_LIMIT,
        metavar="N",
        help=f"list at most N jobs ({DEFAULT_JOBS_LIMIT}, at most {MAX_JOBS_LIMIT})",
    )
    parser.add_argument(
        "--watch", action="store_true", help="refresh the table until every listed job has ended"
    )
