"""Redirector lookups (issue 23): one request for a file from an entry redirector, followed
through the redirects it answered to the data server that holds the file, timed per step."""

from django.db import models
from django.db.models import Q

from webapp.results.choices import ErrorClass, LookupLevel, Outcome, Protocol
from webapp.results.models.measurements import SERVER_LENGTH, SITE_NAME_LENGTH, Campaign


class Lookup(models.Model):
    """A lookup as `tpcbench campaign run --lookups` reports it. hops and seconds are the
    server's, from the steps (services.lookups): hops = steps - 1 (the redirects followed),
    seconds = the steps' sum when the lookup succeeded (null when it failed)."""

    uuid = models.UUIDField(unique=True)
    campaign = models.ForeignKey(
        Campaign, on_delete=models.SET_NULL, null=True, blank=True, related_name="lookups"
    )
    protocol = models.CharField(max_length=16, choices=Protocol.choices)
    # The redirector first asked ("<site>-rdr", "regional", "global"), the level the file
    # was found from, and the site whose data server holds it.
    entry = models.CharField(max_length=253)
    level = models.CharField(max_length=16, choices=LookupLevel.choices)
    site = models.CharField(max_length=SITE_NAME_LENGTH)
    # The RTT between the entry redirector and that site (0 or null: no WAN latency).
    level_rtt_ms = models.FloatField(null=True, blank=True)
    started = models.DateTimeField()
    seconds = models.FloatField(null=True, blank=True)
    hops = models.PositiveIntegerField()
    # [{"server": "host:port", "seconds": s}, ...]: each request in order, the last to the
    # data server.
    steps = models.JSONField(default=list)
    data_server = models.CharField(max_length=SERVER_LENGTH, null=True, blank=True)
    outcome = models.CharField(max_length=16, choices=Outcome.choices)
    error_class = models.CharField(max_length=32, choices=ErrorClass.choices, null=True, blank=True)
    message = models.TextField(blank=True, default="")
    received = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-started", "-id"]
        constraints = [
            models.CheckConstraint(
                name="lookup_seconds_not_negative",
                condition=Q(seconds__isnull=True) | Q(seconds__gte=0),
            ),
            models.CheckConstraint(
                name="lookup_level_rtt_not_negative",
                condition=Q(level_rtt_ms__isnull=True) | Q(level_rtt_ms__gte=0),
            ),
        ]
        indexes = [
            # The hop-overhead table reads a window's lookups per level and protocol.
            models.Index(fields=["started"], name="lookup_started"),
            models.Index(fields=["campaign", "level"], name="lookup_campaign_level"),
        ]

    def __str__(self) -> str:
        return f"{self.entry} -> {self.site} ({self.level}, {self.protocol}) {self.outcome}"


# A lookup as it is stored and as the API shows it, in this order (its campaign aside).
LOOKUP_FIELDS = (
    "protocol", "entry", "level", "site", "level_rtt_ms", "started", "seconds", "hops",
    "steps", "data_server", "outcome", "error_class", "message",
)  # fmt: skip
