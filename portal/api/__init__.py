"""The REST API: authentication, error contract and thin views over portal.rag."""
