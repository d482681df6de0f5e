"""Writes of preliminary runs with their points: idempotent by the client's uuid like
measurements, a replay answered 200 and a conflicting re-use 409."""

from django.db import IntegrityError, transaction

from webapp.results.cache import data_changed
from webapp.results.models import PrelimPoint, PrelimRun
from webapp.results.services.nodes import nodes_ensure
from webapp.results.services.uuid_conflicts import Stored, UuidConflict, same_or_conflict

POINT_FIELDS = (
    "method", "file_size", "concurrency", "throughput_gbps", "makespan_gbps", "succeeded",
    "failed", "error",
)  # fmt: skip


def _run_content(run: PrelimRun) -> tuple:
    points = sorted(tuple(getattr(p, f) for f in POINT_FIELDS) for p in run.points.all())
    return (run.kind, run.node.name, run.streams, run.started, run.finished, points)


def prelim_run_ingest(*, payload: dict) -> Stored:
    """Store one validated preliminary run with its points."""
    points = sorted(tuple(p[f] for f in POINT_FIELDS) for p in payload["points"])
    incoming = (
        payload["kind"], payload["node"], payload["streams"], payload["started"],
        payload["finished"], points,
    )  # fmt: skip
    for _ in range(2):
        existing = PrelimRun.objects.select_related("node").prefetch_related("points")
        if (found := existing.filter(uuid=payload["uuid"]).first()) is not None:
            same_or_conflict("preliminary run", payload["uuid"], _run_content(found), incoming)
            return Stored(found, False)
        node = nodes_ensure(names=[payload["node"]])[payload["node"]]
        try:
            with transaction.atomic():
                run = PrelimRun.objects.create(
                    uuid=payload["uuid"],
                    kind=payload["kind"],
                    node=node,
                    streams=payload["streams"],
                    started=payload["started"],
                    finished=payload["finished"],
                )
                PrelimPoint.objects.bulk_create(
                    PrelimPoint(run=run, **{f: p[f] for f in POINT_FIELDS})
                    for p in payload["points"]
                )
        except IntegrityError:
            continue
        data_changed()
        return Stored(run, True)
    raise UuidConflict(f"preliminary run {payload['uuid']} could not be stored; try again")
