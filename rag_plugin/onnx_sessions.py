"""How the ONNX Runtime sessions that fastembed creates for us run.

fastembed builds each session's ``SessionOptions`` itself and exposes none of the options
below, so :func:`sessions_that_yield_the_cores` hands it, while it loads a model, an options
class that sets them.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["SPINNING", "sessions_that_yield_the_cores"]

SPINNING = "session.intra_op.allow_spinning"
"""The session option that keeps intra-op threads busy-waiting after a run (on by default)."""

_swap_lock = threading.Lock()


@contextmanager
def sessions_that_yield_the_cores() -> Iterator[None]:
    """Sessions created in this block put their intra-op threads to sleep when a run ends,
    instead of spinning for the next one.

    The model shares the machine's cores with what follows each run: the store write and
    PostgreSQL, the next request. Spinning threads take a core from them; without it an
    ingestion job's store write took 31 ms instead of 36 and its cache write 5 ms instead of
    8, and the model was no slower (bench/RESULTS.md §7 run K). Loads take turns here, so two
    threads loading models never swap the class under each other.
    """
    import onnxruntime

    with _swap_lock:
        original = onnxruntime.SessionOptions

        class Options(original):  # type: ignore[misc, valid-type]
            def __init__(self) -> None:
                super().__init__()
                self.add_session_config_entry(SPINNING, "0")

        onnxruntime.SessionOptions = Options
        try:
            yield
        finally:
            onnxruntime.SessionOptions = original
