"""The chart's monitoring objects (monitoring.*, docs/alerts.md, Prometheus and Grafana): off
by default; on, a PrometheusRule whose rules Debian's promtool accepts and whose main alerts
fire as its unit tests say, a ServiceMonitor and PodMonitor, and a Grafana dashboard
ConfigMap; every metric they name is one the webapp or the orchestrator really serves."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml
from django.core.cache import cache
from kubernetes import client
from prometheus_client.parser import text_string_to_metric_families
from rest_framework.test import APIClient

from orchestrator.service.metrics import ServiceMetrics
from tests.support.helm_chart import CHART, KUBE_VERSION, Cluster, Helm, find
from tests.support.webapp_payloads import payload
from webapp.results.api.permissions import api_token_create

ALL_ON = {
    "monitoring.prometheusRule.enabled": "true",
    "monitoring.serviceMonitor.enabled": "true",
    "monitoring.grafanaDashboard.enabled": "true",
}
OPERATOR_KINDS = {"PrometheusRule", "ServiceMonitor", "PodMonitor"}
ALERTS = [
    "TpcBenchLinkCritical", "TpcBenchLinkWarning", "TpcBenchNoMeasurement",
    "TpcBenchCampaignMissed", "TpcBenchCampaignLate", "TpcBenchCampaignOverCycle",
    "TpcBenchWebappDown",
]  # fmt: skip
CHECK = {"src": "node-a", "dst": "node-b", "protocol": "https", "streams": "8", "auth": "x509"}
CHECK |= {"client": "native", "checksum": "none", "scope": "host"}


def promtool(*args: str) -> subprocess.CompletedProcess[str]:
    binary = shutil.which("promtool")
    if binary is None:
        pytest.fail(
            "promtool is missing: scripts/install-system-deps.sh monitoring installs it "
            "(Debian's prometheus package)"
        )
    return subprocess.run([binary, *args], capture_output=True, text=True, timeout=120, check=False)


def rule_file(helm: Helm, path: Path, **sets: str) -> dict[str, Any]:
    """The rendered PrometheusRule's groups as a Prometheus rule file at `path`."""
    rule = find(helm.template(**ALL_ON, **sets), "PrometheusRule")
    groups = {"groups": rule["spec"]["groups"]}
    path.write_text(yaml.safe_dump(groups, sort_keys=False))
    return groups


def dashboard(objects: list[dict[str, Any]]) -> dict[str, Any]:
    config_map = find(objects, "ConfigMap", "-dashboard")
    return json.loads(config_map["data"]["tpc-bench.json"])


# -- PromQL metric names ------------------------------------------------------------------------

