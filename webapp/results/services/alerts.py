"""Alert evaluation (docs/alerts.md): the checks of new measurements against their own
recent median and the grid's critical limit, their states and state changes stored.

Per batch of measurements, whatever its size: the alerts of its checks (one query), the
checks' medians before the batch (one query per hour the batch spans), the nodes' links and
the thresholds (two), then the writes (bulk). After an ingest it runs in its own transaction
once the measurements are stored: a failure is logged and the measurements stay.
"""

import logging
from collections.abc import Sequence
from datetime import timedelta

from django.db import IntegrityError, transaction

from webapp.results.alert_rules import AlertRules, next_state, verdict
from webapp.results.cache import data_changed
from webapp.results.grid.queries import limits_resolvers
from webapp.results.models import Alert, AlertChange, Measurement, Node
from webapp.results.models.alerts import CHECK_FIELDS, AlertState
from webapp.results.services.notifications import StateChange, notify_later
from webapp.results.vendor_sql import grouped_medians, update_rows

log = logging.getLogger(__name__)

# A batch spanning longer is taken in parts, each with its own medians' window.
MEDIAN_SLICE = timedelta(hours=1)
_ALERT_FIELDS = (
    "state", "since", "reason", "acknowledged", "verdicts", "last_measurement",
    "last_started", "last_throughput_gbps", "last_success",
)  # fmt: skip


def check_key(measurement: Measurement) -> tuple:
    return tuple(getattr(measurement, field) for field in CHECK_FIELDS)


def _slices(measurements: list[Measurement]) -> list[list[Measurement]]:
    """The measurements (in time order) cut where a part would span more than MEDIAN_SLICE."""
    parts: list[list[Measurement]] = []
    for m in measurements:
        if parts and m.started - parts[-1][0].started <= MEDIAN_SLICE:
            parts[-1].append(m)
        else:
            parts.append([m])
    return parts


def _medians(part: list[Measurement], rules: AlertRules) -> dict[tuple, tuple[float, int]]:
    """Each check's median throughput over `rules.days` before the part's first measurement
    (the part itself left out). One query."""
    first = part[0].started
    window = Measurement.objects.filter(
        started__gte=first - timedelta(days=rules.days),
        started__lt=first,
        src_id__in={m.src_id for m in part},
        dst_id__in={m.dst_id for m in part},
        protocol__in={m.protocol for m in part},
        succeeded__gt=0,
    )
    return grouped_medians(window, CHECK_FIELDS, "throughput_gbps")


def _existing_alerts(measurements: list[Measurement]) -> dict[tuple, Alert]:
    keys = {check_key(m) for m in measurements}
    found = Alert.objects.select_for_update().filter(
        src_id__in={k[0] for k in keys},
        dst_id__in={k[1] for k in keys},
        protocol__in={k[2] for k in keys},
    )
    return {alert.check_key(): alert for alert in found if alert.check_key() in keys}


def _new_alert(m: Measurement) -> Alert:
    fields = dict(zip(CHECK_FIELDS, check_key(m), strict=True))
    return Alert(**fields, state=AlertState.OK, since=m.started, last_started=m.started)


def _node_names(alerts: list[Alert]) -> dict[int, str]:
    ids = {a.src_id for a in alerts} | {a.dst_id for a in alerts}
    return dict(Node.objects.filter(id__in=ids).values_list("id", "name"))


