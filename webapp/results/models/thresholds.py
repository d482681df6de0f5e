"""The grid's colour thresholds an admin sets: per protocol, source and destination."""

from django.db import models
from django.db.models import F, Q

from webapp.results.choices import Protocol
from webapp.results.models.measurements import Node


class Threshold(models.Model):
    """Grid colour thresholds for a protocol, optionally for one source and/or destination.

    The most specific row wins: (src, dst) over src-only or dst-only over protocol-wide; without
    any row the defaults apply: fractions of the pair's link capacity when a node's is known
    (OK >= 30%, WARNING >= 10% of the smaller link), else OK >= 30 Gbps, WARNING >= 10 Gbps.
    """

    protocol = models.CharField(max_length=16, choices=Protocol.choices)
    src = models.ForeignKey(
        Node, on_delete=models.CASCADE, null=True, blank=True, related_name="thresholds_as_src"
    )
    dst = models.ForeignKey(
        Node, on_delete=models.CASCADE, null=True, blank=True, related_name="thresholds_as_dst"
    )
    ok_gbps = models.FloatField()
    warning_gbps = models.FloatField()

    class Meta:
        ordering = ["protocol", "src__name", "dst__name"]
        constraints = [
            models.UniqueConstraint(
                fields=["protocol", "src", "dst"],
                name="threshold_unique_protocol_src_dst",
                nulls_distinct=False,
            ),
            models.CheckConstraint(
                name="threshold_ok_above_warning",
                condition=Q(ok_gbps__gte=F("warning_gbps")) & Q(warning_gbps__gte=0),
            ),
        ]

    def __str__(self) -> str:
        scope = f"{self.src or '*'}->{self.dst or '*'}"
        return f"{self.protocol} {scope}: OK>={self.ok_gbps} WARNING>={self.warning_gbps}"
