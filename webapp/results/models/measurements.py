"""What was measured: nodes, campaigns, measurements and their transfers."""

import uuid as uuid_lib

from django.db import models
from django.db.models import F, Q

from webapp.results.choices import (
    Auth,
    CampaignState,
    Checksum,
    Client,
    ErrorClass,
    Outcome,
    Protocol,
    Scope,
    Trigger,
)

# What the grids and plots aggregate: the covering indexes carry them, so a windowed
# aggregate reads no table row.
AGGREGATED_COLUMNS = [
    "src", "dst", "streams", "throughput_gbps", "rtt_ms", "succeeded", "failed", "finished",
    "src_site", "dst_site", "hosts",
]  # fmt: skip
MAX_HOSTS = 1000  # a site's data servers a scaling sweep may spread its transfers over
SITE_NAME_LENGTH = 8  # choices.SITE_NAME_PATTERN
SERVER_LENGTH = 261  # "host:port": a DNS name (253), ':' and a port; or [IPv6]:port
# The RTT check's rule (orchestrator/campaign/rtt_check.py holds the same): 1 ms or 5%
# of the target.
RTT_TOLERANCE_MS = 1.0
RTT_TOLERANCE_FRACTION = 0.05


class Node(models.Model):
    """A storage server under test (one per 100 Gbps Kubernetes node, or one lab server)."""

    name = models.CharField(max_length=253, unique=True)
    address = models.CharField(max_length=255, blank=True, default="")
    site = models.CharField(max_length=100, blank=True, default="")
    labels = models.JSONField(default=dict, blank=True)
    # The node's link capacity as the orchestrator reports it (lab --link-capacity, a node
    # label on a cluster); the grid's default thresholds are fractions of it.
    link_gbps = models.FloatField(null=True, blank=True)
    first_seen = models.DateTimeField(auto_now_add=True)
    last_seen = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Campaign(models.Model):
    """One sweep over every ordered pair, protocol and stream setting."""

    uuid = models.UUIDField(unique=True, default=uuid_lib.uuid4, editable=False)
    trigger = models.CharField(max_length=16, choices=Trigger.choices, default=Trigger.SCHEDULE)
    schedule = models.CharField(max_length=100, blank=True, default="")
    started = models.DateTimeField(null=True, blank=True)
    finished = models.DateTimeField(null=True, blank=True)
    state = models.CharField(
        max_length=16, choices=CampaignState.choices, default=CampaignState.PENDING
    )
    # The emulated WAN's promise checked before measuring (lab --rtt): one entry per ordered
    # pair, {src, dst, target_ms, measured_ms, within_target}; empty without targets.
    rtt_checks = models.JSONField(default=list, blank=True)
    # What the orchestrator counted (docs/orchestrator.md, Fitting the cycle): measurements
    # planned in this cycle, done (every transfer succeeded), failed, missed (not begun before
    # the next cycle's start) and late (ended after it); null: not said (an older orchestrator).
    planned = models.PositiveIntegerField(null=True, blank=True)
    done = models.PositiveIntegerField(null=True, blank=True)
    failed = models.PositiveIntegerField(null=True, blank=True)
    missed = models.PositiveIntegerField(null=True, blank=True)
    late = models.PositiveIntegerField(null=True, blank=True)
    # How the campaign fitted its cycle (all of it, a rotation's part k, shortened), with its
    # estimate: the orchestrator's journal entry as it sent it; null: not said.
    cycle_fit = models.JSONField(null=True, blank=True)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created", "-id"]
        constraints = [
            models.CheckConstraint(
                name="campaign_finished_after_started",
                condition=Q(finished__isnull=True)
                | Q(started__isnull=True)
                | Q(finished__gte=F("started")),
            ),
        ]
        indexes = [models.Index(fields=["state", "-finished"], name="campaign_state_finished")]

    def __str__(self) -> str:
        return f"{self.uuid} ({self.state})"


