"""The webapp's Prometheus metrics (`GET /metrics`, docs/alerts.md): per node and per pair
(each check), from the alerts' rows, one query per scrape. Gauges, in Prometheus's naming:
base units in the name (_gbps: Gbit/s, _timestamp_seconds: Unix time), a state as a number
(0 ok, 1 warning, 2 critical). TPCBENCH_METRICS_PER_PAIR=false leaves the per-pair series
out (a mesh of N nodes has N(N-1) pairs per check)."""

from collections import defaultdict
from collections.abc import Iterator

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from rest_framework.authentication import TokenAuthentication
from rest_framework.exceptions import AuthenticationFailed

from webapp.results.models import Alert
from webapp.results.models.alerts import STATE_VALUES, AlertState

CHECK_LABELS = ["src", "dst", "protocol", "streams", "auth", "client", "checksum", "scope"]
_COLUMNS = (
    "src__name", "dst__name", "protocol", "streams", "auth", "client", "checksum", "scope",
    "state", "last_throughput_gbps", "last_success",
)  # fmt: skip


def _pair_families(rows: list[tuple]) -> Iterator[Metric]:
    throughput = GaugeMetricFamily(
        "tpcbench_pair_throughput_gbps",
        "The check's last measured throughput (Gbit/s; absent when every transfer failed).",
        labels=CHECK_LABELS,
    )
    success = GaugeMetricFamily(
        "tpcbench_pair_last_success_timestamp_seconds",
        "When the check's last successful measurement ended (Unix time).",
        labels=CHECK_LABELS,
    )
    state = GaugeMetricFamily(
        "tpcbench_pair_alert_state",
        "The check's alert state: 0 ok, 1 warning, 2 critical.",
        labels=CHECK_LABELS,
    )
    for row in rows:
        labels = [str(value) for value in row[:8]]
        if row[9] is not None:
            throughput.add_metric(labels, row[9])
        if row[10] is not None:
            success.add_metric(labels, row[10].timestamp())
        state.add_metric(labels, STATE_VALUES[row[8]])
    yield from (throughput, success, state)


def _node_families(rows: list[tuple]) -> Iterator[Metric]:
    sums: dict[tuple[str, str], list[float]] = defaultdict(list)
    last: dict[str, float] = {}
    worst: dict[str, int] = {}
    counts: dict[tuple[str, str], int] = defaultdict(int)
    for src, dst, *_, state, gbps, success in rows:
        for node, direction in ((src, "out"), (dst, "in")):
            if gbps is not None:
                sums[(node, direction)].append(gbps)
            if success is not None:
                last[node] = max(last.get(node, 0.0), success.timestamp())
            worst[node] = max(worst.get(node, 0), STATE_VALUES[state])
            counts[(node, state)] += 1
    throughput = GaugeMetricFamily(
        "tpcbench_node_throughput_gbps",
        "Mean of the last throughputs of the node's checks (Gbit/s), as source (direction "
        '"out") or destination ("in").',
        labels=["node", "direction"],
    )
    for (node, direction), values in sorted(sums.items()):
        throughput.add_metric([node, direction], sum(values) / len(values))
    success = GaugeMetricFamily(
        "tpcbench_node_last_success_timestamp_seconds",
        "When the last successful measurement from or to the node ended (Unix time).",
        labels=["node"],
    )
    for node, when in sorted(last.items()):
        success.add_metric([node], when)
    state = GaugeMetricFamily(
        "tpcbench_node_alert_state",
        "The worst alert state of the node's checks: 0 ok, 1 warning, 2 critical.",
        labels=["node"],
    )
    for node, value in sorted(worst.items()):
        state.add_metric([node], value)
    alerts = GaugeMetricFamily(
        "tpcbench_node_alerts",
        "The node's checks (either end) in each alert state.",
        labels=["node", "state"],
    )
    for node in sorted(worst):
        for name in AlertState.values:
            alerts.add_metric([node, name], counts.get((node, name), 0))
    yield from (throughput, success, state, alerts)


class AlertCollector:
    """Reads the alerts at each collect(): one query."""

    def collect(self) -> Iterator[Metric]:
        rows = list(Alert.objects.order_by().values_list(*_COLUMNS))
        totals = GaugeMetricFamily(
            "tpcbench_alerts", "Checks in each alert state.", labels=["state"]
        )
        for name in AlertState.values:
            totals.add_metric([name], sum(1 for row in rows if row[8] == name))
        yield totals
        yield from _node_families(rows)
        if settings.TPCBENCH_METRICS_PER_PAIR:
            yield from _pair_families(rows)


def _allowed(request: HttpRequest) -> bool:
    """Reads' rule (permissions.py): anyone, unless TPCBENCH_ANONYMOUS_READS=false; then a
    session or an API token."""
    if settings.TPCBENCH_ANONYMOUS_READS or request.user.is_authenticated:
        return True
    try:
        return TokenAuthentication().authenticate(request) is not None
    except AuthenticationFailed:
        return False


def metrics_view(request: HttpRequest) -> HttpResponse:
    if request.method not in ("GET", "HEAD"):
        return HttpResponse(status=405, headers={"Allow": "GET, HEAD"})
    if not _allowed(request):
        return HttpResponse(
            "authentication required\n", status=401, content_type="text/plain",
            headers={"WWW-Authenticate": "Token"},
        )  # fmt: skip
    registry = CollectorRegistry(auto_describe=False)
    registry.register(AlertCollector())
    return HttpResponse(generate_latest(registry), content_type=CONTENT_TYPE_LATEST)
