"""The README's LlamaIndex example runs as written (with the real bundled model)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from portal.embedded_db import PROJECT_ROOT

pytestmark = pytest.mark.model


def readme_example() -> str:
    text = (PROJECT_ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Using rag_plugin from LlamaIndex", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.DOTALL)
    assert len(blocks) == 1, "the section should hold exactly one python example"
    return blocks[0]


def test_readme_llama_index_example_runs_as_written() -> None:
    result = subprocess.run(
        [sys.executable, "-c", readme_example()],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )

    assert result.returncode == 0, result.stderr
    # The typo-corrected hybrid query finds the heron document's nesting sentence.
    assert "Herons:" in result.stdout
