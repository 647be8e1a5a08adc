"""The workspace (SPEC U1): the tenant's users' pages at the tenant's root.

Server-rendered Django templates with htmx for the parts that change in place (job progress,
the document list as one types, a cited passage); the chat page streams its answers from
the REST API's chat endpoint. Every view calls the business layer (``portal.rag``) as the API
does, so the workspace has exactly the API's permissions: the allowlist, the user's own
collections, the tenant's shared ones read-only.
"""
