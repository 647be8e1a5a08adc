"""The portal's RAG business logic: services (writes) and selectors (reads) per tenant."""