class Measurement(models.Model):
    """K concurrent TPC transfers of one file from src to dst with one protocol and stream count.

    throughput_gbps, makespan_gbps, succeeded and failed are derived from the transfers by the
    server (services.measurement_ingest); clients' figures are not trusted.
    """

    uuid = models.UUIDField(unique=True)
    campaign = models.ForeignKey(
        Campaign, on_delete=models.SET_NULL, null=True, blank=True, related_name="measurements"
    )
    src = models.ForeignKey(Node, on_delete=models.PROTECT, related_name="measurements_as_src")
    dst = models.ForeignKey(Node, on_delete=models.PROTECT, related_name="measurements_as_dst")
    protocol = models.CharField(max_length=16, choices=Protocol.choices)
    # Dimensions of a measurement like the protocol: the grid shows one (auth, client,
    # checksum) at a time.
    auth = models.CharField(max_length=16, choices=Auth.choices, default=Auth.X509)
    client = models.CharField(max_length=16, choices=Client.choices, default=Client.NATIVE)
    # Whether each transfer ended with the checksum step (phase "checksum") and with which.
    checksum = models.CharField(max_length=16, choices=Checksum.choices, default=Checksum.NONE)
    # Host to host (today's), or site to site through the sites' redirectors; the sites of
    # its ends (null: the lab or cluster has no sites). The grid is site x site when any
    # measurement has sites (docs/dashboard.md).
    scope = models.CharField(max_length=8, choices=Scope.choices, default=Scope.HOST)
    src_site = models.CharField(max_length=SITE_NAME_LENGTH, null=True, blank=True)
    dst_site = models.CharField(max_length=SITE_NAME_LENGTH, null=True, blank=True)
    # A site-scope measurement's host count: null, through the sites' fronts (the
    # redirectors chose the data servers; and every host-scope one); m, a point of the
    # scaling sweep (the K transfers spread round-robin over m host pairs, addressed to the
    # hosts directly). The site grid reads the fronts' only: a sweep point is not the site's
    # figure.
    hosts = models.PositiveIntegerField(null=True, blank=True)
    streams = models.PositiveIntegerField()
    # K; the name "transfers" is the related manager of Transfer rows.
    transfer_count = models.PositiveIntegerField()
    file_size = models.BigIntegerField()
    rtt_ms = models.FloatField(null=True, blank=True)
    # What an emulated WAN promised for this pair (lab --rtt); the RTT check compares rtt_ms.
    rtt_target_ms = models.FloatField(null=True, blank=True)
    # The largest TCP buffer one stream of this pair may use (the smaller of the sender's
    # tcp_wmem and the receiver's tcp_rmem maximum) when the orchestrator knows it (the lab
    # sets it): one stream carries at most about that much per round trip.
    tcp_buffer_bytes = models.PositiveBigIntegerField(null=True, blank=True)
    throughput_gbps = models.FloatField(null=True, blank=True)
    makespan_gbps = models.FloatField(null=True, blank=True)
    succeeded = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)
    started = models.DateTimeField()
    finished = models.DateTimeField()
    # sha256 of the canonical payload: tells a retry (200) from a conflicting re-use (409).
    payload_sha256 = models.CharField(max_length=64, editable=False)
    received = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-started", "-id"]
        constraints = [
            models.CheckConstraint(name="measurement_src_not_dst", condition=~Q(src=F("dst"))),
            models.CheckConstraint(
                name="measurement_finished_after_started", condition=Q(finished__gte=F("started"))
            ),
            models.CheckConstraint(
                name="measurement_streams_positive", condition=Q(streams__gte=1)
            ),
            models.CheckConstraint(
                name="measurement_file_size_positive", condition=Q(file_size__gt=0)
            ),
            models.CheckConstraint(
                name="measurement_hosts_of_a_site",
                condition=Q(hosts__isnull=True)
                | Q(scope=Scope.SITE, hosts__gte=1, hosts__lte=MAX_HOSTS),
            ),
            models.CheckConstraint(
                name="measurement_rtt_not_negative",
                condition=Q(rtt_ms__isnull=True) | Q(rtt_ms__gte=0),
            ),
            models.CheckConstraint(
                name="measurement_rtt_target_not_negative",
                condition=Q(rtt_target_ms__isnull=True) | Q(rtt_target_ms__gte=0),
            ),
        ]
        indexes = [
            # Windowed aggregates (grid, latency plot, stream comparison) scan only this index;
            # they read one (auth, client, checksum) at a time, so those are keys before the time.
            # The scope too: the site grid reads one scope at a time, the host grid hosts'.
            models.Index(
                fields=["protocol", "auth", "client", "checksum", "scope", "started"],
                name="measurement_protocol_started",
                include=AGGREGATED_COLUMNS,
            ),
            models.Index(
                fields=["campaign", "protocol", "auth", "client", "checksum", "scope"],
                name="measurement_campaign_protocol",
                include=AGGREGATED_COLUMNS,
            ),
            # The grids' failure reasons: all-failed measurements are few, and rare in a window.
            models.Index(
                fields=["protocol", "started"],
                name="measurement_all_failed",
                condition=Q(succeeded=0, failed__gt=0),
            ),
            # The sites measured (the grid page asks on every rebuild): only rows with sites,
            # so a database without any answers from an empty index.
            models.Index(
                fields=["src_site", "dst_site"],
                name="measurement_sites",
                condition=Q(src_site__isnull=False) | Q(dst_site__isnull=False),
            ),
            models.Index(fields=["src", "dst", "started"], name="measurement_pair_started"),
            models.Index(fields=["started"], name="measurement_started"),
        ]

    @property
    def rtt_within_target(self) -> bool | None:
        """The orchestrator's RTT check: within 1 ms or 5% of the target (None: no target)."""
        if self.rtt_target_ms is None:
            return None
        if self.rtt_ms is None:
            return False
        tolerance = max(RTT_TOLERANCE_MS, RTT_TOLERANCE_FRACTION * self.rtt_target_ms)
        return abs(self.rtt_ms - self.rtt_target_ms) <= tolerance

    def __str__(self) -> str:
        when = f"{self.started:%Y-%m-%d %H:%M}"
        return f"{self.src_id}->{self.dst_id} {self.protocol}x{self.streams} {when}"


