"""The ONNX sessions fastembed loads for us: their intra-op threads sleep after a run."""

from __future__ import annotations

import threading

import onnxruntime
import pytest

from rag_plugin.embedding.fastembed_backend import BUNDLED_MODEL, load_model
from rag_plugin.onnx_sessions import SPINNING, sessions_that_yield_the_cores


def test_options_made_in_the_block_do_not_spin_and_the_class_is_restored() -> None:
    original = onnxruntime.SessionOptions

    with sessions_that_yield_the_cores():
        inside = onnxruntime.SessionOptions()

    assert inside.get_session_config_entry(SPINNING) == "0"
    assert onnxruntime.SessionOptions is original
    assert not _has(onnxruntime.SessionOptions(), SPINNING)


def test_the_class_is_restored_when_the_load_fails() -> None:
    original = onnxruntime.SessionOptions

    with pytest.raises(RuntimeError, match="load failed"), sessions_that_yield_the_cores():
        raise RuntimeError("load failed")

    assert onnxruntime.SessionOptions is original


def test_loads_in_two_threads_take_turns() -> None:
    original = onnxruntime.SessionOptions
    seen: list[str] = []
    entered = threading.Event()

    def load() -> None:
        with sessions_that_yield_the_cores():
            entered.set()
            seen.append(onnxruntime.SessionOptions().get_session_config_entry(SPINNING))

    with sessions_that_yield_the_cores():
        other = threading.Thread(target=load)
        other.start()
        assert not entered.wait(0.2)  # the other load waits for this one
    other.join(5)

    assert seen == ["0"]
    assert onnxruntime.SessionOptions is original


@pytest.mark.model
def test_the_bundled_models_session_does_not_spin() -> None:
    session = load_model(BUNDLED_MODEL).model.model.model  # TextEmbedding → its model → ORT

    assert session.get_session_options().get_session_config_entry(SPINNING) == "0"


def _has(options: onnxruntime.SessionOptions, key: str) -> bool:
    try:
        options.get_session_config_entry(key)
    except RuntimeError:
        return False
    return True
