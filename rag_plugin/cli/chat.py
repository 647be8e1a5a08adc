"""``ragctl chat``: a conversation with a profile's or collections' documents (SPEC R6).

Interactive by default: each line read is a question, answered as the server streams it, with
the sources the answer cites; the conversation so far goes with every question. ``--message``
asks one question and exits; with ``--json`` it prints the server's whole JSON answer. A long
conversation sends its last ``--max-messages`` messages (the oldest turns go first).
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from rag_plugin.cli import output
from rag_plugin.cli.errors import ApiError
from rag_plugin.exceptions import InvalidInputError

if TYPE_CHECKING:
    from rag_plugin.cli.client import RagClient
    from rag_plugin.cli.console import Console

__all__ = ["chat"]

PROMPT = "you> "


def chat(args: argparse.Namespace, console: Console, client: RagClient) -> int:
    """Run the conversation on ``console`` through ``client`` (logged in)."""
    target: dict[str, Any] = (
        {"profile": args.profile}
        if args.profile
        else {"collections": [{"name": name} for name in args.collections]}
    )
    if args.json:
        if args.message is None:
            raise InvalidInputError("--json answers one question: give it with --message")
        try:
            body = client.chat({**target, "messages": [{"role": "user", "content": args.message}]})
        except ApiError as exc:
            raise ApiError(f"chat failed: {exc}") from exc
        console.out(output.json_text(body))
        return 0
    history: list[dict[str, str]] = []
    questions = [args.message] if args.message is not None else _questions(console)
    if args.max_messages < 1:
        raise InvalidInputError(f"--max-messages must be at least 1, got {args.max_messages}")
    for question in questions:
        history.append({"role": "user", "content": question})
        while len(history) > args.max_messages:
            del history[:2]  # the oldest question and its answer: turns alternate
        try:
            answer = _turn(client, {**target, "messages": history}, console)
        except ApiError as exc:
            raise ApiError(f"chat failed: {exc}") from exc
        if answer is None:
            history.pop()  # nothing to remember: no LLM answered
        else:
            history.append({"role": "assistant", "content": answer})
    return 0


def _questions(console: Console) -> Iterator[str]:
    """Lines from the console's input until it ends; blank lines are skipped."""
    while True:
        console.stdout.write(PROMPT)
        console.stdout.flush()
        line = console.stdin.readline() if console.stdin is not None else ""
        if not line:
            console.out("")
            return
        if line.strip():
            yield line.strip()


def _turn(client: RagClient, payload: dict[str, Any], console: Console) -> str | None:
    """Print one streamed answer and the sources it cites; return the answer (None if none)."""
    sources: dict[int, dict[str, Any]] = {}
    for event, data in client.chat_events(payload):
        if event == "sources":
            sources = {source["footnote_id"]: source for source in data.get("sources", [])}
        elif event == "delta":
            console.stdout.write(data["text"])
            console.stdout.flush()
        elif event == "done":
            if data.get("answer") is None:
                console.err(str(data.get("message") or "no answer"))
                for number in sorted(sources):
                    console.out(output.source_line(number, sources[number]))
                return None
            console.out("")
            for number in data.get("cited", []):
                if number in sources:
                    console.out(output.source_line(number, sources[number]))
            answer: str = data["answer"]
            return answer
    raise ApiError("the answer stream ended without its final event")