def alerts_evaluate(
    *, measurements: Sequence[Measurement], rules: AlertRules | None = None
) -> list[StateChange]:
    """Evaluate the checks of `measurements` (stored ones), in time order; returns the state
    changes. A measurement older than its check's newest evaluated one is skipped (the
    state follows time; `manage.py evaluate_alerts --reset` recomputes from the start)."""
    rules = rules or AlertRules.from_settings()
    ordered = sorted(measurements, key=lambda m: (m.started, m.pk))
    if not ordered:
        return []
    with transaction.atomic():
        alerts = _existing_alerts(ordered)
        created: dict[tuple, Alert] = {}
        nodes = {m.src_id for m in ordered} | {m.dst_id for m in ordered}
        links = dict(Node.objects.filter(id__in=nodes).values_list("id", "link_gbps"))
        resolvers = limits_resolvers(sorted({m.protocol for m in ordered}), links)
        changes: list[tuple[Alert, AlertChange]] = []
        touched: set[tuple] = set()
        for part in _slices(ordered):
            medians = _medians(part, rules)
            for m in part:
                key = check_key(m)
                alert = alerts.get(key) or created.get(key)
                if alert is None:
                    alert = created[key] = _new_alert(m)
                elif (m.started, m.pk) <= (alert.last_started, alert.last_measurement_id or 0):
                    continue  # evaluated already, or older than the newest evaluated
                change = _step(alert, m, medians.get(key), resolvers[m.protocol][1], rules)
                touched.add(key)
                if change is not None:
                    changes.append((alert, change))
        Alert.objects.bulk_create(list(created.values()))
        update_rows([alerts[k] for k in touched if k in alerts], _ALERT_FIELDS)
        for alert, change in changes:
            change.alert = alert
        AlertChange.objects.bulk_create([c for _, c in changes])
        if changes:
            data_changed()  # the grid marks alerting cells
        names = _node_names([a for a, _ in changes])
    return [_describe(alert, change, names) for alert, change in changes]


def _step(alert: Alert, m: Measurement, median, resolve, rules: AlertRules) -> AlertChange | None:
    """Apply one measurement to its alert; the change it makes, if any."""
    found = verdict(
        succeeded=m.succeeded,
        failed=m.failed,
        throughput_gbps=m.throughput_gbps,
        median=median,
        limits=resolve(m.src_id, m.dst_id),
        rules=rules,
    )
    alert.last_measurement_id = m.pk
    alert.last_started = m.started
    alert.last_throughput_gbps = m.throughput_gbps
    if m.succeeded:
        alert.last_success = m.finished
    if found is None:
        return None
    alert.verdicts = [*alert.verdicts, str(found.state)][-rules.in_a_row :]
    new = next_state(alert.state, alert.verdicts, rules)
    if new is None:
        return None
    reason = f"{rules.in_a_row} measurements in a row; the last: {found.reason}"
    change = AlertChange(
        measurement_id=m.pk, at=m.started, from_state=alert.state, to_state=new, reason=reason
    )
    # kept on the change for the notification: acknowledged before this change
    change.was_acknowledged = alert.acknowledged
    alert.state, alert.since, alert.reason = new, m.started, reason
    if new == AlertState.OK:
        alert.acknowledged = False
    return change


def _describe(alert: Alert, change: AlertChange, names: dict[int, str]) -> StateChange:
    check = {
        "protocol": alert.protocol,
        "streams": alert.streams,
        "auth": alert.auth,
        "client": alert.client,
        "checksum": alert.checksum,
        "scope": alert.scope,
    }
    return StateChange(
        alert_id=alert.pk,
        src=names.get(alert.src_id, str(alert.src_id)),
        dst=names.get(alert.dst_id, str(alert.dst_id)),
        check=check,
        from_state=change.from_state,
        to_state=change.to_state,
        at=change.at,
        reason=change.reason,
        acknowledged=change.was_acknowledged,
    )


def alerts_after_ingest(*, measurements: Sequence[Measurement]) -> list[StateChange]:
    """alerts_evaluate for an ingest, and the notifications of its changes after the commit;
    never raises: the measurements are stored whatever happens here."""
    try:
        try:
            changes = alerts_evaluate(measurements=measurements)
        except IntegrityError:
            # A concurrent ingest made one of these checks' first alert: read them again.
            changes = alerts_evaluate(measurements=measurements)
    except Exception:
        log.exception("alert evaluation of %d measurements failed", len(measurements))
        return []
    if changes:
        notify_later(changes)
    return changes
