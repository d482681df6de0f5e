"""Writes of measurements: ingest, single and bulk, idempotent by the client's uuid.

Derived figures are recomputed here from the transfers, never taken from the client:
  throughput = K_ok * S * 8 / mean(duration of successful transfers) / 1e9   (Gbit/s)
  makespan   = K_ok * S * 8 / (last end - first start of successful transfers) / 1e9
both None when no transfer succeeded.
"""

import hashlib
import json
import uuid as uuid_lib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from django.db import IntegrityError, transaction

from webapp.results.cache import data_changed
from webapp.results.choices import Auth, Checksum, Client, Outcome, Scope
from webapp.results.models import Campaign, Measurement, Node, Transfer
from webapp.results.services.alerts import alerts_after_ingest
from webapp.results.services.campaigns import campaigns_ensure
from webapp.results.services.nodes import node_links_update, node_sites_update, nodes_ensure
from webapp.results.vendor_sql import insert_transfers


class MeasurementConflict(Exception):
    """A measurement with this uuid exists with different content."""


@dataclass(frozen=True)
class DerivedFigures:
    throughput_gbps: float | None
    makespan_gbps: float | None
    succeeded: int
    failed: int


@dataclass(frozen=True)
class IngestResult:
    measurement: Measurement
    created: bool


def derived_figures(*, file_size: int, transfers: Sequence[dict]) -> DerivedFigures:
    """The paper's throughput and the makespan throughput from the successful transfers."""
    ok = [t for t in transfers if t["outcome"] == Outcome.SUCCESS]
    failed = len(transfers) - len(ok)
    if not ok:
        return DerivedFigures(None, None, 0, failed)
    bits = len(ok) * file_size * 8
    mean_duration = sum((t["end"] - t["start"]).total_seconds() for t in ok) / len(ok)
    span = (max(t["end"] for t in ok) - min(t["start"] for t in ok)).total_seconds()
    throughput = bits / mean_duration / 1e9 if mean_duration > 0 else None
    makespan = bits / span / 1e9 if span > 0 else None
    return DerivedFigures(throughput, makespan, len(ok), failed)


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat()


def _transfer_fingerprint(transfer: dict) -> list:
    entry = [
        transfer["index"],
        _iso(transfer["start"]),
        _iso(transfer["end"]),
        transfer["bytes"],
        transfer["outcome"],
        transfer.get("error_class"),
        transfer.get("message", ""),
    ]
    # Only when given: a payload without them keeps the sum stored before they existed.
    extra = {}
    if transfer.get("phases"):
        extra["phases"] = transfer["phases"]
    if transfer.get("streaming_gbps") is not None:
        extra["streaming_gbps"] = transfer["streaming_gbps"]
    for key in ("source_server", "destination_server"):
        if transfer.get(key) is not None:
            extra[key] = transfer[key]
    if transfer.get("redirects"):
        extra["redirects"] = transfer["redirects"]
    if extra:
        entry.append(extra)
    return entry


