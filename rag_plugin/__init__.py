"""rag_plugin: chunking, dedup embedding, hybrid BM25 + fuzzy + dense search for LlamaIndex.

Everything public is importable from here; the modules themselves are the implementation.
Names load on first use (``lazy_loader`` reading ``__init__.pyi``, the one list of them), so
``import rag_plugin`` — and every ``import rag_plugin.<module>``, which runs this file first —
costs nothing until a name is used: a command-line tool or a worker does not import
LlamaIndex, psycopg or the ONNX runtime unless it uses them.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
