"""The chart as rendered: lint, and what each object says. Every object of every scenario is
also handed to the real API server as a dry run (test_chart_dry_run.py); the values and their
schema are test_chart_values.py's, the NetworkPolicies test_chart_network_policies.py's."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from orchestrator.discovery.kubernetes import (
    DATA_ROOT_ANNOTATION,
    GRIDFTP_SELECTOR,
    HOST_DN_TEMPLATE_ANNOTATION,
    XROOTD_SELECTOR,
)
from orchestrator.latency import PROBE_PORT_NAME
from orchestrator.servers import layout
from tests.support.helm_chart import CHART, SCENARIOS, Helm, find

GiB = 1 << 30
MiB = 1 << 20


@pytest.mark.parametrize("scenario", [None, *SCENARIOS])
def test_helm_lint_passes(helm: Helm, scenario: str | None) -> None:
    argv = ["lint", str(CHART), "--strict", "--kube-version", "1.31.4"]
    if scenario:
        argv += ["--values", str(CHART / "ci" / scenario)]
    result = helm.run(*argv)
    assert "0 chart(s) failed" in result.stdout


def container(pod_spec: dict[str, Any], name: str) -> dict[str, Any]:
    found = [c for c in pod_spec["containers"] if c["name"] == name]
    assert len(found) == 1, [c["name"] for c in pod_spec["containers"]]
    return found[0]


def test_server_daemonsets_are_host_network_on_labelled_nodes(helm: Helm) -> None:
    objects = helm.template(
        **{"nodes.tolerations[0].key": "storage", "nodes.tolerations[0].operator": "Exists"}
    )
    for component, selector in (("xrootd", XROOTD_SELECTOR), ("gridftp", GRIDFTP_SELECTOR)):
        ds = find(objects, "DaemonSet", f"-{component}")
        pod = ds["spec"]["template"]
        spec = pod["spec"]
        assert spec["hostNetwork"] is True and spec["dnsPolicy"] == "ClusterFirstWithHostNet"
        assert spec["nodeSelector"] == {"tpc-bench.io/network": "100000"}
        assert spec["tolerations"] == [{"key": "storage", "operator": "Exists"}]
        # discovery finds these pods by its selector
        labels = pod["metadata"]["labels"]
        assert all(labels[k] == v for k, v in (p.split("=") for p in selector.split(",")))
        annotations = pod["metadata"]["annotations"]
        assert annotations[DATA_ROOT_ANNOTATION] == str(layout.DATA_ROOT)
        assert (
            annotations[HOST_DN_TEMPLATE_ANNOTATION] == "/DC=org/DC=tpc-bench/OU=Services/CN={node}"
        )
        security = spec["securityContext"]
        assert security["runAsNonRoot"] and security["runAsUser"] == layout.SERVER_UID
        assert security["seccompProfile"] == {"type": "RuntimeDefault"}
        for item in spec["containers"] + spec["initContainers"]:
            # identical requests = limits everywhere: the paper's fair comparison
            assert item["resources"]["requests"] == item["resources"]["limits"], item["name"]
            context = item["securityContext"]
            assert context["readOnlyRootFilesystem"] and not context["allowPrivilegeEscalation"]
            assert context["capabilities"] == {"drop": ["ALL"]}


def test_the_data_volume_holds_the_source_and_k_incoming_files(helm: Helm) -> None:
    objects = helm.template(**{"campaign.fileSize": "2Gi", "campaign.transfers": "11"})
    for component in ("xrootd", "gridftp"):
        spec = find(objects, "DaemonSet", f"-{component}")["spec"]["template"]["spec"]
        data = next(v for v in spec["volumes"] if v["name"] == "data")
        assert data["emptyDir"]["medium"] == "Memory"
        size = int(data["emptyDir"]["sizeLimit"])
        assert size == 12 * 2 * GiB + 256 * MiB
        server = container(spec, component)
        assert int(server["resources"]["limits"]["memory"]) == size + 2 * GiB
        assert f"--source-size={2 * GiB}" in server["args"]


def test_servers_mount_what_the_images_expect_where_they_expect_it(helm: Helm) -> None:
    objects = helm.template()
    expected = {
        "data": str(layout.DATA_ROOT),
        "run": str(layout.RUN_DIR),
        "host-credentials": str(layout.HOST_CREDENTIALS),
        "certificates": str(layout.CERTDIR),
    }
    for component in ("xrootd", "gridftp"):
        spec = find(objects, "DaemonSet", f"-{component}")["spec"]["template"]["spec"]
        mounts = {m["name"]: m["mountPath"] for m in container(spec, component)["volumeMounts"]}
        assert {k: mounts[k] for k in expected} == expected
        init = spec["initContainers"][0]
        assert init["args"][:2] == ["ca", "request"]
        assert f"--out-dir={layout.HOST_CREDENTIALS}" in init["args"]
    gridftp = find(objects, "DaemonSet", "-gridftp")["spec"]["template"]["spec"]
    mapfile = next(
        m for m in container(gridftp, "gridftp")["volumeMounts"] if m["name"] == "grid-mapfile"
    )
    assert mapfile["mountPath"] == str(layout.GRID_MAPFILE_DIR)
    assert "subPath" not in mapfile  # a subPath mount never sees a ConfigMap's updates
    assert layout.GRID_MAPFILE.name == "grid-mapfile"  # the signer's ConfigMap key
    # XRootD reads its own map from the same directory, and its macaroon key from a Secret
    xrootd_spec = find(objects, "DaemonSet", "-xrootd")["spec"]["template"]["spec"]
    xrootd_mounts = {m["name"]: m for m in container(xrootd_spec, "xrootd")["volumeMounts"]}
    assert xrootd_mounts["grid-mapfile"]["mountPath"] == str(layout.XROOTD_GRIDMAP.parent)
    assert "subPath" not in xrootd_mounts["grid-mapfile"]
    assert xrootd_mounts["macaroons"]["mountPath"] == str(layout.MACAROON_SECRET.parent)
    volumes = {v["name"]: v for v in xrootd_spec["volumes"]}
    secret = find(objects, "Secret", "-macaroons")
    assert volumes["macaroons"]["secret"]["secretName"] == secret["metadata"]["name"]
    key = base64.b64decode(secret["data"][layout.MACAROON_SECRET.name]).decode()
    assert len(base64.b64decode(key)) >= 32 and len(key.rstrip("\n")) <= 64  # XrdMacaroons
    xrootd = find(objects, "DaemonSet", "-xrootd")["spec"]["template"]["spec"]
    ports = {
        p["name"]: p["containerPort"] for c in xrootd["containers"] for p in c.get("ports", [])
    }
    assert ports == {"https": 8443, "root": 1094, PROBE_PORT_NAME: 9106}


def rules_of(objects: list[dict[str, Any]], kind: str, suffix: str) -> list[dict[str, Any]]:
    return find(objects, kind, suffix)["rules"]


def test_the_orchestrator_may_do_exactly_what_discovery_needs(helm: Helm) -> None:
    objects = helm.template()
    role = rules_of(objects, "Role", "-orchestrator")
    assert role == [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}]
    cluster_role = rules_of(objects, "ClusterRole", "-orchestrator")
    assert {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list"]} in cluster_role
    everything = role + cluster_role
    assert not any("secrets" in rule["resources"] for rule in everything)
    # with its client certificate from a Secret it needs no CSR permission either
    objects = helm.template("client-secret-values.yaml")
    cluster_role = rules_of(objects, "ClusterRole", "-orchestrator")
    assert cluster_role == [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list"]}]


def test_a_client_certificate_from_a_secret_is_copied_to_a_key_its_user_owns(helm: Helm) -> None:
    """GSI refuses a group-readable key or one owned by root, as a Secret volume's are."""
    spec = find(helm.template("client-secret-values.yaml"), "Deployment", "-orchestrator")
    pod = spec["spec"]["template"]["spec"]
    (init,) = pod["initContainers"]
    assert (
        "install -m 0600 /run/client-secret/userkey.pem /etc/grid-security/tpc-bench/"
        in (init["command"][-1])
    )
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["client-credentials"]["emptyDir"]["medium"] == "Memory"
    assert volumes["client-secret"]["secret"]["secretName"]
    mounts = {m["name"] for c in pod["containers"] for m in c["volumeMounts"]}
    assert "client-secret" not in mounts  # only the copy reaches the orchestrator