class Transfer(models.Model):
    """One of the K transfers of a measurement: its own timing, bytes and outcome."""

    measurement = models.ForeignKey(Measurement, on_delete=models.CASCADE, related_name="transfers")
    index = models.PositiveIntegerField()
    start = models.DateTimeField()
    end = models.DateTimeField()
    bytes = models.BigIntegerField()
    outcome = models.CharField(max_length=16, choices=Outcome.choices)
    error_class = models.CharField(max_length=32, choices=ErrorClass.choices, null=True, blank=True)
    message = models.TextField(blank=True, default="")
    # Where its time went (docs/measurements.md): phase name -> seconds, adding up to its
    # duration; and the rate after the first progress (null: no progress seen).
    phases = models.JSONField(default=dict, blank=True)
    streaming_gbps = models.FloatField(null=True, blank=True)
    # The data servers that served each end ("host:port" as the client saw it; null: not
    # learned) and the redirects followed to reach them (phase "redirect").
    source_server = models.CharField(max_length=SERVER_LENGTH, null=True, blank=True)
    destination_server = models.CharField(max_length=SERVER_LENGTH, null=True, blank=True)
    redirects = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["measurement", "index"]
        constraints = [
            models.UniqueConstraint(
                fields=["measurement", "index"], name="transfer_unique_measurement_index"
            ),
            models.CheckConstraint(
                name="transfer_end_after_start", condition=Q(end__gte=F("start"))
            ),
            models.CheckConstraint(name="transfer_bytes_not_negative", condition=Q(bytes__gte=0)),
            models.CheckConstraint(
                name="transfer_redirects_not_negative", condition=Q(redirects__gte=0)
            ),
            models.CheckConstraint(
                name="transfer_streaming_gbps_not_negative",
                condition=Q(streaming_gbps__isnull=True) | Q(streaming_gbps__gte=0),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.measurement_id}#{self.index} {self.outcome}"


# A transfer as it is stored and as the API shows it, in this order (its measurement aside).
TRANSFER_FIELDS = (
    "index", "start", "end", "bytes", "outcome", "error_class", "message", "phases",
    "streaming_gbps", "source_server", "destination_server", "redirects",
)  # fmt: skip