_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"')
_GROUPINGS = re.compile(
    r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)|\{[^}]*\}|\[[^\]]*\]"
)
_NAME = re.compile(r"(?<![\w:$])([a-zA-Z_:][a-zA-Z0-9_:]*)(?![\w:])(?!\s*\()")
_KEYWORDS = {"and", "or", "unless", "bool", "offset", "inf", "nan"}


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression (or a Grafana label_values query) reads."""
    expr = re.sub(r"label_values\(\s*([a-zA-Z_:][\w:]*)\s*,[^)]*\)", r"\1", expr)
    expr = _GROUPINGS.sub(" ", _STRINGS.sub('""', expr))
    return {name for name in _NAME.findall(expr) if name.lower() not in _KEYWORDS}


def test_the_metric_name_parser_finds_names_and_only_names() -> None:
    assert metric_names(
        'max by (src, dst) (tpcbench_pair_alert_state{src=~"$node"}) > 0 '
        'or time() - max(tpcbench_nope[5m] offset 1h) > 90000 and on (job) up{job="a,b"} == 0'
    ) == {"tpcbench_pair_alert_state", "tpcbench_nope", "up"}
    assert metric_names("label_values(tpcbench_node_alert_state, node)") == {
        "tpcbench_node_alert_state"
    }


@pytest.fixture
def served_names(db: None) -> set[str]:
    """Every sample name the webapp's /metrics serves after an ingest (a real POST, its alerts
    evaluated) and the orchestrator's /metrics serves, plus Prometheus's own `up`."""
    cache.clear()
    reporter = APIClient()
    reporter.credentials(HTTP_AUTHORIZATION=f"Token {api_token_create(name='orchestrator')}")
    for body in (payload(), payload(dst="node-c", failed=11)):
        response = reporter.post("/api/v1/measurements/", body, format="json")
        assert response.status_code == 201, response.content
    scraped = APIClient().get("/metrics")
    assert scraped.status_code == 200
    metrics = ServiceMetrics(spool_depth=lambda: 0)
    metrics.watch_campaign(lambda: {"planned": 4, "done": 3, "missed": 1})
    names = {"up"}
    for text in (scraped.content.decode(), metrics.exposition().decode()):
        for family in text_string_to_metric_families(text):
            names |= {sample.name for sample in family.samples}
    cache.clear()
    assert "tpcbench_pair_throughput_gbps" in names and "tpcbench_campaign_measurements" in names
    return names


# -- rendering ----------------------------------------------------------------------------------


def test_monitoring_is_off_by_default(helm: Helm) -> None:
    objects = helm.template()
    assert not [o["kind"] for o in objects if o["kind"] in OPERATOR_KINDS]
    config_maps = [o for o in objects if o["kind"] == "ConfigMap"]
    assert not [c for c in config_maps if "grafana_dashboard" in c["metadata"]["labels"]]
    webapp = find(objects, "Deployment", "-webapp")["spec"]["template"]["spec"]["containers"][0]
    assert not {"POD_IP", "TPCBENCH_METRICS_PER_PAIR"} & {item["name"] for item in webapp["env"]}


def test_monitoring_objects_carry_the_additional_labels(helm: Helm) -> None:
    sets = {
        "monitoring.prometheusRule.additionalLabels.release": "prom",
        "monitoring.serviceMonitor.additionalLabels.release": "prom",
        "monitoring.serviceMonitor.namespace": "monitoring",
        "monitoring.grafanaDashboard.additionalLabels.team": "noc",
        "monitoring.grafanaDashboard.label": "dashboards",
        "monitoring.grafanaDashboard.labelValue": "tpc",
        "monitoring.grafanaDashboard.folder": "Networks",
    }
    objects = helm.template(**ALL_ON, **sets)
    rule = find(objects, "PrometheusRule")
    assert rule["metadata"]["labels"]["release"] == "prom"
    assert rule["metadata"]["namespace"] == "tpc"
    assert [r["alert"] for r in rule["spec"]["groups"][0]["rules"]] == ALERTS
    for kind in ("ServiceMonitor", "PodMonitor"):
        monitor = find(objects, kind)
        assert monitor["metadata"]["labels"]["release"] == "prom", kind
        assert monitor["metadata"]["namespace"] == "monitoring"
        assert monitor["spec"]["namespaceSelector"] == {"matchNames": ["tpc"]}
    service = find(objects, "Service", "-webapp")
    selector = find(objects, "ServiceMonitor")["spec"]["selector"]["matchLabels"]
    assert selector == service["spec"]["selector"]
    assert find(objects, "ServiceMonitor")["spec"]["endpoints"][0]["port"] == "http"
    orchestrator = find(objects, "Deployment", "-orchestrator")["spec"]["template"]["metadata"]
    pod_monitor = find(objects, "PodMonitor")["spec"]
    assert pod_monitor["selector"]["matchLabels"].items() <= orchestrator["labels"].items()
    assert pod_monitor["podMetricsEndpoints"][0]["port"] == "metrics"
    config_map = find(objects, "ConfigMap", "-dashboard")
    assert config_map["metadata"]["labels"]["dashboards"] == "tpc"
    assert "grafana_dashboard" not in config_map["metadata"]["labels"]
    assert config_map["metadata"]["labels"]["team"] == "noc"
    assert config_map["metadata"]["annotations"] == {"grafana_folder": "Networks"}


@pytest.mark.django_db
def test_the_scraped_webapp_answers_to_its_pod_ip(helm: Helm, settings: Any) -> None:
    """Prometheus asks each webapp pod by its IP, which Django's host check must then accept
    (the rendered DJANGO_ALLOWED_HOSTS, $(POD_IP) expanded as the kubelet does, given to the
    webapp: IPv4 and IPv6); with private reads the ServiceMonitor sends the release's token."""
    objects = helm.template(**ALL_ON, **{"webapp.privateReads": "true"})
    env = find(objects, "Deployment", "-webapp")["spec"]["template"]["spec"]["containers"][0]["env"]
    names = [item["name"] for item in env]
    assert names.index("POD_IP") < names.index("DJANGO_ALLOWED_HOSTS")  # $(POD_IP) expands
    assert next(i for i in env if i["name"] == "POD_IP")["valueFrom"] == {
        "fieldRef": {"fieldPath": "status.podIP"}
    }
    hosts = next(i["value"] for i in env if i["name"] == "DJANGO_ALLOWED_HOSTS")
    cache.clear()
    for pod_ip, host, status in (
        ("10.244.1.7", "10.244.1.7:8000", 200),
        ("fd00:10:244::7", "[fd00:10:244::7]:8000", 200),
        ("10.244.1.7", "10.244.1.8:8000", 400),  # another pod's address: refused
    ):
        settings.ALLOWED_HOSTS = hosts.replace("$(POD_IP)", pod_ip).split(",")
        assert APIClient().get("/metrics", HTTP_HOST=host).status_code == status, host
    endpoint = find(objects, "ServiceMonitor")["spec"]["endpoints"][0]
    secret = find(objects, "Secret", "-webapp")
    assert endpoint["authorization"] == {
        "type": "Token", "credentials": {"name": secret["metadata"]["name"], "key": "api-token"}
    }  # fmt: skip
    public = find(helm.template(**ALL_ON), "ServiceMonitor")["spec"]["endpoints"][0]
    assert "authorization" not in public