def test_only_the_signer_touches_the_ca_secret(helm: Helm) -> None:
    objects = helm.template()
    ca_secret = find(objects, "Secret", "-ca")["metadata"]["name"]
    for item in objects:
        if item["kind"] not in ("Role", "ClusterRole"):
            continue
        touches = [r for r in item["rules"] if "secrets" in r["resources"]]
        if item["kind"] == "Role" and item["metadata"]["name"].endswith("-signer"):
            rule = {"apiGroups": [""], "resources": ["secrets"], "resourceNames": [ca_secret]}
            assert touches == [{**rule, "verbs": ["get", "patch"]}]
        else:
            assert touches == [], item["metadata"]["name"]
    mounted_by = [
        o["metadata"]["name"]
        for o in objects
        if o["kind"] in ("Deployment", "DaemonSet", "StatefulSet")
        for v in o["spec"]["template"]["spec"].get("volumes", [])
        if v.get("secret", {}).get("secretName") == ca_secret
    ]
    assert mounted_by == []  # the signer reads it through the API, no pod mounts it
    # the site's own CA: the signer may only read it
    objects = helm.template("existing-ca-values.yaml")
    signer_role = rules_of(objects, "Role", "-signer")
    assert {"apiGroups": [""], "resources": ["secrets"], "resourceNames": ["site-ca"],
            "verbs": ["get"]} in signer_role  # fmt: skip
    assert not [o for o in objects if o["kind"] == "Secret" and o["metadata"]["name"] == "site-ca"]


