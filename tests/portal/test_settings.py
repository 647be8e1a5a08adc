"""Production-safe settings: DEBUG off by default, no built-in key outside DEBUG, and the
README's production variables pass ``manage.py check --deploy`` (issue 16, item 4)."""

from __future__ import annotations

import os
import subprocess
import sys

from portal import launch
from portal.embedded_db import database_url

LOCAL_KEY = "local-development-only-key-do-not-deploy"
STRONG_KEY = "k3y-" + "x7Qp9" * 12
# Variables that would leak in from the machine running the tests.
OURS = ("DJANGO_DEBUG", "DJANGO_SECRET_KEY", "DJANGO_HTTPS", "DJANGO_TRUST_X_FORWARDED_PROTO")


def run_python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in OURS}
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=launch.PROJECT_ROOT,
        env={**clean, "DATABASE_URL": database_url(), **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


SHOW = "import portal.settings as s; print(s.DEBUG, s.SESSION_COOKIE_SECURE, s.SECURE_HSTS_SECONDS)"


def test_without_any_setting_debug_is_off_and_a_key_is_required() -> None:
    result = run_python(SHOW)
    assert result.returncode != 0
    assert "Set DJANGO_SECRET_KEY" in result.stderr


def test_the_local_demo_runs_with_debug_and_the_built_in_key() -> None:
    result = run_python(SHOW, DJANGO_DEBUG="true")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True", "False", "0"]


def test_the_built_in_key_is_refused_outside_debug() -> None:
    result = run_python(SHOW, DJANGO_SECRET_KEY=LOCAL_KEY)
    assert result.returncode != 0
    assert "the built-in local key refused" in result.stderr


def test_https_turns_on_secure_cookies_and_hsts() -> None:
    result = run_python(SHOW, DJANGO_SECRET_KEY=STRONG_KEY, DJANGO_HTTPS="true")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", "True", "31536000"]


def test_the_readmes_production_variables_pass_check_deploy() -> None:
    env = {
        "DJANGO_SECRET_KEY": STRONG_KEY,
        "DJANGO_ALLOWED_HOSTS": ".example.com",
        "DJANGO_HTTPS": "true",
        "DJANGO_TRUST_X_FORWARDED_PROTO": "true",
    }
    result = run_python(
        "import sys; from manage import main;"
        " sys.argv = ['manage.py', 'check', '--deploy', '--fail-level', 'WARNING']; main()",
        **env,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_metrics_are_counted_unless_the_operator_turns_them_off() -> None:
    show = "import portal.settings as s; print('portal.metrics.MetricsMiddleware' in s.MIDDLEWARE)"
    assert run_python(show, DJANGO_DEBUG="true").stdout.split() == ["True"]
    off = run_python(show, DJANGO_DEBUG="true", RAG_METRICS_ENABLED="false")
    assert off.stdout.split() == ["False"], off.stderr
