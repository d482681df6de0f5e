"""What a pair's TPC throughput is read against (the paper's Section 2): link baselines, what
the link between two nodes carries (iperf3, memory to memory)."""

import uuid as uuid_lib

from django.db import models
from django.db.models import F, Q


class Baseline(models.Model):
    """One link baseline: iperf3 with N streams from src to dst, memory to memory; a failed
    one keeps its error and no throughput."""

    uuid = models.UUIDField(unique=True, default=uuid_lib.uuid4)
    campaign = models.ForeignKey(
        "results.Campaign",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="baselines",
    )
    src = models.ForeignKey(
        "results.Node", on_delete=models.PROTECT, related_name="baselines_as_src"
    )
    dst = models.ForeignKey(
        "results.Node", on_delete=models.PROTECT, related_name="baselines_as_dst"
    )
    tool = models.CharField(max_length=32)
    streams = models.PositiveIntegerField()
    duration_s = models.PositiveIntegerField()
    # The first seconds iperf3 leaves out of its figure (--omit): slow start, not the link.
    omit_s = models.PositiveIntegerField(default=0)
    # TCP retransmissions the sender counted over the test; null: not reported.
    retransmits = models.PositiveBigIntegerField(null=True, blank=True)
    started = models.DateTimeField()
    finished = models.DateTimeField(null=True, blank=True)
    throughput_gbps = models.FloatField(null=True, blank=True)
    error = models.TextField(blank=True, default="")
    received = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-started", "-id"]
        constraints = [
            models.CheckConstraint(name="baseline_src_not_dst", condition=~Q(src=F("dst"))),
            models.CheckConstraint(name="baseline_streams_positive", condition=Q(streams__gte=1)),
            models.CheckConstraint(
                name="baseline_throughput_not_negative",
                condition=Q(throughput_gbps__isnull=True) | Q(throughput_gbps__gte=0),
            ),
        ]
        # A measurement's reference: the pair's latest successful baseline before it.
        indexes = [models.Index(fields=["src", "dst", "started"], name="baseline_pair_started")]

    def __str__(self) -> str:
        figure = (
            f"{self.throughput_gbps:.2f} Gbps" if self.throughput_gbps is not None else "failed"
        )
        return f"{self.src_id}->{self.dst_id} {self.tool} x{self.streams}: {figure}"
