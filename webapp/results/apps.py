from django.apps import AppConfig


class ResultsConfig(AppConfig):
    name = "results"
    verbose_name = "Benchmark results"
    default_auto_field = "django.db.models.BigAutoField"
