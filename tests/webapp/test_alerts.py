"""Alert evaluation on stored series (issue 24): a check's state from its measurements, the
changes stored, evaluation after each ingest (never failing it), one batch's queries."""

import logging
from datetime import timedelta

import pytest
from django.utils import timezone

from webapp.results.alert_rules import AlertRules, next_state, verdict
from webapp.results.grid.limits import Limits
from webapp.results.models import Alert, AlertChange, Measurement
from webapp.results.services import alerts as alert_service
from webapp.results.services.alerts import alerts_evaluate

LIMITS = Limits(ok_gbps=30.0, warning_gbps=10.0)  # the defaults without link capacities
RULES = AlertRules()


def test_a_measurements_verdict():
    def of(gbps, median=(40.0, 5), succeeded=3, failed=0):
        return verdict(
            succeeded=succeeded,
            failed=failed,
            throughput_gbps=gbps,
            median=median,
            limits=LIMITS,
            rules=RULES,
        )

    assert of(39.0).state == "ok"
    assert of(28.5).state == "ok"  # 71% of the median
    assert of(27.5).state == "warning"
    assert "below 70% of the 20-day median 40.00 Gbit/s (5 measurements)" in of(27.5).reason
    assert of(27.5, median=(40.0, 2)).state == "ok"  # too little history to judge
    assert of(27.5, median=None).state == "ok"
    assert of(9.0).state == "critical"
    assert "below the grid's critical limit 10.00" in of(9.0).reason
    failed = of(None, succeeded=0, failed=3)
    assert (failed.state, failed.reason) == ("critical", "all 3 transfers failed")
    assert of(None, succeeded=0, failed=0) is None


@pytest.mark.parametrize(
    ("state", "verdicts", "expected"),
    [
        ("ok", ["warning"], None),  # one is not enough
        ("ok", ["ok", "warning"], None),
        ("ok", ["warning", "warning"], "warning"),
        ("ok", ["critical", "critical"], "critical"),
        ("ok", ["critical", "warning"], "warning"),  # the mildest of two bad ones
        ("warning", ["warning", "critical"], None),
        ("warning", ["critical", "critical"], "critical"),
        ("critical", ["ok", "critical"], None),
        ("critical", ["ok", "ok"], "ok"),
        ("warning", ["ok", "ok"], "ok"),
    ],
)
def test_the_state_changes_when_the_last_verdicts_agree(state, verdicts, expected):
    assert next_state(state, verdicts, RULES) == expected


def hours_ago(hours: float):
    return timezone.now() - timedelta(hours=hours)


def series(store, values, *, start_hours: float = 200, step_hours: float = 12, **kwargs):
    """Store one check's measurements `values` (Gbit/s; None: all transfers failed)."""
    for i, gbps in enumerate(values):
        when = hours_ago(start_hours - i * step_hours)
        if gbps is None:
            store(gbps=1.0, failed=3, started=when, **kwargs)
        else:
            store(gbps=gbps, started=when, **kwargs)


def states(alert: Alert) -> list[tuple[str, str]]:
    return [(c.from_state, c.to_state) for c in alert.changes.order_by("at")]


@pytest.mark.django_db
def test_a_drop_below_the_median_warns_after_two_and_recovers_after_two(store):
    series(store, [40, 41, 39, 40, 25])
    alert = Alert.objects.get()
    assert alert.state == "ok" and alert.verdicts == ["ok", "warning"]
    series(store, [26], start_hours=100)
    alert.refresh_from_db()
    assert alert.state == "warning"
    assert alert.reason.startswith("2 measurements in a row; the last: 26.00 Gbit/s, below 70%")
    assert alert.since == Measurement.objects.order_by("-started")[0].started
    series(store, [40], start_hours=90)
    alert.refresh_from_db()
    assert alert.state == "warning"
    series(store, [41], start_hours=80)
    alert.refresh_from_db()
    assert alert.state == "ok"
    assert states(alert) == [("ok", "warning"), ("warning", "ok")]
    assert abs(alert.last_throughput_gbps - 41) < 0.01


@pytest.mark.django_db
def test_failures_and_the_critical_limit_make_a_check_critical(store):
    series(store, [40, None, None], dst="node-c")
    series(store, [40, 8, 7], dst="node-d")
    failed = Alert.objects.get(dst__name="node-c")
    slow = Alert.objects.get(dst__name="node-d")
    assert (failed.state, slow.state) == ("critical", "critical")
    assert failed.reason.endswith("all 3 transfers failed")
    assert "below the grid's critical limit 10.00 Gbit/s" in slow.reason
    # the last success is the first measurement's; the failed ones have no throughput
    first = Measurement.objects.filter(dst__name="node-c").order_by("started")[0]
    assert failed.last_success == first.finished and failed.last_throughput_gbps is None


