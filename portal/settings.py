"""Django settings, all from the environment (SPEC O2).

Every knob has a documented default. The defaults are production's: ``DEBUG`` is off unless
``DJANGO_DEBUG=true`` (which ``make run`` sets for the local demo), and without DEBUG a
``DJANGO_SECRET_KEY`` is required. Behind HTTPS, ``DJANGO_HTTPS=true`` turns on secure
cookies, the HTTPS redirect and HSTS, and ``DJANGO_TRUST_X_FORWARDED_PROTO=true`` tells Django
that the proxy's ``X-Forwarded-Proto`` says whether a request came in over HTTPS; with them
``manage.py check --deploy`` passes (README "Production").
"""

from __future__ import annotations

import ipaddress
import os
from pathlib import Path

from psycopg.conninfo import conninfo_to_dict

from portal.embedded_db import database_url

BASE_DIR = Path(__file__).resolve().parent.parent


def env_bool(name: str, default: bool) -> bool:
    """Read a boolean environment variable (1/true/yes/on, case-insensitive)."""
    value = os.environ.get(name)
    if value is None or not value.strip():
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_list(name: str, default: list[str]) -> list[str]:
    """Read a comma-separated environment variable."""
    value = os.environ.get(name)
    if value is None or not value.strip():
        return default
    return [item.strip() for item in value.split(",") if item.strip()]


DEBUG = env_bool("DJANGO_DEBUG", False)
# The built-in key only ever serves a local DEBUG deployment; anything else sets its own.
LOCAL_SECRET_KEY = "local-development-only-key-do-not-deploy"  # noqa: S105 (refused below)
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY") or (LOCAL_SECRET_KEY if DEBUG else "")
if not SECRET_KEY or (SECRET_KEY == LOCAL_SECRET_KEY and not DEBUG):
    raise RuntimeError(
        "Set DJANGO_SECRET_KEY (a long random string): it is required, and the built-in "
        "local key refused, unless DJANGO_DEBUG=true (the local demo: make run)."
    )

