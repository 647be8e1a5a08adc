"""What a context's reads must see, for a store that reads on standbys.

A context (a thread, an asyncio task; see :mod:`contextvars`) carries a *read-after*
position: a store that writes raises it to where its write landed, and reads only where that
is visible (:mod:`rag_plugin.stores.postgres.replicas`: a standby that has replayed the WAL up
to it, else the primary). A caller that carries the position between processes (the portal
keeps one per user) enters :func:`reads_after` around the reads. :func:`reads_on_primary`
sends a block's reads to the primary, for reads that decide a write (an ingest reads what is
stored under a source to replace it). Stores without standbys ignore both.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = [
    "gave_up_waiting",
    "on_primary",
    "raise_read_after",
    "read_after",
    "read_context",
    "reads_after",
    "reads_on_primary",
    "waited_in_vain",
]

_read_after: ContextVar[int] = ContextVar("rag_read_after", default=0)
_on_primary: ContextVar[bool] = ContextVar("rag_reads_on_primary", default=False)
# The read-after position this context has waited for in vain (no standby replayed it in
# time): its later reads for it go to the primary at once, so a request waits once, not once
# per read.
_waited_in_vain: ContextVar[int] = ContextVar("rag_waited_in_vain", default=0)


def read_after() -> int:
    """The position this context's reads must see (0: anything will do)."""
    return _read_after.get()


def raise_read_after(position: int) -> None:
    """Make this context's later reads see at least ``position``."""
    if position > _read_after.get():
        _read_after.set(position)


@contextmanager
def reads_after(position: int) -> Iterator[None]:
    """Reads in the block see at least ``position`` (and what the block writes); the
    context's position is put back when it ends."""
    token = _read_after.set(max(position, _read_after.get()))
    try:
        yield
    finally:
        _read_after.reset(token)


@contextmanager
def read_context(position: int = 0) -> Iterator[None]:
    """A fresh read-after position for the block (a request, a job): ``position``, whatever
    the context carried before (a thread that served another user's request, say); the
    context's own is put back when the block ends."""
    token = _read_after.set(position)
    waited = _waited_in_vain.set(0)
    try:
        yield
    finally:
        _waited_in_vain.reset(waited)
        _read_after.reset(token)


def waited_in_vain() -> int:
    """The highest position this context has waited for without a standby replaying it."""
    return _waited_in_vain.get()


def gave_up_waiting(position: int) -> None:
    """Record that no standby replayed ``position`` in the time this context would wait."""
    if position > _waited_in_vain.get():
        _waited_in_vain.set(position)


def on_primary() -> bool:
    """Whether this context's reads must go to the primary (:func:`reads_on_primary`)."""
    return _on_primary.get()


@contextmanager
def reads_on_primary() -> Iterator[None]:
    """Reads in the block go to the primary: they decide a write, which must not rest on a
    standby's older state."""
    token = _on_primary.set(True)
    try:
        yield
    finally:
        _on_primary.reset(token)
