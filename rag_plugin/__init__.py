"""The rag_plugin library."""