def payload_fingerprint(payload: dict) -> str:
    """sha256 of what we store from a payload (the client's derived figures are ignored)."""
    canonical = {
        "uuid": str(payload["uuid"]),
        "campaign": str(payload["campaign"]) if payload.get("campaign") else None,
        "src": payload["src"],
        "dst": payload["dst"],
        "protocol": payload["protocol"],
        "streams": payload["streams"],
        "file_size": payload["file_size"],
        "rtt_ms": payload.get("rtt_ms"),
        "started": _iso(payload["started"]),
        "finished": _iso(payload["finished"]),
        "transfers": [
            _transfer_fingerprint(t) for t in sorted(payload["transfers"], key=lambda t: t["index"])
        ],
    }
    # Absent at their defaults: older sums stay valid.
    if payload.get("rtt_target_ms") is not None:
        canonical["rtt_target_ms"] = payload["rtt_target_ms"]
    if payload.get("tcp_buffer_bytes") is not None:
        canonical["tcp_buffer_bytes"] = payload["tcp_buffer_bytes"]
    if payload.get("auth", Auth.X509) != Auth.X509:
        canonical["auth"] = payload["auth"]
    if payload.get("client", Client.NATIVE) != Client.NATIVE:
        canonical["client"] = payload["client"]
    if payload.get("checksum", Checksum.NONE) != Checksum.NONE:
        canonical["checksum"] = payload["checksum"]
    if payload.get("scope", Scope.HOST) != Scope.HOST:
        canonical["scope"] = payload["scope"]
    for key in ("src_site", "dst_site", "hosts"):
        if payload.get(key) is not None:
            canonical[key] = payload[key]
    text = json.dumps(canonical, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass
class _Row:
    """A measurement about to be inserted, with its transfers."""

    measurement: Measurement
    transfers: list[Transfer]


def _build(
    *,
    payload: dict,
    fingerprint: str,
    nodes: dict[str, Node],
    campaigns: dict[uuid_lib.UUID, Campaign],
) -> _Row:
    figures = derived_figures(file_size=payload["file_size"], transfers=payload["transfers"])
    campaign = payload.get("campaign")
    measurement = Measurement(
        uuid=payload["uuid"],
        campaign=campaigns[campaign] if campaign else None,
        src=nodes[payload["src"]],
        dst=nodes[payload["dst"]],
        protocol=payload["protocol"],
        auth=payload.get("auth") or Auth.X509,
        client=payload.get("client") or Client.NATIVE,
        checksum=payload.get("checksum") or Checksum.NONE,
        scope=payload.get("scope") or Scope.HOST,
        src_site=payload.get("src_site"),
        dst_site=payload.get("dst_site"),
        hosts=payload.get("hosts"),
        streams=payload["streams"],
        transfer_count=len(payload["transfers"]),
        file_size=payload["file_size"],
        rtt_ms=payload.get("rtt_ms"),
        rtt_target_ms=payload.get("rtt_target_ms"),
        tcp_buffer_bytes=payload.get("tcp_buffer_bytes"),
        throughput_gbps=figures.throughput_gbps,
        makespan_gbps=figures.makespan_gbps,
        succeeded=figures.succeeded,
        failed=figures.failed,
        started=payload["started"],
        finished=payload["finished"],
        payload_sha256=fingerprint,
    )
    transfers = [
        Transfer(
            index=t["index"],
            start=t["start"],
            end=t["end"],
            bytes=t["bytes"],
            outcome=t["outcome"],
            error_class=t.get("error_class"),
            message=t.get("message") or "",
            phases=t.get("phases") or {},
            streaming_gbps=t.get("streaming_gbps"),
            source_server=t.get("source_server"),
            destination_server=t.get("destination_server"),
            redirects=t.get("redirects") or 0,
        )
        for t in payload["transfers"]
    ]
    return _Row(measurement, transfers)


def _insert(rows: Sequence[_Row]) -> None:
    """An INSERT of the measurements (the database returns their ids), then their transfers."""
    Measurement.objects.bulk_create([r.measurement for r in rows])
    transfers = []
    for row in rows:
        for transfer in row.transfers:
            transfer.measurement = row.measurement
            transfers.append(transfer)
    insert_transfers(transfers)
    data_changed()


def _conflict(uuid: uuid_lib.UUID) -> MeasurementConflict:
    return MeasurementConflict(
        f"measurement {uuid} already exists with different content; a new measurement "
        "needs a new uuid"
    )


def _existing(uuid: uuid_lib.UUID, fingerprint: str) -> Measurement | None:
    existing = (
        Measurement.objects.filter(uuid=uuid).select_related("src", "dst", "campaign").first()
    )
    if existing is not None and existing.payload_sha256 != fingerprint:
        raise _conflict(uuid)
    return existing


def measurement_ingest(*, payload: dict) -> IngestResult:
    """Store one validated measurement payload; the same payload again creates nothing.

    Raises MeasurementConflict when the uuid exists with different content.
    """
    result = measurements_ingest(payloads=[payload])[0]
    if isinstance(result, MeasurementConflict):
        raise result
    return result


def measurements_ingest(*, payloads: Sequence[dict]) -> list[IngestResult | MeasurementConflict]:
    """Store validated payloads; per item an IngestResult (created or not) or a conflict.

    Each measurement is stored whole or not at all: the batch goes in as one transaction of
    two INSERTs; if that fails (a concurrent ingest of the same uuid), each measurement is
    retried in its own transaction. Nodes, campaigns and stored uuids are looked up once.
    """
    fingerprints = [payload_fingerprint(p) for p in payloads]
    stored = {
        m.uuid: m
        for m in Measurement.objects.filter(uuid__in=[p["uuid"] for p in payloads]).select_related(
            "src", "dst", "campaign"
        )
    }
    fresh: dict[uuid_lib.UUID, tuple[dict, str]] = {}
    for payload, fingerprint in zip(payloads, fingerprints, strict=True):
        if payload["uuid"] not in stored:
            fresh.setdefault(payload["uuid"], (payload, fingerprint))
    if fresh:
        nodes = nodes_ensure(names=[n for p, _ in fresh.values() for n in (p["src"], p["dst"])])
        node_links_update(payloads=[p for p, _ in fresh.values()])
        node_sites_update(payloads=[p for p, _ in fresh.values()])
        first_seen: dict[uuid_lib.UUID, datetime] = {}
        for p, _ in fresh.values():
            if p.get("campaign"):
                first_seen.setdefault(p["campaign"], p["started"])
        campaigns = campaigns_ensure(first_seen=first_seen)
        rows = {
            uuid: _build(payload=p, fingerprint=f, nodes=nodes, campaigns=campaigns)
            for uuid, (p, f) in fresh.items()
        }
        created = _insert_all_or_each(rows, stored)
        if created:  # their checks' alerts (never failing the ingest: logged)
            alerts_after_ingest(measurements=[stored[uuid] for uuid in created])
    else:
        created = set()

    results: list[IngestResult | MeasurementConflict] = []
    answered: set[uuid_lib.UUID] = set()
    for payload, fingerprint in zip(payloads, fingerprints, strict=True):
        uuid = payload["uuid"]
        previous = stored.get(uuid)
        if isinstance(previous, MeasurementConflict) or (
            previous is not None and previous.payload_sha256 != fingerprint
        ):
            results.append(_conflict(uuid))
        elif uuid in created and uuid not in answered:
            results.append(IngestResult(previous, created=True))
        else:  # stored before, or the same uuid earlier in this batch: a retry
            results.append(IngestResult(previous, created=False))
        answered.add(uuid)
    return results


def _insert_all_or_each(rows: dict[uuid_lib.UUID, _Row], stored: dict) -> set[uuid_lib.UUID]:
    """Insert rows, recording each in `stored`; returns the uuids this call created."""
    try:
        with transaction.atomic():
            _insert(list(rows.values()))
    except IntegrityError:
        created = set()
        for uuid, row in rows.items():
            row.measurement.pk = None
            try:
                with transaction.atomic():
                    _insert([row])
            except IntegrityError:
                # Lost a race with a concurrent ingest of the same uuid: a retry or a conflict.
                try:
                    existing = _existing(uuid, row.measurement.payload_sha256)
                except MeasurementConflict as conflict:
                    stored[uuid] = conflict
                    continue
                if existing is None:
                    raise
                stored[uuid] = existing
                continue
            stored[uuid] = row.measurement
            created.add(uuid)
        return created
    for uuid, row in rows.items():
        stored[uuid] = row.measurement
    return set(rows)
