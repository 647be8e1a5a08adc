"""Extraction in a child process with memory, CPU and wall-clock limits, so that a hostile
file can crash, exhaust or stall only a process made for it (DESIGN: a parser never runs
where a hostile file can take the worker down with it).

Children are forked from multiprocessing's fork server, which imports the parsers once: a
child starts in milliseconds, and the calling process never loads a parser. The child sends
its result back as JSON, never as a pickle: it has read a hostile file, so nothing it says
may run code in the parent.
"""

from __future__ import annotations

import functools
import json
import logging
import math
import multiprocessing
import os
import resource
import signal
import traceback
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any

from rag_plugin import exceptions
from rag_plugin.exceptions import (
    CorruptDocumentError,
    ExtractionTimeoutError,
    InvalidInputError,
    RagError,
)
from rag_plugin.files.detect import named
from rag_plugin.files.document import ExtractedDocument
from rag_plugin.files.limits import DEFAULT_LIMITS, MIB, ExtractionLimits

logger = logging.getLogger(__name__)

_CONTEXT = multiprocessing.get_context("forkserver")
_PRELOAD = (
    "rag_plugin.files.extract",
    "rag_plugin.files.pdf",
    "rag_plugin.files.docx",
    "rag_plugin.files.html",
    "rag_plugin.files.text",
    "pytesseract",
)
"""Imported once by the fork server when it starts, so that each child has them already."""
_REAP_S = 5.0
"""How long to wait for a child that has sent its result (or was killed) to exit."""


def extract_isolated(
    data: bytes, *, filename: str = "", limits: ExtractionLimits = DEFAULT_LIMITS
) -> ExtractedDocument:
    """:func:`rag_plugin.files.extract` run in a child process under ``limits``.

    The child may allocate ``limits.memory_mb`` beyond its starting size (``RLIMIT_AS``) and
    use ``limits.timeout_s`` of CPU time (``RLIMIT_CPU``); the parent kills it and its own
    children (Tesseract) after ``limits.timeout_s`` of wall-clock time. Beyond
    :func:`~rag_plugin.files.extract`'s errors, which come back as the same class and
    message, this raises :class:`ExtractionTimeoutError` for a child out of time and
    :class:`CorruptDocumentError` for one that ran out of memory or crashed.
    """
    limits.check_size(len(data))
    _preload()
    receiver, sender = _CONTEXT.Pipe(duplex=False)
    child = _CONTEXT.Process(
        target=_run_child, args=(sender, data, filename, limits), name="rag-extract", daemon=True
    )
    child.start()
    sender.close()
    try:
        # poll() also returns when the child dies: then there is nothing to read.
        if not receiver.poll(limits.timeout_s):
            _kill(child)
            raise _timeout(limits, filename)
        try:
            message = receiver.recv_bytes()
        except EOFError:
            message = None
    finally:
        receiver.close()
        child.join(_REAP_S)
        if child.exitcode is None:
            _kill(child)
    if message is None:
        raise _died(child.exitcode, limits, filename)
    return _result(message, limits, filename)


@functools.cache
def _preload() -> None:
    """Name the parsers for the fork server to import, before it first starts (set at the
    first call rather than on import, as it is process-wide)."""
    _CONTEXT.set_forkserver_preload(list(_PRELOAD))


def _run_child(sender: Connection, data: bytes, filename: str, limits: ExtractionLimits) -> None:
    """The child: limit itself, extract, send the outcome as JSON."""
    # Its own process group, so that a timeout kills Tesseract with it.
    os.setsid()
    budget = _address_space() + limits.memory_mb * MIB
    resource.setrlimit(resource.RLIMIT_AS, (budget, budget))
    seconds = math.ceil(limits.timeout_s)
    resource.setrlimit(resource.RLIMIT_CPU, (seconds, seconds + 1))
    try:
        message = _outcome(data, filename, limits)
    except MemoryError:
        # Whatever ran out (the parser, or encoding a huge result) has been freed by now.
        message = _OUT_OF_MEMORY
    sender.send_bytes(message)
    sender.close()


