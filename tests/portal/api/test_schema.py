"""The OpenAPI schema and docs match the server (SPEC A6)."""

from __future__ import annotations

import re

from tests.conftest import PortalServer

ACME = "acme.localhost"


def test_openapi_schema_lists_every_route_with_its_methods(portal_server: PortalServer) -> None:
    with portal_server.client(ACME) as client:
        response = client.get("/api/schema", headers={"Accept": "application/json"})
    assert response.status_code == 200
    schema = response.json()
    assert schema["openapi"].startswith("3.")
    methods = {path: set(ops) & {"get", "post", "delete"} for path, ops in schema["paths"].items()}
    assert methods == {
        "/api/auth/login": {"post"},
        "/api/auth/keys": {"get", "post"},
        "/api/auth/keys/{key_id}": {"delete"},
        "/api/rag/ingest": {"post"},
        "/api/rag/ingest/batch": {"post"},
        "/api/rag/search": {"post"},
        "/api/rag/collections": {"get"},
        "/api/rag/collection": {"delete"},
        "/api/rag/collections/{collection}/documents": {"get"},
        "/api/rag/documents/{document_id}": {"get", "delete"},
        "/api/rag/documents/{document_id}/file": {"get"},
        "/api/rag/documents/{document_id}/reindex": {"post"},
        "/api/rag/files": {"post"},
        "/api/rag/context": {"post"},
        "/api/rag/answer": {"post"},
        "/api/rag/chat": {"post"},
        "/api/rag/jobs": {"get"},
        "/api/rag/jobs/{job_id}": {"get"},
        "/api/rag/jobs/{job_id}/cancel": {"post"},
        "/api/rag/jobs/{job_id}/retry": {"post"},
        "/api/rag/jobs/{job_id}/events": {"get"},
    }
    ingest = schema["components"]["schemas"]["IngestInput"]
    assert set(ingest["required"]) == {"collection", "content"}
    batch = schema["components"]["schemas"]["IngestBatchInput"]
    assert set(batch["required"]) == {"collection", "documents"}
    documents = batch["properties"]["documents"]
    assert (documents["minItems"], documents["maxItems"]) == (1, 100)
    assert documents["items"]["$ref"].endswith("/IngestDocumentInput")
    assert schema["components"]["securitySchemes"]["bearerAuth"] == {
        "type": "http",
        "scheme": "bearer",
    }
    # What the server enforces, the schema says (schemathesis found these missing).
    collection = schema["components"]["schemas"]["SearchInput"]["properties"]["collection"]
    assert (collection["minLength"], collection["maxLength"]) == (1, 63)
    assert collection["pattern"] == "^[A-Za-z_][A-Za-z0-9_]*$"
    listing = schema["paths"]["/api/rag/collections/{collection}/documents"]["get"]
    limit = next(p for p in listing["parameters"] if p["name"] == "limit")["schema"]
    assert (limit["minimum"], limit["maximum"]) == (1, 1000)
    assert {"400", "401"} <= set(schema["paths"]["/api/rag/collections"]["get"]["responses"])
    components = schema["components"]["schemas"]
    query = components["SearchInput"]["properties"]["query"]
    assert query["minLength"] == 1
    # "Not only whitespace" is whitespace as DRF trims it (str.strip), not ECMAScript's \s.
    only_whitespace = re.compile(query["not"]["pattern"])
    assert [c for c in map(chr, range(0x3001)) if only_whitespace.fullmatch(c)] == [
        c for c in map(chr, range(0x3001)) if c.isspace()
    ]
    assert components["SearchInput"]["additionalProperties"] is False
    assert "hybrid" in components["StrategyEnum"]["enum"]
    assert components["LoginInput"]["anyOf"] == [
        {"required": ["username"]},
        {"required": ["email"]},
    ]
    for name in ("ContextInput", "ChatInput"):
        assert components[name]["oneOf"] == [
            {"required": ["profile"]},
            {"required": ["collections"]},
        ]
    chat = components["ChatInput"]
    assert "query" not in chat["properties"]
    assert chat["required"] == ["messages"]
    assert chat["properties"]["messages"]["maxItems"] == 20
    assert components["ChatMessageInput"]["properties"]["content"]["maxLength"] == 4000
    assert components["RoleEnum"]["enum"] == ["user", "assistant"]
    assert {"MetadataFilters", "MetadataFilterGroup", "MetadataFilter", "EqualityFilters"} <= set(
        components
    )
    delete = schema["paths"]["/api/rag/collection"]["delete"]["requestBody"]
    assert delete["content"]["application/json"]["schema"]["$ref"].endswith(
        "/CollectionDeleteInput"
    )
    # The login needs no token; every other operation says it needs one (the chat also takes
    # the workspace's login session, SPEC U1, which API clients have no use for).
    assert schema["paths"]["/api/auth/login"]["post"].get("security", []) in ([], [{}])
    for path, operations in schema["paths"].items():
        if path.startswith("/api/rag/"):
            for operation in operations.values():
                assert operation["security"] == [{"bearerAuth": []}], path


def test_interactive_docs_are_served(portal_server: PortalServer) -> None:
    with portal_server.client(ACME) as client:
        response = client.get("/api/docs")
    assert response.status_code == 200
    assert "swagger" in response.text.lower()
