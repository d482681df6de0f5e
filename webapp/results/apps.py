from django.apps import AppConfig


class ResultsConfig(AppConfig):
    name = "webapp.results"
    label = "results"  # the tables, migrations and permissions keep their names
    verbose_name = "Benchmark results"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.db.models.signals import post_migrate

        from webapp.results import cache  # noqa: F401  (connects the data-version signals)
        from webapp.results.api.permissions import reporters_group_sync

        # after the permissions exist (contenttypes and auth hook post_migrate first)
        post_migrate.connect(reporters_group_sync, sender=self)
