from django.apps import AppConfig


class DashboardConfig(AppConfig):
    """The human-facing pages; all data comes through `results` selectors."""

    name = "dashboard"
    verbose_name = "Dashboard"
