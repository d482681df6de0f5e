"""Evaluate the checks' alerts over stored measurements: a backfill after an upgrade, or
after changing the rules (TPCBENCH_ALERT_*) with --reset."""

from datetime import timedelta

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction
from django.utils import timezone

from webapp.results.models import Alert, Measurement
from webapp.results.services.alerts import alerts_evaluate

BATCH = 5000  # measurements per evaluation: one transaction each


class Command(BaseCommand):
    help = (
        "Evaluate the alerts of every check over the stored measurements in time order "
        "(those newer than each check's last evaluated one). No notifications are sent."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--reset",
            action="store_true",
            help="forget every alert and its changes first, and evaluate from the start",
        )
        parser.add_argument(
            "--days",
            type=float,
            default=None,
            help="only measurements of the last DAYS days (default: all)",
        )

    def handle(self, *args, reset: bool, days: float | None, **options) -> None:
        if days is not None and days <= 0:
            raise CommandError(f"--days must be positive (got {days:g})")
        if reset:
            with transaction.atomic():
                _, deleted = Alert.objects.all().delete()
            alerts, changes = (deleted.get(f"results.{m}", 0) for m in ("Alert", "AlertChange"))
            self.stdout.write(f"forgot {alerts} alerts and their {changes} state changes")
        rows = Measurement.objects.order_by("started", "id")
        if days is not None:
            rows = rows.filter(started__gte=timezone.now() - timedelta(days=days))
        evaluated = changes = 0
        last = None
        while True:
            page = (
                rows
                if last is None
                else rows.filter(started__gte=last[0]).exclude(started=last[0], id__lte=last[1])
            )
            batch = list(page[:BATCH])
            if not batch:
                break
            changes += len(alerts_evaluate(measurements=batch))
            evaluated += len(batch)
            last = (batch[-1].started, batch[-1].id)
        states = {s: Alert.objects.filter(state=s).count() for s in ("ok", "warning", "critical")}
        self.stdout.write(
            f"read {evaluated} measurements: {changes} state changes; alerts now "
            + ", ".join(f"{count} {state}" for state, count in states.items())
        )