def test_generated_secrets_have_no_literal_defaults(helm: Helm) -> None:
    first, second = helm.template(), helm.template()
    for suffix, keys in (("-webapp", ("secret-key", "api-token")), ("-database", ("password",))):
        a, b = find(first, "Secret", suffix)["data"], find(second, "Secret", suffix)["data"]
        for key in keys:
            assert a[key] != b[key], f"{suffix} {key} is not generated"


def test_the_orchestrator_is_one_replica_with_a_persistent_spool(helm: Helm) -> None:
    objects = helm.template()
    deployment = find(objects, "Deployment", "-orchestrator")
    assert deployment["spec"]["replicas"] == 1
    assert deployment["spec"]["strategy"] == {"type": "Recreate"}
    spec = deployment["spec"]["template"]["spec"]
    claim = next(v for v in spec["volumes"] if v["name"] == "state")
    pvc = find(objects, "PersistentVolumeClaim", "-spool")
    assert claim["persistentVolumeClaim"]["claimName"] == pvc["metadata"]["name"]
    assert pvc["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"
    env = {e["name"]: e.get("value") for e in container(spec, "orchestrator")["env"]}
    assert env["TPCBENCH_DISCOVERY"] == "kubernetes"
    assert env["TPCBENCH_PROTOCOLS"] == "https,gridftp" and env["TPCBENCH_STREAMS"] == "8,1"
    assert env["TPCBENCH_TRANSFERS"] == "11" and env["TPCBENCH_FILE_SIZE"] == str(GiB)
    assert env["TPCBENCH_SCHEDULE"] == "0 0,12 * * *"
    annotations = deployment["spec"]["template"]["metadata"]["annotations"]
    assert annotations["prometheus.io/scrape"] == "true"
    probe = container(spec, "orchestrator")["livenessProbe"]["httpGet"]
    assert probe["path"] == "/healthz"


def test_the_webapp_migrates_before_it_serves(helm: Helm) -> None:
    objects = helm.template()
    spec = find(objects, "Deployment", "-webapp")["spec"]["template"]["spec"]
    assert [c["name"] for c in spec["initContainers"]] == ["migrate", "api-token"]
    assert spec["initContainers"][0]["command"] == ["python3", "manage.py", "migrate_locked"]
    assert not any(o["metadata"].get("annotations", {}).get("helm.sh/hook") in
                   ("pre-install", "pre-upgrade") for o in objects)  # fmt: skip


@pytest.mark.parametrize(
    ("scenario", "kinds"),
    [
        ("external-database-values.yaml", {"StatefulSet": 0, "Ingress": 0}),
        ("ingress-values.yaml", {"StatefulSet": 1, "Ingress": 1}),
        ("cert-manager-values.yaml", {"Certificate": 1, "Issuer": 1}),
    ],
)
def test_scenarios_render_what_they_promise(
    helm: Helm, scenario: str, kinds: dict[str, int]
) -> None:
    objects = helm.template(scenario)
    for kind, count in kinds.items():
        assert sum(o["kind"] == kind for o in objects) == count, kind


def test_custom_label_and_tolerations_reach_both_daemonsets(helm: Helm) -> None:
    objects = helm.template("custom-label-tolerations-values.yaml")
    for component in ("xrootd", "gridftp"):
        spec = find(objects, "DaemonSet", f"-{component}")["spec"]["template"]["spec"]
        assert spec["nodeSelector"] == {"nautilus.io/network": "100000"}
        assert {t["key"] for t in spec["tolerations"]} == {
            "nautilus.io/noceph",
            "nautilus.io/stashcache",
        }
    signer = container(find(objects, "Deployment", "-signer")["spec"]["template"]["spec"], "signer")
    assert "--node-label=nautilus.io/network=100000" in signer["args"]


def test_the_prelim_job_runs_the_servers_the_command_attaches_to(helm: Helm) -> None:
    from orchestrator.prelim.pair import PRELIM_SERVERS

    assert not [o for o in helm.template() if o["kind"] == "Job"]  # off by default
    job = find(helm.template("prelim-values.yaml"), "Job", "-prelim")
    spec = job["spec"]["template"]["spec"]
    assert spec["hostNetwork"] and spec["nodeSelector"] == {"kubernetes.io/hostname": "node-1"}
    sidecars = {c["name"]: c for c in spec["initContainers"] if c.get("restartPolicy") == "Always"}
    assert sorted(sidecars) == ["gridftp-a", "gridftp-b", "xrootd-a", "xrootd-b"]
    for server in PRELIM_SERVERS:
        xrootd, gridftp = sidecars[f"xrootd-{server.suffix}"], sidecars[f"gridftp-{server.suffix}"]
        assert f"--https-port={server.ports['https']}" in xrootd["args"]
        assert f"--root-port={server.ports['root']}" in xrootd["args"]
        assert f"--data-root=/data/{server.suffix}" in xrootd["args"]
        assert f"--port={server.ports['gridftp']}" in gridftp["args"]
        low, high = server.data_ports
        assert f"--data-ports={low},{high}" in gridftp["args"]
        assert f"--home-dir=/data/{server.suffix}" in gridftp["args"]
    run = container(spec, "prelim")
    assert run["args"][:3] == ["prelim", "concurrency", "--attach=$(HOST_IP)"]
    assert "--file-size=1GiB" in run["args"] and "--memory-limit=16Gi" in run["args"]
    data = next(v for v in spec["volumes"] if v["name"] == "data")
    assert data["emptyDir"] == {"medium": "Memory", "sizeLimit": "16Gi"}
    # the writers of the copies may fill the whole volume
    for name in ("xrootd-b", "gridftp-b"):
        assert int(sidecars[name]["resources"]["limits"]["memory"]) == 18 * GiB


def image_parsers() -> dict[str, Any]:
    """The command-line parser each of our images' entrypoints runs its args through."""
    from orchestrator.cli import build_parser as tpcbench_parser
    from orchestrator.servers.__main__ import build_parser as server_parser

    return {"orchestrator": tpcbench_parser, "xrootd": server_parser, "gridftp": server_parser}


@pytest.mark.parametrize("scenario", [None, *SCENARIOS])
def test_every_container_of_ours_gets_arguments_its_entrypoint_accepts(
    helm: Helm, scenario: str | None
) -> None:
    """Rendered args parse with the real parser (a value the chart passes that the command
    refuses would otherwise show only on a cluster, as a container exiting with status 2)."""
    parsers = image_parsers()
    objects = helm.template(*([scenario] if scenario else []))
    checked = 0
    for item in objects:
        spec = item.get("spec", {})
        pod = spec.get("template", {}).get("spec") or (spec if item["kind"] == "Pod" else {})
        for entry in pod.get("containers", []) + pod.get("initContainers", []):
            component = entry["image"].rsplit("/", 1)[-1].split(":")[0]
            if component not in parsers or "command" in entry or not entry.get("args"):
                continue  # not our entrypoint (python3 -c, manage.py) or the image's default
            args = [a.replace("$(HOST_IP)", "10.0.0.1").replace("$(NODE_NAME)", "node-1")
                    for a in entry["args"]]  # fmt: skip
            try:
                parsers[component]().parse_args(args)
            except SystemExit:
                pytest.fail(f"{item['kind']} {item['metadata']['name']} {entry['name']}: {args}")
            checked += 1
    assert checked >= 5


def test_the_webapp_pods_do_not_roll_on_an_upgrade_that_changes_nothing(helm: Helm) -> None:
    """Generated secrets differ between renders until the Secret exists; the webapp's pod
    template must not, or the first upgrade after an install restarts it for nothing."""
    first = find(helm.template(), "Deployment", "-webapp")["spec"]["template"]
    second = find(helm.template(), "Deployment", "-webapp")["spec"]["template"]
    assert first == second
    external = find(
        helm.template(**{"database.bundled": "false", "database.external.url": "postgres://x"}),
        "Deployment",
        "-webapp",
    )["spec"]["template"]
    assert external["metadata"]["annotations"] != first["metadata"]["annotations"]


def test_a_renewed_certificate_restarts_a_server_only_once_its_own_ports_are_idle(
    helm: Helm,
) -> None:
    """The liveness check watches the ports the server container serves (and GridFTP's data
    range), waits servers.renewalQuietPeriod, and at most a sixth of the certificate's life."""
    from orchestrator.servers.__main__ import build_parser

    objects = helm.template(**{"servers.renewalQuietPeriod": "15m", "certificates.days": "30"})
    for component in ("xrootd", "gridftp"):
        server = container(find(objects, "DaemonSet", f"-{component}")["spec"]["template"]["spec"],
                           component)  # fmt: skip
        command = server["livenessProbe"]["exec"]["command"]
        assert command[:4] == ["python3", "-m", "orchestrator.servers", "check"]
        check = build_parser().parse_args(command[3:])
        assert check.credentials == layout.HOST_CERT
        assert check.quiet_period == 15 * 60 and check.max_wait == 30 * 86400 / 6
        assert set(check.ports) == {p["containerPort"] for p in server["ports"]}
        served = build_parser().parse_args(server["args"])
        assert check.data_ports == getattr(served, "data_ports", None)
    assert check.data_ports == (20000, 20999)  # gridftp's own range
