"""Alerts: one per check (the measurements of one src, dst, protocol, streams, auth,
client, checksum and scope), its state and the state changes (docs/alerts.md)."""

from django.db import models
from django.db.models import F, Q

from webapp.results.choices import Auth, Checksum, Client, Protocol, Scope
from webapp.results.models.measurements import Measurement, Node

# What a check is: the fields its measurements share (the integrator's contract).
CHECK_FIELDS = ("src_id", "dst_id", "protocol", "streams", "auth", "client", "checksum", "scope")


class AlertState(models.TextChoices):
    OK = "ok", "OK"
    WARNING = "warning", "Warning: below its recent median"
    CRITICAL = "critical", "Critical: below the critical limit, or all transfers failed"


# The metrics' and the grid's number of a state (Prometheus gauges take numbers).
STATE_VALUES = {AlertState.OK: 0, AlertState.WARNING: 1, AlertState.CRITICAL: 2}


class Alert(models.Model):
    """The alert state of one check, from its measurements in time order.

    `verdicts` holds the latest measurements' own verdicts (newest last, as many as a change
    needs): the state changes when all of them agree (docs/alerts.md)."""

    src = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="alerts_as_src")
    dst = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="alerts_as_dst")
    protocol = models.CharField(max_length=16, choices=Protocol.choices)
    streams = models.PositiveIntegerField()
    auth = models.CharField(max_length=16, choices=Auth.choices, default=Auth.X509)
    client = models.CharField(max_length=16, choices=Client.choices, default=Client.NATIVE)
    checksum = models.CharField(max_length=16, choices=Checksum.choices, default=Checksum.NONE)
    scope = models.CharField(max_length=8, choices=Scope.choices, default=Scope.HOST)
    state = models.CharField(max_length=16, choices=AlertState.choices, default=AlertState.OK)
    # When the state last changed (the first evaluation, for a check always OK), and why.
    since = models.DateTimeField()
    reason = models.TextField(blank=True, default="")
    # An operator's "I know": no notifications until the check is OK again (then cleared).
    acknowledged = models.BooleanField(default=False)
    verdicts = models.JSONField(default=list, blank=True)
    # The newest measurement evaluated: its start, throughput (null: none succeeded).
    last_measurement = models.ForeignKey(
        Measurement, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    last_started = models.DateTimeField()
    last_throughput_gbps = models.FloatField(null=True, blank=True)
    last_success = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["src__name", "dst__name", "protocol", "streams", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["src", "dst", "protocol", "streams", "auth", "client", "checksum", "scope"],
                name="alert_unique_check",
            ),
            models.CheckConstraint(
                name="alert_state_known", condition=Q(state__in=AlertState.values)
            ),
            models.CheckConstraint(name="alert_src_not_dst", condition=~Q(src=F("dst"))),
        ]
        indexes = [models.Index(fields=["state", "since"], name="alert_state_since")]

    def check_key(self) -> tuple:
        return tuple(getattr(self, field) for field in CHECK_FIELDS)

    def __str__(self) -> str:
        return f"{self.src_id}->{self.dst_id} {self.protocol}x{self.streams}: {self.state}"


class AlertChange(models.Model):
    """One state change of an alert: from, to, when (the measurement's start) and why."""

    alert = models.ForeignKey(Alert, on_delete=models.CASCADE, related_name="changes")
    measurement = models.ForeignKey(
        Measurement, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    at = models.DateTimeField()
    from_state = models.CharField(max_length=16, choices=AlertState.choices)
    to_state = models.CharField(max_length=16, choices=AlertState.choices)
    reason = models.TextField(blank=True, default="")
    recorded = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-at", "-id"]
        constraints = [
            models.CheckConstraint(
                name="alertchange_changes_state", condition=~Q(from_state=F("to_state"))
            ),
        ]
        indexes = [models.Index(fields=["alert", "-at"], name="alertchange_alert_at")]

    def __str__(self) -> str:
        return f"{self.alert_id}: {self.from_state} -> {self.to_state} at {self.at:%Y-%m-%d %H:%M}"