def test_the_webapp_down_alert_needs_a_known_scrape_job(helm: Helm) -> None:
    """Without the ServiceMonitor the webapp's job is unknown (absent() would fire for ever):
    TpcBenchWebappDown only with monitoring.prometheusRule.webappJob then."""
    rule_only = {"monitoring.prometheusRule.enabled": "true"}

    def alerts(**sets: str) -> dict[str, dict[str, Any]]:
        rule = find(helm.template(**rule_only, **sets), "PrometheusRule")
        return {r["alert"]: r for r in rule["spec"]["groups"][0]["rules"]}

    assert list(alerts()) == ALERTS[:-1]
    down = alerts(**{"monitoring.prometheusRule.webappJob": "kubernetes-services"})
    assert down["TpcBenchWebappDown"]["expr"] == (
        'max by (job) (up{job="kubernetes-services"}) == 0 or absent(up{job="kubernetes-services"})'
    )


# -- promtool -----------------------------------------------------------------------------------


def test_the_rules_pass_promtool_check_rules(helm: Helm, tmp_path: Path) -> None:
    rule_file(helm, tmp_path / "rules.yaml")
    result = promtool("check", "rules", str(tmp_path / "rules.yaml"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(ALERTS)} rules found" in result.stdout
    # disabled alerts are left out, extra rules appended, and the file still passes
    left_out = ["TpcBenchLinkWarning", "TpcBenchCampaignLate"]
    sets = {
        "monitoring.prometheusRule.disabled": "{" + ",".join(left_out) + "}",
        "monitoring.prometheusRule.extraRules[0].record": "tpcbench:alerts:critical",
        "monitoring.prometheusRule.extraRules[0].expr": 'sum(tpcbench_alerts{state="critical"})',
    }
    groups = rule_file(helm, tmp_path / "fewer.yaml", **sets)
    names = [r.get("alert") or r.get("record") for r in groups["groups"][0]["rules"]]
    assert names == [a for a in ALERTS if a not in left_out] + ["tpcbench:alerts:critical"]
    result = promtool("check", "rules", str(tmp_path / "fewer.yaml"))
    assert result.returncode == 0, result.stdout + result.stderr


def test_promtool_refuses_a_broken_rule(helm: Helm, tmp_path: Path) -> None:
    """The check can fail: an extra rule with an unbalanced expression is refused."""
    rule_file(
        helm, tmp_path / "broken.yaml",
        **{"monitoring.prometheusRule.extraRules[0].alert": "Broken",
           "monitoring.prometheusRule.extraRules[0].expr": "max by (node) (tpcbench_alerts > 0"},
    )  # fmt: skip
    result = promtool("check", "rules", str(tmp_path / "broken.yaml"))
    assert result.returncode != 0
    assert '"Broken": could not parse expression' in result.stderr, result.stderr


def series(name: str, values: str, **labels: str) -> dict[str, str]:
    text = ",".join(f'{key}="{value}"' for key, value in labels.items())
    return {"series": f"{name}{{{text}}}", "values": values}


def test_promtool_unit_tests_the_alerts(helm: Helm, tmp_path: Path) -> None:
    """Series in, alerts out (`promtool test rules`): a check critical in both webapp replicas
    gives one alert once it has lasted linkCriticalFor (15m), a warning one after 1h, a node
    without a success for 25h, a campaign's missed measurements, the webapp's scrape down."""
    groups = rule_file(helm, tmp_path / "rules.yaml")
    rules = {r["alert"]: r for r in groups["groups"][0]["rules"]}
    replica = {"job": "rel-tpc-bench-webapp", "namespace": "tpc"}
    critical = {**CHECK, "dst": "node-c"}
    inputs = [
        # critical from minute 2 in both replicas' scrapes
        series("tpcbench_pair_alert_state", "0 0 2x60", **critical, **replica, pod="w-1"),
        series("tpcbench_pair_alert_state", "0 0 2x60", **critical, **replica, pod="w-2"),
        series("tpcbench_pair_alert_state", "1x90", **CHECK, **replica, pod="w-1"),
        series("tpcbench_node_last_success_timestamp_seconds", "0x1600", node="node-a", **replica),
        series("tpcbench_node_last_success_timestamp_seconds", "60000x1600", node="node-b"),
        series("tpcbench_campaign_measurements", "0 0 3x20", state="missed", job="orch"),
        series("tpcbench_campaign_measurements", "0x20", state="late", job="orch"),
        series("up", "1 1 0x30", job="rel-tpc-bench-webapp", pod="w-1"),
    ]
    summary = "tpc-bench: node-a -> node-c https x8 x509/native/none (host) is critical"

    def alert(name: str, labels: dict[str, str], **annotations: str) -> dict[str, Any]:
        wanted = {k: v for k, v in rules[name]["annotations"].items() if "{{" not in v}
        return {"exp_labels": {**labels, "severity": rules[name]["labels"]["severity"]},
                "exp_annotations": {**wanted, **annotations}}  # fmt: skip

    cases = [
        ("16m", "TpcBenchLinkCritical", []),  # critical for 14 minutes: not yet
        ("18m", "TpcBenchLinkCritical", [alert("TpcBenchLinkCritical", critical, summary=summary)]),
        ("50m", "TpcBenchLinkWarning", []),
        ("61m", "TpcBenchLinkWarning", [alert("TpcBenchLinkWarning", CHECK, summary=summary.replace(
            "node-c", "node-b").replace("is critical", "is slower than usual"))]),
        ("24h", "TpcBenchNoMeasurement", []),
        ("26h", "TpcBenchNoMeasurement", [alert(
            "TpcBenchNoMeasurement", {"node": "node-a"},
            summary="tpc-bench: no successful measurement from or to node-a for 25h",
            description="The node's last successful measurement ended 1d 2h 0m 0s ago.")]),
        ("1m", "TpcBenchCampaignMissed", []),
        ("3m", "TpcBenchCampaignMissed", [alert(
            "TpcBenchCampaignMissed", {"job": "orch", "state": "missed"},
            summary="tpc-bench: the campaign missed 3 measurements")]),
        ("10m", "TpcBenchCampaignLate", []),
        ("10m", "TpcBenchWebappDown", []),
        ("13m", "TpcBenchWebappDown", [alert(
            "TpcBenchWebappDown", {"job": "rel-tpc-bench-webapp"})]),
    ]  # fmt: skip
    tests = {
        "rule_files": ["rules.yaml"],
        "evaluation_interval": "1m",
        "tests": [
            {"interval": "1m", "input_series": inputs, "alert_rule_test": [
                {"eval_time": at, "alertname": name, "exp_alerts": expected}
                for at, name, expected in cases]},
            # no webapp target at all is an outage too
            {"interval": "1m", "input_series": [series("up", "1x20", job="other")],
             "alert_rule_test": [
                 {"eval_time": "9m", "alertname": "TpcBenchWebappDown", "exp_alerts": []},
                 {"eval_time": "11m", "alertname": "TpcBenchWebappDown", "exp_alerts": [
                     alert("TpcBenchWebappDown", {"job": "rel-tpc-bench-webapp"})]}]},
        ],
    }  # fmt: skip
    (tmp_path / "tests.yaml").write_text(yaml.safe_dump(tests, sort_keys=False))
    result = promtool("test", "rules", str(tmp_path / "tests.yaml"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout
    # and the unit tests can fail: a critical check that never clears 15m gives no alert
    tests["tests"][0]["alert_rule_test"][1]["eval_time"] = "16m"
    (tmp_path / "tests.yaml").write_text(yaml.safe_dump(tests, sort_keys=False))
    result = promtool("test", "rules", str(tmp_path / "tests.yaml"))
    assert result.returncode != 0 and "TpcBenchLinkCritical" in result.stdout + result.stderr


def test_without_per_pair_series_the_link_alerts_are_per_node(helm: Helm, tmp_path: Path) -> None:
    """webapp.metricsPerPair: false (big meshes) sets TPCBENCH_METRICS_PER_PAIR=false, and the
    link alerts then read the per-node counts: two checks of node-a critical from minute 2
    fire at minute 17 as one alert of node-a, its warnings after an hour."""
    sets = {"webapp.metricsPerPair": "false"}
    objects = helm.template(**ALL_ON, **sets)
    env = find(objects, "Deployment", "-webapp")["spec"]["template"]["spec"]["containers"][0]["env"]
    assert {"name": "TPCBENCH_METRICS_PER_PAIR", "value": "false"} in env
    groups = rule_file(helm, tmp_path / "rules.yaml", **sets)
    assert promtool("check", "rules", str(tmp_path / "rules.yaml")).returncode == 0
    rules = {r["alert"]: r for r in groups["groups"][0]["rules"]}
    assert "tpcbench_pair" not in rules["TpcBenchLinkCritical"]["expr"]
    description = {name: rules[name]["annotations"].get("description") for name in rules}
    inputs = [
        series("tpcbench_node_alerts", "0 0 2x80", node="node-a", state="critical", pod="w-1"),
        series("tpcbench_node_alerts", "0 0 2x80", node="node-a", state="critical", pod="w-2"),
        series("tpcbench_node_alerts", "0x80", node="node-b", state="critical", pod="w-1"),
        series("tpcbench_node_alerts", "1x80", node="node-b", state="warning", pod="w-1"),
    ]
    critical = {
        "exp_labels": {"node": "node-a", "severity": "critical"},
        "exp_annotations": {
            "summary": "tpc-bench: critical checks from or to node-a: 2",
            "description": description["TpcBenchLinkCritical"],
        },
    }
    warning = {
        "exp_labels": {"node": "node-b", "severity": "warning"},
        "exp_annotations": {
            "summary": "tpc-bench: checks slower than usual from or to node-b: 1",
            "description": description["TpcBenchLinkWarning"],
        },
    }
    cases = [
        ("16m", "TpcBenchLinkCritical", []),
        ("17m", "TpcBenchLinkCritical", [critical]),
        ("59m", "TpcBenchLinkWarning", []),
        ("60m", "TpcBenchLinkWarning", [warning]),
    ]
    tests = {"rule_files": ["rules.yaml"], "evaluation_interval": "1m", "tests": [
        {"interval": "1m", "input_series": inputs, "alert_rule_test": [
            {"eval_time": at, "alertname": name, "exp_alerts": expected}
            for at, name, expected in cases]}]}  # fmt: skip
    (tmp_path / "tests.yaml").write_text(yaml.safe_dump(tests, sort_keys=False))
    result = promtool("test", "rules", str(tmp_path / "tests.yaml"))
    assert result.returncode == 0, result.stdout + result.stderr


# -- the metrics the rules and the dashboard read -----------------------------------------------


@pytest.mark.django_db
def test_rules_and_dashboard_read_only_served_metrics(
    helm: Helm, tmp_path: Path, served_names: set[str]
) -> None:
    objects = helm.template(**ALL_ON)
    rules = find(objects, "PrometheusRule")["spec"]["groups"][0]["rules"]
    board = dashboard(objects)
    queries = [target["expr"] for p in board["panels"] for target in p["targets"]]
    queries += [v["definition"] for v in board["templating"]["list"] if v["type"] == "query"]
    per_node = helm.template(**ALL_ON, **{"webapp.metricsPerPair": "false"})
    rules += find(per_node, "PrometheusRule")["spec"]["groups"][0]["rules"]
    read = {"rules": set(), "dashboard": set()}
    for rule in rules:
        read["rules"] |= metric_names(rule["expr"])
    for query in queries:
        read["dashboard"] |= metric_names(query)
    for where, names in read.items():
        assert names - served_names == set(), f"the {where} read metrics nobody serves"
    assert read["rules"] >= {
        "tpcbench_pair_alert_state", "tpcbench_node_alerts", "tpcbench_campaign_measurements", "up"
    }  # fmt: skip
    assert read["dashboard"] >= {
        "tpcbench_pair_throughput_gbps", "tpcbench_alerts", "tpcbench_campaign_estimate_seconds",
        "tpcbench_node_last_success_timestamp_seconds", "tpcbench_campaign_measurements",
    }  # fmt: skip


def test_the_dashboard_is_grafana_json_on_the_prometheus_variable(helm: Helm) -> None:
    board = dashboard(helm.template(**{"monitoring.grafanaDashboard.enabled": "true"}))
    assert board["uid"] == "tpc-bench" and board["panels"]
    variables = {v["name"]: v for v in board["templating"]["list"]}
    assert variables["datasource"]["query"] == "prometheus"
    ids = [p["id"] for p in board["panels"]]
    assert len(ids) == len(set(ids))
    for item in board["panels"]:
        assert item["datasource"]["uid"] == "${datasource}", item["title"]
        assert item["targets"] and all(t["expr"] for t in item["targets"]), item["title"]


def test_helm_lint_passes_with_monitoring_on(helm: Helm) -> None:
    argv = ["lint", str(CHART), "--strict", "--kube-version", KUBE_VERSION]
    for key, value in {**ALL_ON, "monitoring.grafanaDashboard.folder": "Networks"}.items():
        argv += ["--set", f"{key}={value}"]
    assert "0 chart(s) failed" in helm.run(*argv).stdout


@pytest.mark.cluster
def test_the_api_server_accepts_what_monitoring_changes(helm: Helm, cluster: Cluster) -> None:
    """The objects of the chart's own API groups (the webapp's Deployment with its POD_IP, the
    dashboard's ConfigMap) as a strict server-side dry run; the Operator's kinds need its
    CRDs, which the test cluster has not (they are checked by promtool and rendering above)."""
    namespace = f"tpcb-mon-{uuid.uuid4().hex[:6]}"
    objects = helm.template(**ALL_ON, namespace=namespace)
    cluster.core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=namespace)))
    try:
        board = find(objects, "ConfigMap", "-dashboard")
        for item in (find(objects, "Deployment", "-webapp"), board):
            resource = cluster.dynamic().resources.get(
                api_version=item["apiVersion"], kind=item["kind"]
            )
            resource.create(
                body=item, namespace=namespace, dry_run="All",
                query_params=[("fieldValidation", "Strict")],
            )  # fmt: skip
    finally:
        cluster.core.delete_namespace(namespace)