# HTTPS deployments (DJANGO_HTTPS=true): cookies only over HTTPS, every plain-HTTP request
# redirected (but /health, which load balancers probe over HTTP), HSTS for a year.
HTTPS = env_bool("DJANGO_HTTPS", False)
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = SECURE_SSL_REDIRECT = HTTPS
SECURE_REDIRECT_EXEMPT = [r"^health$"]
SECURE_HSTS_SECONDS = int(os.environ.get("DJANGO_HSTS_SECONDS", "31536000" if HTTPS else "0"))
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("DJANGO_HSTS_INCLUDE_SUBDOMAINS", HTTPS)
SECURE_HSTS_PRELOAD = env_bool("DJANGO_HSTS_PRELOAD", HTTPS)
# Only behind a proxy that sets X-Forwarded-Proto itself (and drops a client's).
if env_bool("DJANGO_TRUST_X_FORWARDED_PROTO", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

# ``.localhost`` covers every tenant host of the local deployment (acme.localhost, ...).
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", ["localhost", ".localhost", "127.0.0.1"])
CSRF_TRUSTED_ORIGINS = env_list(
    "DJANGO_CSRF_TRUSTED_ORIGINS", ["http://localhost:8000", "http://*.localhost:8000"]
)

SHARED_APPS = [
    "django_tenants",
    "tenants",
    "portal",
    "django.contrib.contenttypes",
    "django.contrib.auth",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.admin",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI assets served locally: works offline
    # The ingestion job queue: its tables live in the public schema, shared by every tenant.
    "procrastinate.contrib.django",
]
# Users, sessions and admin log live in each tenant's schema (SPEC T2).
TENANT_APPS = [
    "django.contrib.contenttypes",
    "django.contrib.auth",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.admin",
    "tenants",
]
INSTALLED_APPS = SHARED_APPS + [app for app in TENANT_APPS if app not in SHARED_APPS]

TENANT_MODEL = "tenants.Tenant"
TENANT_DOMAIN_MODEL = "tenants.Domain"
# SET search_path once per tenant switch instead of before every cursor (3 of the 6 round trips
# of an API request were repeats of it); django-tenants forgets the cached path on
# set_tenant, rollback and savepoint rollback, so a reused connection never keeps a stale one.
TENANT_LIMIT_SET_CALLS = True
PUBLIC_SCHEMA_NAME = "public"

MIDDLEWARE = [
    # Serves /metrics (to the operator only) and counts and times every other request.
    "portal.metrics.MetricsMiddleware",
    # An id for every request, which error responses and their log lines carry.
    "portal.middleware.RequestIdMiddleware",
    # Rejects oversized bodies before any work, even the tenant lookup.
    "portal.middleware.BodySizeLimitMiddleware",
    # Rejects a NUL in the URL, which would otherwise reach the database.
    "portal.middleware.UrlTextMiddleware",
    # Before everything that touches the database: picks the tenant schema from the Host.
    "django_tenants.middleware.main.TenantMainMiddleware",
    # With DATABASE_REPLICA_URLS: a request's reads see its user's last write, and its own
    # writes become their mark (portal/rag/consistency.py).
    "portal.rag.consistency.ReadYourWritesMiddleware",
    "django.middleware.security.SecurityMiddleware",
    # Serves the admin's and Swagger UI's static files from the app process itself.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # Both limits of portal/login_guard.py on the admin sites' and the workspace's login forms.
    "portal.login_guard.AdminLoginGuardMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "portal.urls_tenants"
PUBLIC_SCHEMA_URLCONF = "portal.urls_public"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

WSGI_APPLICATION = "portal.wsgi.application"


def _database_settings(url: str) -> dict[str, object]:
    """Translate a libpq URL (``postgresql://...``, socket hosts included) to Django's form."""
    params = conninfo_to_dict(url)
    known = {"dbname", "user", "password", "host", "port"}
    return {
        "ENGINE": "portal.database",  # django-tenants' backend: portal/database/base.py
        "NAME": params.get("dbname", "postgres"),
        "USER": params.get("user", ""),
        "PASSWORD": params.get("password", ""),
        "HOST": params.get("host", ""),
        "PORT": params.get("port", ""),
        "CONN_MAX_AGE": int(os.environ.get("DJANGO_CONN_MAX_AGE", "60")),
        "CONN_HEALTH_CHECKS": True,
        "OPTIONS": {key: value for key, value in params.items() if key not in known},
    }


DATABASES = {"default": _database_settings(database_url())}
# One alias per standby of DATABASE_REPLICA_URLS (see RAG["REPLICAS"] below): only the reads
# that portal/rag/consistency.py's on_standby marks go there, never a write or a migration.
for _position, _url in enumerate(env_list("DATABASE_REPLICA_URLS", [])):
    _replica = _database_settings(_url)
    _replica["OPTIONS"] = {"connect_timeout": 2, **_replica["OPTIONS"]}  # type: ignore[dict-item]
    DATABASES[f"replica_{_position}"] = {**_replica, "TEST": {"MIRROR": "default"}}
DATABASE_ROUTERS = [
    "portal.rag.consistency.ReplicaRouter",
    "django_tenants.routers.TenantSyncRouter",
]

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
# Serve straight from the apps' static folders: no collectstatic step to forget.
WHITENOISE_USE_FINDERS = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# The RAG settings block (SPEC O2): every key has a default; an empty environment is valid.
RAG = {
    # fastembed (the bundled offline model unless RAG_EMBEDDING_MODEL names another),
    # http (an OpenAI-compatible endpoint at RAG_EMBEDDING_URL), or fake (tests only).
    "EMBEDDER": os.environ.get("RAG_EMBEDDER", "fastembed"),
    "EMBEDDING_MODEL": os.environ.get("RAG_EMBEDDING_MODEL", ""),
    "EMBEDDING_URL": os.environ.get("RAG_EMBEDDING_URL", ""),
    # Threads of one process's fastembed model (ONNX); 0: one per core. Several ingestion
    # workers on one machine each take every core by default: give each cores / workers.
    "EMBEDDING_THREADS": int(os.environ.get("RAG_EMBEDDING_THREADS", "0")),
    "FAKE_DIMENSIONS": int(os.environ.get("RAG_FAKE_DIMENSIONS", "16")),
    "POOL_MAX_SIZE": int(os.environ.get("RAG_POOL_MAX_SIZE", "8")),
    # The answer endpoint's LLM: an OpenAI-compatible endpoint (base URL with /v1). Unset →
    # /api/rag/answer returns the context and sources with answer null.
    "LLM_URL": os.environ.get("RAG_LLM_URL", ""),
    "LLM_MODEL": os.environ.get("RAG_LLM_MODEL", ""),
    "LLM_API_KEY": os.environ.get("RAG_LLM_API_KEY", ""),
    "LLM_TIMEOUT_SECONDS": float(os.environ.get("RAG_LLM_TIMEOUT_SECONDS", "60")),
    # /api/rag/chat rewrites a follow-up question from the history with this prompt
    # ({chat_history}, {question}); empty: LlamaIndex's condense prompt.
    "CHAT_CONDENSE_PROMPT": os.environ.get("RAG_CHAT_CONDENSE_PROMPT", ""),
    # Where RAG data lives: postgres (each tenant's schema) or qdrant (RAG_QDRANT_URL, a
    # server or cluster; or RAG_QDRANT_PATH, a folder or :memory:, Qdrant in this one process).
    # Tenants are Qdrant namespaces; Django's data and the embedding cache stay in PostgreSQL.
    "STORE": os.environ.get("RAG_STORE", "postgres"),
    "QDRANT": {
        "URL": os.environ.get("RAG_QDRANT_URL", ""),
        # The name of the environment variable holding the API key (the seed's api_key_env).
        "API_KEY_ENV": os.environ.get("RAG_QDRANT_API_KEY_ENV", ""),
        "PATH": os.environ.get("RAG_QDRANT_PATH", ""),
        "PREFER_GRPC": os.environ.get("RAG_QDRANT_PREFER_GRPC", "").lower() in ("1", "true"),
        "PREFIX": os.environ.get("RAG_QDRANT_PREFIX", "rag"),
    },
    # Streaming standbys of the database (portal/rag/consistency.py): searches, context, chat
    # retrieval and document reads go to one that has replayed the user's own writes; every
    # write goes to the primary. Comma-separated libpq URLs; empty: everything on the primary.
    "REPLICAS": {
        "URLS": env_list("DATABASE_REPLICA_URLS", []),
        # A standby further behind the primary leaves the rotation until it catches up.
        "MAX_LAG_S": float(os.environ.get("RAG_REPLICA_MAX_LAG_S", "10")),
        # How long a read waits for a standby to replay the user's last write before it
        # reads on the primary instead.
        "WAIT_S": float(os.environ.get("RAG_REPLICA_WAIT_S", "0.2")),
        "CHECK_EVERY_S": float(os.environ.get("RAG_REPLICA_CHECK_EVERY_S", "1")),
    },
    "HNSW": {
        "hnsw_m": int(os.environ.get("RAG_HNSW_M", "16")),
        "hnsw_ef_construction": int(os.environ.get("RAG_HNSW_EF_CONSTRUCTION", "128")),
        "ef_search": int(os.environ.get("RAG_HNSW_EF_SEARCH", "100")),
    },
}
RAG_API = {
    "MAX_BODY_BYTES": int(os.environ.get("RAG_MAX_BODY_BYTES", str(2 * 1024 * 1024))),
    "TOKEN_TTL_SECONDS": int(os.environ.get("RAG_TOKEN_TTL_SECONDS", str(12 * 3600))),
    # The longest an API key may live (portal/rag/api_keys.py), and a new key's default.
    "API_KEY_MAX_DAYS": int(os.environ.get("RAG_API_KEY_MAX_DAYS", "365")),
    "API_KEY_DEFAULT_DAYS": int(os.environ.get("RAG_API_KEY_DEFAULT_DAYS", "90")),
    # Arrays and objects in a request body (portal/api/parsers.py): metadata nests at most 8.
    "MAX_JSON_DEPTH": int(os.environ.get("RAG_MAX_JSON_DEPTH", "32")),
    # Failed logins an account may have in the window, per tenant (portal/login_guard.py).
    "LOGIN_ACCOUNT_FAILURES": int(os.environ.get("RAG_LOGIN_ACCOUNT_FAILURES", "10")),
    "LOGIN_ACCOUNT_WINDOW_S": int(os.environ.get("RAG_LOGIN_ACCOUNT_WINDOW_S", "900")),
    # What one request may ask for (portal/api/serializers.py; README "Security").
    "MAX_QUERY_WORDS": int(os.environ.get("RAG_MAX_QUERY_WORDS", "128")),
    "MAX_CONTEXT_COLLECTIONS": int(os.environ.get("RAG_MAX_CONTEXT_COLLECTIONS", "20")),
    # A chat request's history: messages, and characters in each (portal/api/chat.py).
    "MAX_CHAT_MESSAGES": int(os.environ.get("RAG_MAX_CHAT_MESSAGES", "20")),
    "MAX_CHAT_MESSAGE_CHARS": int(os.environ.get("RAG_MAX_CHAT_MESSAGE_CHARS", "4000")),
    "MAX_BATCH_DOCUMENTS": int(os.environ.get("RAG_MAX_BATCH_DOCUMENTS", "100")),
    "MAX_BATCH_CONTENT_BYTES": int(
        os.environ.get("RAG_MAX_BATCH_CONTENT_BYTES", str(2 * 1024 * 1024))
    ),
    # The Retry-After of a 503 DATABASE_UNAVAILABLE (portal/api/errors.py): about how long a
    # crash-restarted PostgreSQL takes to accept connections again.
    "DATABASE_RETRY_AFTER_S": int(os.environ.get("RAG_DATABASE_RETRY_AFTER_S", "5")),
}
# Ingestion jobs (SPEC J1-J3; portal/rag/jobs.py, the worker: manage.py rag_worker).
RAG_JOBS = {
    # An ingest request whose content is larger than this runs as a job even without "async".
    "SYNC_MAX_BYTES": int(os.environ.get("RAG_JOB_SYNC_MAX_BYTES", str(256 * 1024))),
    # Runs of one job before it stays failed (its last error kept).
    "MAX_ATTEMPTS": int(os.environ.get("RAG_JOB_MAX_ATTEMPTS", "3")),
    # Seconds between a failed run and the next (times the run's number).
    "RETRY_DELAY_S": float(os.environ.get("RAG_JOB_RETRY_DELAY_S", "5")),
    # A worker writes a heartbeat this often; one silent for STALLED_AFTER_S is taken for dead
    # and its jobs run again elsewhere.
    "HEARTBEAT_S": float(os.environ.get("RAG_JOB_HEARTBEAT_S", "5")),
    "STALLED_AFTER_S": float(os.environ.get("RAG_JOB_STALLED_AFTER_S", "30")),
    # An idle worker asks the queue for a job this often besides being woken when one is
    # submitted or its collection's previous job ends (PostgreSQL notifications).
    "POLL_S": float(os.environ.get("RAG_JOB_POLL_S", "2")),
}
# Uploaded files (SPEC F1-F3; portal/api/files.py, parsed by the jobs in a child process).
RAG_FILES = {
    # The most bytes one upload request may carry (its files and form together): refused with
    # 413 from its Content-Length, before the body is read.
    "MAX_UPLOAD_BYTES": int(os.environ.get("RAG_MAX_UPLOAD_BYTES", str(50 * 1024 * 1024))),
    "MAX_FILES": int(os.environ.get("RAG_MAX_UPLOAD_FILES", "20")),
    # Parsing one file: pages, seconds (wall and CPU) and memory of the parser's process.
    "MAX_PAGES": int(os.environ.get("RAG_MAX_FILE_PAGES", "2000")),
    "TIMEOUT_S": float(os.environ.get("RAG_FILE_TIMEOUT_S", "120")),
    "MEMORY_MB": int(os.environ.get("RAG_FILE_MEMORY_MB", "1024")),
    # OCR of pages without a text layer, where Tesseract is installed.
    "OCR": os.environ.get("RAG_FILE_OCR", "true").lower() != "false",
}
# GET /metrics (portal/metrics.py): never public; a bearer token, or addresses (CIDRs), or
# both. Every process counts into PROMETHEUS_MULTIPROC_DIR where it is set (gunicorn workers
# and ingestion workers alike; empty it when the deployment starts).
# Off: no /metrics and no per-request counting (bench/api_load.py --metrics-off measures what
# they cost); the operator's choice, on by default.
RAG_METRICS_ENABLED = env_bool("RAG_METRICS_ENABLED", True)
RAG_METRICS = {
    "TOKEN": os.environ.get("RAG_METRICS_TOKEN", ""),
    "ADDRESSES": [
        str(ipaddress.ip_network(address, strict=False))
        for address in env_list("RAG_METRICS_ADDRESSES", [])
    ],
}
if not RAG_METRICS_ENABLED:
    MIDDLEWARE.remove("portal.metrics.MetricsMiddleware")
# The audit log (portal/rag/audit.py): events older than this many days are deleted by
# `manage.py rag_audit_prune` (run it daily, e.g. from cron).
RAG_AUDIT_RETENTION_DAYS = int(os.environ.get("RAG_AUDIT_RETENTION_DAYS", "365"))
# The worker's connections come from Django's database settings; tasks live in one module.
PROCRASTINATE_IMPORT_PATHS = ["portal.rag.job_runner"]
PROCRASTINATE_AUTODISCOVER_MODULE_NAME = ""
DATA_UPLOAD_MAX_MEMORY_SIZE = RAG_API["MAX_BODY_BYTES"]

REST_FRAMEWORK = {
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["portal.api.parsers.StrictJSONParser"],
    "DEFAULT_AUTHENTICATION_CLASSES": ["portal.api.authentication.BearerTokenAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "portal.api.schema.PortalAutoSchema",
    "EXCEPTION_HANDLER": "portal.api.errors.api_exception_handler",
    "DEFAULT_THROTTLE_RATES": {
        "login": os.environ.get("RAG_LOGIN_RATE", "10/minute"),
        "admin_login": os.environ.get("RAG_LOGIN_RATE", "10/minute"),
        # Per user, e.g. "600/minute"; unset: no limit (portal/throttling.py).
        "search": os.environ.get("RAG_SEARCH_RATE") or None,
        "chat": os.environ.get("RAG_CHAT_RATE") or None,
        "ingest": os.environ.get("RAG_INGEST_RATE") or None,
    },
    # Proxies in front of the app that append to X-Forwarded-For; 0: the header is ignored
    # and throttles key on the connection's address (a client cannot choose its own).
    "NUM_PROXIES": int(os.environ.get("RAG_TRUSTED_PROXIES", "0")),
    "UNAUTHENTICATED_USER": None,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "RAG portal API",
    "DESCRIPTION": "Ingest and search user-scoped collections of a tenant.",
    "VERSION": "1.0.0",
    # 3.1: full JSON Schema, so the schema can state key rules (propertyNames) and null.
    "OAS_VERSION": "3.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "SERVE_AUTHENTICATION": [],
    # bearerAuth comes from portal.api.authentication.BearerTokenScheme, per operation.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "portal.api.schema.json_components",
    ],
}

# Login throttle counters must be shared by every app process: keep them in PostgreSQL.
CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.db.DatabaseCache",
        "LOCATION": "portal_cache",
    }
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"},
        "json": {"()": "portal.log.JsonFormatter"},
    },
    "handlers": {
        "console": {"class": "logging.StreamHandler", "formatter": "plain"},
        "structured": {"class": "logging.StreamHandler", "formatter": "json"},
    },
    "root": {"handlers": ["console"], "level": os.environ.get("DJANGO_LOG_LEVEL", "INFO")},
    # pgserver narrates every start and stop of the embedded server at INFO.
    "loggers": {
        "pgserver": {"level": "WARNING"},
        # One JSON line per ingest/search/delete (SPEC O3).
        "portal.rag": {"handlers": ["structured"], "level": "INFO", "propagate": False},
    },
}
