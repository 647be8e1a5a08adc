"""Where a ``ragctl`` command reads its environment and writes, and the error that stops one."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TextIO

from rag_plugin.exceptions import RagError

if TYPE_CHECKING:
    import httpx

__all__ = ["CommandError", "Console"]


class CommandError(RagError):
    """A command cannot go on (missing credentials, failed login, failed documents)."""


@dataclass(frozen=True)
class Console:
    """Where a command reads its environment and writes; tests swap the streams and transport."""

    stdout: TextIO
    stderr: TextIO
    environ: Mapping[str, str] = field(default_factory=dict)
    transport: httpx.BaseTransport | None = None
    # Asks for a password interactively; None where nobody could answer (stdin not a terminal).
    prompt: Callable[[str], str] | None = None
    # Where `ragctl chat` reads its questions; None: no questions.
    stdin: TextIO | None = None

    def out(self, line: str) -> None:
        print(line, file=self.stdout)

    def err(self, line: str) -> None:
        print(line, file=self.stderr)
