"""GET /metrics (issue 24): per-node and per-pair gauges with Prometheus's names, their
values from the stored alerts, and the per-pair series turned off for big meshes."""

from datetime import timedelta

import pytest
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from webapp.results.models import Alert, Measurement

PAIR = {"src": "node-a", "protocol": "https", "streams": "8", "auth": "x509"}
PAIR |= {"client": "native", "checksum": "none", "scope": "host"}


def series(store, values, *, start_hours=200.0, **kwargs):
    for i, gbps in enumerate(values):
        when = timezone.now() - timedelta(hours=start_hours - 12 * i)
        failed = 3 if gbps is None else 0
        store(gbps=gbps or 1.0, failed=failed, started=when, **kwargs)


def scrape(client) -> dict[str, dict[tuple, float]]:
    """name -> {sorted label items: value}"""
    response = client.get("/metrics")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain; version=")
    found: dict[str, dict[tuple, float]] = {}
    for family in text_string_to_metric_families(response.content.decode()):
        assert family.type == "gauge", family.name
        for sample in family.samples:
            found.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = sample.value
    return found


def key(**labels) -> tuple:
    return tuple(sorted(labels.items()))


@pytest.fixture
def mesh(store):
    series(store, [40, 40, 40, 40, 20, 20], dst="node-b")  # warning, last 20 Gbit/s
    series(store, [30, None, None], dst="node-c")  # critical, every transfer failed


@pytest.mark.django_db
def test_the_metrics_names_and_values(anonymous, mesh):
    found = scrape(anonymous)
    assert set(found) == {
        "tpcbench_alerts",
        "tpcbench_node_throughput_gbps",
        "tpcbench_node_last_success_timestamp_seconds",
        "tpcbench_node_alert_state",
        "tpcbench_node_alerts",
        "tpcbench_pair_throughput_gbps",
        "tpcbench_pair_last_success_timestamp_seconds",
        "tpcbench_pair_alert_state",
    }
    assert found["tpcbench_alerts"] == {
        key(state="ok"): 0, key(state="warning"): 1, key(state="critical"): 1
    }  # fmt: skip
    b, c = key(**PAIR, dst="node-b"), key(**PAIR, dst="node-c")
    assert found["tpcbench_pair_alert_state"] == {b: 1, c: 2}
    assert set(found["tpcbench_pair_throughput_gbps"]) == {b}  # node-c: the last one failed
    assert found["tpcbench_pair_throughput_gbps"][b] == pytest.approx(20, rel=1e-3)
    last_b = Measurement.objects.filter(dst__name="node-b").latest("started").finished
    first_c = Measurement.objects.filter(dst__name="node-c").earliest("started").finished
    success = found["tpcbench_pair_last_success_timestamp_seconds"]
    assert success == {b: pytest.approx(last_b.timestamp()), c: pytest.approx(first_c.timestamp())}
    nodes = found["tpcbench_node_throughput_gbps"]
    assert nodes[key(node="node-a", direction="out")] == pytest.approx(20, rel=1e-3)
    assert nodes[key(node="node-b", direction="in")] == pytest.approx(20, rel=1e-3)
    assert key(node="node-c", direction="in") not in nodes
    assert found["tpcbench_node_alert_state"] == {
        key(node="node-a"): 2, key(node="node-b"): 1, key(node="node-c"): 2
    }  # fmt: skip
    node_a = found["tpcbench_node_last_success_timestamp_seconds"][key(node="node-a")]
    assert node_a == pytest.approx(last_b.timestamp())
    counts = found["tpcbench_node_alerts"]
    assert counts[key(node="node-a", state="warning")] == 1
    assert counts[key(node="node-a", state="critical")] == 1
    assert counts[key(node="node-a", state="ok")] == 0


@pytest.mark.django_db
def test_per_pair_series_can_be_turned_off(anonymous, mesh, settings):
    settings.TPCBENCH_METRICS_PER_PAIR = False
    found = scrape(anonymous)
    assert not [name for name in found if name.startswith("tpcbench_pair_")]
    assert found["tpcbench_node_alert_state"][key(node="node-a")] == 2


@pytest.mark.django_db
def test_one_query_per_scrape(anonymous, mesh, django_assert_num_queries):
    assert Alert.objects.count() == 2
    with django_assert_num_queries(1):
        scrape(anonymous)


@pytest.mark.django_db
def test_without_anonymous_reads_a_token_is_needed(anonymous, reporter, mesh, settings):
    settings.TPCBENCH_ANONYMOUS_READS = False
    refused = anonymous.get("/metrics")
    assert refused.status_code == 401 and refused["WWW-Authenticate"] == "Token"
    wrong = anonymous.get("/metrics", HTTP_AUTHORIZATION="Token " + "0" * 40)
    assert wrong.status_code == 401
    assert "tpcbench_alerts" in scrape(reporter)
