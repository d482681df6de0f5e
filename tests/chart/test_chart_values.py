"""The chart's values: values.schema.json is what the generator writes from the commented
values.yaml (scripts/helm-values-schema/generate.sh; this test is the check that the two have
not drifted apart), it refuses typos and wrong types, and the values that time the probes
and choose the update strategies reach the objects, today's timing by default."""

from __future__ import annotations

import difflib
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.support.helm_chart import CHART, REPO, Helm, find

GENERATE = REPO / "scripts" / "helm-values-schema" / "generate.sh"
# The settings newer than some releases' values (templates/_helpers.tpl, tpc-bench.setting).
NEWER_SETTINGS = [
    *(f"{part}.probes" for part in ("servers", "orchestrator", "webapp", "database", "tokens",
                                     "certificates.signer", "prelim")),
    *(f"{part}.updateStrategy" for part in ("servers", "webapp", "tokens")),
    "baseline",
    "sites",
    "monitoring",
    *(f"webapp.{name}" for name in ("metricsPerPair", "alerts")),
    *(f"campaign.{name}" for name in ("checksum", "scope", "sweepHosts", "lookups", "cycleFit",
                                      "fullDuplex")),
]  # fmt: skip
GENERATED = {"Secret"}  # their data differs between any two renders


def test_the_committed_schema_is_what_the_generator_writes_from_values_yaml(
    tmp_path: Path,
) -> None:
    written = tmp_path / "values.schema.json"
    result = subprocess.run(
        [str(GENERATE), str(written)], capture_output=True, text=True, timeout=1800, check=False
    )
    if result.returncode != 0:
        pytest.fail(f"scripts/helm-values-schema/generate.sh failed:\n{result.stderr[-3000:]}")
    committed = (CHART / "values.schema.json").read_text()
    drift = difflib.unified_diff(
        committed.splitlines(), written.read_text().splitlines(), "committed", "generated", n=2
    )
    assert written.read_text() == committed, (
        "charts/tpc-bench/values.schema.json is not what values.yaml says; run "
        "scripts/helm-values-schema/generate.sh and commit the result:\n"
        + "\n".join(list(drift)[:80])
    )


@pytest.mark.parametrize(
    ("setting", "complaint"),
    [
        ("campaign.transfer=3", "Additional property transfer is not allowed"),
        ("servers.httpsPort=notaport", "servers.httpsPort"),
        ("campaign.fileSize=1Gigabyte", "campaign.fileSize"),
        ("certificates.clientSource=file", "certificates.clientSource"),
        ("servers.probes.xrootd.liveness.periodSecond=5", "Additional property periodSecond"),
        ("servers.updateStrategy.type=Sometimes", "servers.updateStrategy.type"),
        ("webapp.updateStrategy.rollingUpdate.maxSurg=1", "Additional property maxSurg"),
        ("orchestrator.extraEnv[0].value=x", "name is required"),
        ("networkPolicy.webappFrom[0].cidr=192.0.2.0/24", "Additional property cidr"),
        ("campaign.checksum={md5}", "campaign.checksum"),
    ],
)
def test_a_values_typo_is_rejected_by_the_schema(helm: Helm, setting: str, complaint: str) -> None:
    result = helm.run(
        "template", "rel", str(CHART), "--kube-version", "1.31.4", "--set", setting, check=False
    )
    assert result.returncode != 0
    assert complaint in result.stderr


def probes_of(objects: list[dict[str, Any]], kind: str, suffix: str) -> dict[str, Any]:
    """Each container's probes of the object, by container name, then probe kind."""
    spec = find(objects, kind, suffix)["spec"]["template"]["spec"]
    return {
        c["name"]: {k: v for k, v in c.items() if k.endswith("Probe")}
        for c in spec["containers"] + spec.get("initContainers", [])
    }


def test_probe_timing_comes_from_values_and_the_checks_stay_the_charts(helm: Helm) -> None:
    xrootd = probes_of(helm.template(), "DaemonSet", "-xrootd")["xrootd"]["livenessProbe"]
    assert {k: v for k, v in xrootd.items() if k != "exec"} == {
        "periodSeconds": 30, "timeoutSeconds": 10, "failureThreshold": 3,
    }  # fmt: skip
    tuned = helm.template(
        **{
            "servers.probes.xrootd.liveness.periodSeconds": "60",
            "webapp.probes.readiness.timeoutSeconds": "9",
            "prelim.enabled": "true",
            "prelim.node": "node-1",
            "prelim.probes.startup.failureThreshold": "120",
        }
    )
    liveness = probes_of(tuned, "DaemonSet", "-xrootd")["xrootd"]["livenessProbe"]
    assert liveness["periodSeconds"] == 60 and liveness["exec"] == xrootd["exec"]
    readiness = probes_of(tuned, "Deployment", "-webapp")["webapp"]["readinessProbe"]
    assert readiness == {"httpGet": {"path": "/healthz", "port": "http"}, "periodSeconds": 10,
                         "timeoutSeconds": 9}  # fmt: skip
    startup = probes_of(tuned, "Job", "-prelim")["gridftp-b"]["startupProbe"]
    assert startup == {"tcpSocket": {"port": 12812}, "periodSeconds": 2, "failureThreshold": 120}


def test_update_strategies_come_from_values_but_the_orchestrator_and_signer_recreate(
    helm: Helm,
) -> None:
    objects = helm.template()
    for component in ("xrootd", "gridftp"):
        assert find(objects, "DaemonSet", f"-{component}")["spec"]["updateStrategy"] == {
            "type": "RollingUpdate"
        }
    assert "strategy" not in find(objects, "Deployment", "-webapp")["spec"]  # Kubernetes' own
    tuned = helm.template(
        "tokens-values.yaml",
        **{
            "servers.updateStrategy.type": "OnDelete",
            "webapp.updateStrategy.rollingUpdate.maxUnavailable": "0",
            "tokens.updateStrategy.type": "Recreate",
        },
    )
    for component in ("xrootd", "gridftp"):
        strategy = find(tuned, "DaemonSet", f"-{component}")["spec"]["updateStrategy"]
        assert strategy == {"type": "OnDelete"}
    webapp = find(tuned, "Deployment", "-webapp")["spec"]["strategy"]
    assert webapp == {"rollingUpdate": {"maxUnavailable": 0}}
    assert find(tuned, "Deployment", "-token-issuer")["spec"]["strategy"] == {"type": "Recreate"}
    # never two at once: one spool, one CA key
    for part in ("orchestrator", "signer"):
        assert find(tuned, "Deployment", f"-{part}")["spec"]["strategy"] == {"type": "Recreate"}


def test_a_release_whose_values_predate_the_probe_and_strategy_settings_renders_as_before(
    helm: Helm,
) -> None:
    """`helm upgrade --reuse-values` keeps the values of the chart a release was installed
    with: without these settings the chart renders what their defaults render."""
    for scenario in ([], ["prelim-values.yaml", "tokens-values.yaml"]):
        current = helm.template(*scenario)
        older = helm.template(*scenario, **dict.fromkeys(NEWER_SETTINGS, "null"))
        assert [o for o in older if o["kind"] not in GENERATED] == [
            o for o in current if o["kind"] not in GENERATED
        ]