_OUT_OF_MEMORY = json.dumps({"out_of_memory": True}).encode()


def _outcome(data: bytes, filename: str, limits: ExtractionLimits) -> bytes:
    """The extraction's outcome as JSON: the document, the library's error, or a failure."""
    from rag_plugin.files.extract import extract

    outcome: dict[str, Any]
    try:
        outcome = {"document": extract(data, filename=filename, limits=limits).as_json()}
    except RagError as exc:
        outcome = {"error": type(exc).__name__, "message": str(exc)}
    except MemoryError:
        raise
    except Exception as exc:
        outcome = {"failed": f"{type(exc).__name__}: {exc}", "trace": traceback.format_exc()}
    return json.dumps(outcome).encode()


def _address_space() -> int:
    """The bytes of address space this process has mapped (its starting size)."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[0]) * resource.getpagesize()
    except (OSError, ValueError, IndexError):
        return 0


def _kill(child: BaseProcess) -> None:
    """SIGKILL the child's process group (it and any program it ran), else the child."""
    if child.pid is None:  # never started
        return
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        # Killed before it made its own group: the child alone.
        child.kill()
    child.join(_REAP_S)


def _result(message: bytes, limits: ExtractionLimits, filename: str) -> ExtractedDocument:
    """The document the child sent, or the error it reported, raised."""
    try:
        outcome = json.loads(message)
        if "document" in outcome:
            return ExtractedDocument.from_json(outcome["document"])
        if "error" in outcome:
            error = _error(str(outcome["error"]), str(outcome["message"]))
        else:
            error = _failure(outcome, limits, filename)
    except (ValueError, TypeError, KeyError, AttributeError, InvalidInputError) as exc:
        # The child read a hostile file: what it sends is checked like any other input.
        raise CorruptDocumentError(
            f"The file{named(filename)} cannot be read: the parser sent back no result "
            f"({type(exc).__name__}). Upload an undamaged copy."
        ) from exc
    raise error


def _failure(outcome: dict[str, Any], limits: ExtractionLimits, filename: str) -> RagError:
    """The error for a child that ran out of memory or failed in a way it did not name."""
    if outcome.get("out_of_memory"):
        return CorruptDocumentError(
            f"The file{named(filename)} cannot be read: the parser ran out of memory (the "
            f"limit is {limits.memory_mb} MB). Upload a smaller or simpler file, or raise "
            "memory_mb."
        )
    logger.warning("Extraction of %r failed in the child:\n%s", filename, outcome.get("trace"))
    return CorruptDocumentError(
        f"The file{named(filename)} cannot be read: the parser failed with "
        f"{outcome.get('failed')}. Upload an undamaged copy."
    )


def _error(name: str, message: str) -> RagError:
    """The library's error the child raised: same class, same message."""
    cls = getattr(exceptions, name, None)
    if isinstance(cls, type) and issubclass(cls, RagError):
        try:
            return cls(message)
        except TypeError:  # a class built from other arguments; extraction raises none
            pass
    return CorruptDocumentError(message)


def _died(exitcode: int | None, limits: ExtractionLimits, filename: str) -> RagError:
    """The error for a child that ended without a result."""
    if exitcode is not None and exitcode < 0:
        number = -exitcode
        if number == signal.SIGXCPU:
            return _timeout(limits, filename)
        if number == signal.SIGKILL:
            how = "the parser was killed (signal 9)"
        else:
            how = f"the parser crashed (signal {number})"
    else:
        how = f"the parser exited with status {exitcode}"
    return CorruptDocumentError(
        f"The file{named(filename)} cannot be read: {how}. It may be damaged, or need more "
        f"than the memory limit of {limits.memory_mb} MB: upload an undamaged copy or raise "
        "memory_mb."
    )


def _timeout(limits: ExtractionLimits, filename: str) -> ExtractionTimeoutError:
    return ExtractionTimeoutError(
        f"Extracting the text of the file{named(filename)} took longer than the limit of "
        f"{limits.timeout_s:g} s; split it into smaller files or raise timeout_s."
    )
