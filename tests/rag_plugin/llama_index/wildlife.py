"""Two small LlamaIndex documents the adapter tests ingest (see conftest.py)."""

from __future__ import annotations

from llama_index.core.schema import Document

DOCUMENTS = [
    Document(
        id_="otters",
        text=(
            "Sea otters float on their backs while they eat. They crack shellfish open with "
            "stones. An otter can hold its breath for five minutes while it dives for food."
        ),
        metadata={"title": "Otters", "topic": "mammals"},
    ),
    Document(
        id_="herons",
        text=(
            "Grey herons stand motionless in shallow water. A heron strikes fish with its "
            "sharp bill. Herons nest together in colonies high up in the trees."
        ),
        metadata={"title": "Herons", "topic": "birds"},
    ),
]
