"""What one node's servers can do (the paper's Section 2, Figures 3 and 4): preliminary runs,
concurrency or file size sweeps, and their points."""

import uuid as uuid_lib

from django.db import models
from django.db.models import Q

from webapp.results.choices import PrelimKind, PrelimMethod


class PrelimRun(models.Model):
    """One preliminary run on one node: a concurrency or a file size sweep."""

    uuid = models.UUIDField(unique=True, default=uuid_lib.uuid4)
    kind = models.CharField(max_length=16, choices=PrelimKind.choices)
    node = models.ForeignKey("results.Node", on_delete=models.PROTECT, related_name="prelim_runs")
    streams = models.PositiveIntegerField()
    started = models.DateTimeField()
    finished = models.DateTimeField(null=True, blank=True)
    received = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-started", "-id"]
        constraints = [
            models.CheckConstraint(name="prelim_run_streams_positive", condition=Q(streams__gte=1)),
        ]

    def __str__(self) -> str:
        return f"{self.kind} on {self.node_id} at {self.started:%Y-%m-%d %H:%M}"


class PrelimPoint(models.Model):
    """One point of a run: `concurrency` copies of a `file_size` file at once by `method`."""

    run = models.ForeignKey(PrelimRun, on_delete=models.CASCADE, related_name="points")
    method = models.CharField(max_length=16, choices=PrelimMethod.choices)
    file_size = models.BigIntegerField()
    concurrency = models.PositiveIntegerField()
    throughput_gbps = models.FloatField(null=True, blank=True)
    makespan_gbps = models.FloatField(null=True, blank=True)
    succeeded = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["run", "method", "file_size", "concurrency"]
        constraints = [
            models.UniqueConstraint(
                fields=["run", "method", "file_size", "concurrency"],
                name="prelim_point_unique_in_run",
            ),
            models.CheckConstraint(
                name="prelim_point_concurrency_positive", condition=Q(concurrency__gte=1)
            ),
            models.CheckConstraint(
                name="prelim_point_file_size_positive", condition=Q(file_size__gt=0)
            ),
        ]

    def __str__(self) -> str:
        return f"{self.run_id} {self.method} x{self.concurrency} {self.file_size} B"