@pytest.mark.django_db
def test_each_check_has_its_own_alert(store):
    series(store, [40, 40, 40, 40, 20, 20], streams=8)
    series(store, [10.5, 11, 10.5, 11, 11, 10.5], streams=1)  # slow but steady: OK
    series(store, [40, 40, 40, 40, 20, 20], streams=8, protocol="root")
    by_check = {(a.protocol, a.streams): a.state for a in Alert.objects.all()}
    assert by_check == {("https", 8): "warning", ("https", 1): "ok", ("root", 8): "warning"}
    assert AlertChange.objects.count() == 2


@pytest.mark.django_db
def test_a_late_measurement_is_not_evaluated_out_of_order(store):
    series(store, [40, 40, 40], start_hours=100)
    series(store, [5], start_hours=300)  # older than the newest evaluated
    alert = Alert.objects.get()
    assert alert.verdicts == ["ok", "ok"] and alert.state == "ok"


@pytest.mark.django_db
def test_a_failing_evaluation_is_logged_and_the_measurement_stored(store, monkeypatch, caplog):
    def broken(**_):
        raise RuntimeError("a bug in evaluation")

    monkeypatch.setattr(alert_service, "alerts_evaluate", broken)
    with caplog.at_level(logging.ERROR):
        store(gbps=40)  # asserts 201
    assert Measurement.objects.count() == 1 and not Alert.objects.exists()
    assert "alert evaluation of 1 measurements failed" in caplog.text
    assert "a bug in evaluation" in caplog.text


@pytest.mark.django_db
def test_a_batch_costs_the_same_queries_whatever_its_checks(
    make_payload, reporter, django_assert_num_queries
):
    def batch(nodes: int, hours: float) -> list[Measurement]:
        bodies = [
            make_payload(src=f"n{a}", dst=f"n{b}", started=hours_ago(hours + i * 0.001))
            for i, (a, b) in enumerate((a, b) for a in range(nodes) for b in range(nodes) if a != b)
        ]
        assert reporter.post("/api/v1/measurements/", bodies, format="json").status_code == 201
        return list(Measurement.objects.filter(started__gte=hours_ago(hours + 0.5)))

    small = batch(3, 50)  # 6 checks
    large = batch(6, 40)  # 30 checks
    Alert.objects.all().delete()
    with django_assert_num_queries(7) as few:
        alerts_evaluate(measurements=small)
    Alert.objects.all().delete()
    with django_assert_num_queries(len(few.captured_queries)):
        alerts_evaluate(measurements=large)
    assert Alert.objects.count() == 30


@pytest.mark.django_db
def test_the_backfill_command_recomputes_the_states(store, monkeypatch):
    from io import StringIO

    from django.core.management import CommandError, call_command

    monkeypatch.setattr(alert_service, "alerts_evaluate", lambda **_: [])  # ingest skips them
    series(store, [40, 40, 40, 40, 20, 20], dst="node-c")
    series(store, [40, None, None], dst="node-d")
    monkeypatch.undo()
    out = StringIO()
    call_command("evaluate_alerts", stdout=out)
    assert out.getvalue().strip() == (
        "read 9 measurements: 2 state changes; alerts now 0 ok, 1 warning, 1 critical"
    )
    call_command("evaluate_alerts", stdout=out)  # nothing newer: nothing changes
    assert AlertChange.objects.count() == 2
    out = StringIO()
    call_command("evaluate_alerts", "--reset", stdout=out)
    assert out.getvalue().splitlines() == [
        "forgot 2 alerts and their 2 state changes",
        "read 9 measurements: 2 state changes; alerts now 0 ok, 1 warning, 1 critical",
    ]
    with pytest.raises(CommandError, match="--days must be positive"):
        call_command("evaluate_alerts", "--days", "0")


@pytest.mark.django_db
def test_a_check_whose_first_alert_a_concurrent_ingest_made_is_read_again(store, monkeypatch):
    """Two ingests of a new check at once: the second's INSERT of the alert conflicts; its
    evaluation runs again and finds the alert."""
    existing = alert_service._existing_alerts
    calls = []

    def first_misses(measurements):
        calls.append(len(measurements))
        return {} if len(calls) == 1 else existing(measurements)

    series(store, [40, 40])
    monkeypatch.setattr(alert_service, "_existing_alerts", first_misses)
    series(store, [5], start_hours=100)
    assert calls == [1, 1]
    alert = Alert.objects.get()
    assert alert.verdicts == ["ok", "critical"] and alert.last_throughput_gbps < 6
