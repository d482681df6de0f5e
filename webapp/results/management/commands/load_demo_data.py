"""Fill the database with synthetic history (nodes 'synthetic-NN', site 'synthetic')."""

from django.core.management.base import BaseCommand, CommandParser
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from webapp.results import synthetic
from webapp.results.cache import data_changed
from webapp.results.choices import CampaignState, Trigger
from webapp.results.models import Campaign, Measurement, Node
from webapp.results.services.measurements import IngestResult, measurements_ingest


class Command(BaseCommand):
    help = (
        "Load SYNTHETIC measurement history (site 'synthetic'), replacing earlier synthetic data."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--nodes", type=int, default=6, help="number of nodes (default 6)")
        parser.add_argument("--days", type=int, default=14, help="days of history (default 14)")
        parser.add_argument("--seed", type=int, default=4)

    def handle(self, *args, nodes: int, days: int, seed: int, **options) -> None:
        if nodes < 2 or days < 1:
            self.stderr.write("need --nodes >= 2 and --days >= 1")
            raise SystemExit(2)
        with transaction.atomic():
            Measurement.objects.filter(
                Q(src__site=synthetic.SITE) | Q(dst__site=synthetic.SITE)
            ).delete()
            Campaign.objects.filter(schedule=synthetic.SCHEDULE).delete()
            Node.objects.filter(site=synthetic.SITE).delete()
        stored = 0
        end = timezone.now()
        for campaign in synthetic.synthetic_history(nodes=nodes, days=days, end=end, seed=seed):
            Campaign.objects.create(
                uuid=campaign.uuid,
                trigger=Trigger.SCHEDULE,
                schedule=synthetic.SCHEDULE,
                started=campaign.started,
                finished=campaign.finished,
                state=CampaignState.FINISHED,
            )
            results = measurements_ingest(payloads=campaign.measurements)
            stored += sum(1 for r in results if isinstance(r, IngestResult) and r.created)
        Node.objects.filter(name__startswith="synthetic-").update(
            site=synthetic.SITE, labels={"synthetic": "true"}
        )
        data_changed()
        self.stdout.write(
            f"loaded {stored} SYNTHETIC measurements ({nodes} nodes, {days} days, "
            f"site '{synthetic.SITE}')"
        )
