"""Logging in and out of the workspace: Django's session login with CSRF, under the API's
login limits (:mod:`portal.login_guard` counts this form's attempts like the admins')."""

from __future__ import annotations

from django.contrib.auth import views as auth_views


class LoginView(auth_views.LoginView):
    """Any active user of the tenant logs in here (staff too; the admin has its own form)."""

    template_name = "workspace/login.html"
    redirect_authenticated_user = True
    next_page = "workspace:collections"  # a URL name: resolve_url reverses it


class LogoutView(auth_views.LogoutView):
    """Log out (a POST with the CSRF token, as Django requires) and show the login form."""

    next_page = "workspace:login"
