"""``manage.py rag_worker [--concurrency N] [--burst]``: run ingestion jobs (SPEC J2, J3)."""

from __future__ import annotations

import argparse
from typing import Any

from django.core.management.base import BaseCommand, CommandError


class Command(BaseCommand):
    help = (
        "Run ingestion jobs from the queue in PostgreSQL until stopped (SIGINT/SIGTERM). Run "
        "as many as you like, on any machines that reach the database."
    )

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--concurrency",
            type=int,
            default=1,
            help="Jobs this process runs at once (default 1: embedding already uses every "
            "core; more helps when jobs wait on an embedding service).",
        )
        parser.add_argument(
            "--burst",
            action="store_true",
            help="Stop once the queue is empty instead of waiting for more jobs.",
        )

    def handle(self, *args: Any, concurrency: int, burst: bool, **options: Any) -> None:
        if concurrency < 1:
            raise CommandError(f"--concurrency must be at least 1, got {concurrency}.")
        from portal.rag import worker

        worker.run(concurrency=concurrency, burst=burst)
