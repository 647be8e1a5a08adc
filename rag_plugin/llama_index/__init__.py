"""LlamaIndex adapters for ``rag_plugin``: node parsers, embeddings and retrievers."""
