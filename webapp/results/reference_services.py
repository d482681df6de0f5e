"""Writes of the references (link baselines, preliminary runs): idempotent by the client's
uuid like measurements, a replay answered 200 and a conflicting re-use 409."""

import uuid as uuid_lib
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction

from webapp.results.cache import data_changed
from webapp.results.models import Baseline, PrelimPoint, PrelimRun
from webapp.results.services import campaigns_ensure, nodes_ensure


class ReferenceConflict(Exception):
    """A baseline or run with this uuid exists with different content."""


@dataclass(frozen=True)
class Stored:
    item: Any
    created: bool


BASELINE_FIELDS = (
    "tool",
    "streams",
    "duration_s",
    "started",
    "finished",
    "throughput_gbps",
    "error",
)
POINT_FIELDS = (
    "method", "file_size", "concurrency", "throughput_gbps", "makespan_gbps", "succeeded",
    "failed", "error",
)  # fmt: skip


def _baseline_content(b: Baseline) -> tuple:
    campaign = b.campaign.uuid if b.campaign_id else None
    return (campaign, b.src.name, b.dst.name, *(getattr(b, f) for f in BASELINE_FIELDS))


def _same_or_conflict(kind: str, uuid: uuid_lib.UUID, stored: tuple, incoming: tuple) -> None:
    if stored != incoming:
        raise ReferenceConflict(
            f"{kind} {uuid} already exists with different content; a new one needs a new uuid"
        )


def baseline_ingest(*, payload: dict) -> Stored:
    """Store one validated baseline; its nodes and campaign are made on first sight."""
    incoming = (
        payload["campaign"],
        payload["src"],
        payload["dst"],
        *(payload[f] for f in BASELINE_FIELDS),
    )
    for _ in range(2):  # a concurrent insert of the same uuid: read it back and compare
        existing = Baseline.objects.select_related("src", "dst", "campaign").filter(
            uuid=payload["uuid"]
        )
        if (found := existing.first()) is not None:
            _same_or_conflict("baseline", payload["uuid"], _baseline_content(found), incoming)
            return Stored(found, False)
        nodes = nodes_ensure(names=[payload["src"], payload["dst"]])
        campaign = payload["campaign"]
        campaigns = campaigns_ensure(first_seen={campaign: payload["started"]} if campaign else {})
        try:
            with transaction.atomic():
                baseline = Baseline.objects.create(
                    uuid=payload["uuid"],
                    campaign=campaigns.get(campaign) if campaign else None,
                    src=nodes[payload["src"]],
                    dst=nodes[payload["dst"]],
                    **{f: payload[f] for f in BASELINE_FIELDS},
                )
        except IntegrityError:
            continue
        data_changed()
        return Stored(baseline, True)
    raise ReferenceConflict(f"baseline {payload['uuid']} could not be stored; try again")


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
            _same_or_conflict("preliminary run", payload["uuid"], _run_content(found), incoming)
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
    raise ReferenceConflict(f"preliminary run {payload['uuid']} could not be stored; try again")
