"""Tenants: the schema-per-tenant model, domains, and what tenant admins manage."""
