from django.apps import AppConfig


class PortalConfig(AppConfig):
    """The portal as an app: its management commands (bootstrap_demo) and admin pages."""

    name = "portal"
    default_auto_field = "django.db.models.BigAutoField"
