from django.apps import AppConfig


class DashboardConfig(AppConfig):
    """The human-facing pages; all data comes through `results` selectors."""

    name = "webapp.dashboard"
    label = "dashboard"
    verbose_name = "Dashboard"
