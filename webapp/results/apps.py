from django.apps import AppConfig


class ResultsConfig(AppConfig):
    name = "results"
    verbose_name = "Benchmark results"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from results import cache  # noqa: F401  (connects the data-version signals)
