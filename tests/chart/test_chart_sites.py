"""The chart's sites (values `sites:`), rendered: a redirector per site (an XRootD manager with
its cmsd, host network, a port of its own), the Service its data servers subscribe through,
and the site's nodes as data servers (xrootd + cmsd). Off by default, and then nothing of it is
rendered. The objects go to the real API server as a dry run with ci/sites-values.yaml
(test_chart_dry_run.py's scenarios), and run on real kubelets in test_chart_sites_on_kubelets.py."""

from __future__ import annotations

from typing import Any

import pytest

from orchestrator.discovery.kubernetes import SITE_ANNOTATION, XROOTD_SELECTOR
from orchestrator.servers.__main__ import build_parser, cluster_place
from orchestrator.servers.cluster_roles import ClusterPlace
from tests.support.helm_chart import CHART, Helm, find

SITES = "sites-values.yaml"


def container(pod_spec: dict[str, Any], name: str) -> dict[str, Any]:
    found = [c for c in pod_spec["containers"] if c["name"] == name]
    assert len(found) == 1, [c["name"] for c in pod_spec["containers"]]
    return found[0]


def parsed(args: list[str]) -> Any:
    return build_parser().parse_args([a.replace("$(HOST_IP)", "10.0.0.1") for a in args])


def names(objects: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return sorted((o["kind"], o["metadata"]["name"]) for o in objects)


def test_sites_off_render_nothing_of_them(helm: Helm) -> None:
    default = helm.template()
    off = helm.template(**{"sites.enabled": "false", "sites.names": "{a,b}"})
    assert names(off) == names(default)
    assert not [o for o in default if "redirector" in o["metadata"]["name"]]
    xrootd = find(default, "DaemonSet", "-xrootd")
    assert xrootd == find(off, "DaemonSet", "-xrootd")
    spec = xrootd["spec"]["template"]["spec"]
    assert (
        "affinity" not in spec and "tpc-bench/site" not in xrootd["spec"]["selector"]["matchLabels"]
    )
    assert [c["name"] for c in spec["containers"]] == ["xrootd", "rtt-probe", "certificate-renewal"]
    assert [p["name"] for p in container(spec, "xrootd")["ports"]] == ["https", "root"]


def test_each_site_has_a_redirector_on_a_node_of_its_own_with_cmsd_beside_xrootd(
    helm: Helm,
) -> None:
    objects = helm.template(SITES)
    for site in ("a", "b"):
        deployment = find(objects, "Deployment", f"-redirector-{site}")
        assert deployment["spec"]["replicas"] == 1
        assert deployment["spec"]["strategy"] == {"type": "Recreate"}
        pod = deployment["spec"]["template"]
        assert pod["metadata"]["labels"]["tpc-bench/site"] == site
        assert pod["metadata"]["labels"]["app.kubernetes.io/component"] == "redirector"
        spec = pod["spec"]
        assert spec["hostNetwork"] is True and spec["dnsPolicy"] == "ClusterFirstWithHostNet"
        # a benchmarked node of the site: the signer gives host certificates there only
        assert spec["nodeSelector"] == {"tpc-bench.io/network": "100000", "tpc-bench.io/site": site}
        assert spec["serviceAccountName"].endswith("-servers")
        xrootd, cmsd = container(spec, "xrootd"), container(spec, "cmsd")
        assert [(p["name"], p["containerPort"]) for p in xrootd["ports"]] == [("root", 1095)]
        assert [(p["name"], p["containerPort"]) for p in cmsd["ports"]] == [("cms", 1213)]
        assert cmsd["args"] == [*xrootd["args"], "--program=cmsd"]  # one configuration
        args = parsed(xrootd["args"])
        assert args.program == "xrootd" and parsed(cmsd["args"]).program == "cmsd"
        assert (args.root_port, args.https_port, args.name) == (1095, 1095, f"{site}-rdr")
        assert cluster_place(args) == ClusterPlace(
            role="manager", address="10.0.0.1", cms_port=1213
        )
        assert args.source_size is None  # a redirector holds no data
        # both share the run volume (the admin path) and /tmp (cmsd's environment file)
        for mount in ("run", "tmp"):
            assert mount in {m["name"] for m in cmsd["volumeMounts"]}
        assert xrootd["readinessProbe"]["exec"]["command"][-1] == "--port=1095"
        assert cmsd["readinessProbe"]["tcpSocket"] == {"port": "cms"}


def test_a_sites_service_gives_its_redirector_a_stable_name(helm: Helm) -> None:
    objects = helm.template(SITES)
    service = find(objects, "Service", "-redirector-a")
    deployment = find(objects, "Deployment", "-redirector-a")
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= labels.items()
    assert service["spec"]["selector"]["tpc-bench/site"] == "a"
    ports = {p["name"]: (p["port"], p["targetPort"]) for p in service["spec"]["ports"]}
    assert ports == {"cms": (1213, 1213), "root": (1095, 1095)}


def test_a_sites_nodes_run_data_servers_of_its_redirector(helm: Helm) -> None:
    objects = helm.template(SITES, namespace="tpc", **{"sites.redirector.cmsPort": "3121"})
    for site in ("a", "b"):
        ds = find(objects, "DaemonSet", f"-xrootd-{site}")
        pod = ds["spec"]["template"]
        assert ds["spec"]["selector"]["matchLabels"]["tpc-bench/site"] == site
        # discovery finds them as it finds every XRootD pod, and reads their site
        labels = pod["metadata"]["labels"]
        assert all(labels[k] == v for k, v in (p.split("=") for p in XROOTD_SELECTOR.split(",")))
        assert pod["metadata"]["annotations"][SITE_ANNOTATION] == site
        spec = pod["spec"]
        assert spec["nodeSelector"] == {"tpc-bench.io/network": "100000", "tpc-bench.io/site": site}
        xrootd, cmsd = container(spec, "xrootd"), container(spec, "cmsd")
        args = parsed(xrootd["args"])
        service = find(objects, "Service", f"-redirector-{site}")["metadata"]["name"]
        assert cluster_place(args) == ClusterPlace(
            role="server", upstream=f"{service}.tpc.svc:3121"
        )
        # HTTPS on the xroot port: the port a redirect names; one port, one name
        assert args.https_port == args.root_port == 1094
        assert [(p["name"], p["containerPort"]) for p in xrootd["ports"]] == [("root", 1094)]
        assert args.source_size == 1 << 30  # every data server holds the source file
        assert cmsd["args"] == [*xrootd["args"], "--program=cmsd"]
        assert {"data", "run", "tmp"} <= {m["name"] for m in cmsd["volumeMounts"]}
        assert "ports" not in cmsd  # a data server's cmsd listens on nothing
        liveness = xrootd["livenessProbe"]["exec"]["command"]
        assert [a for a in liveness if a.startswith("--port=")] == ["--port=1094"]


def test_the_standalone_servers_keep_off_the_sites_nodes(helm: Helm) -> None:
    objects = helm.template(SITES, **{"sites.label": "example.org/site"})
    spec = find(objects, "DaemonSet", "-xrootd")["spec"]["template"]["spec"]
    terms = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert terms["nodeSelectorTerms"] == [
        {
            "matchExpressions": [
                {"key": "example.org/site", "operator": "NotIn", "values": ["a", "b"]}
            ]
        }
    ]
    assert (
        find(objects, "DaemonSet", "-xrootd-a")["spec"]["template"]["spec"]["nodeSelector"][
            "example.org/site"
        ]
        == "a"
    )
    # GridFTP runs on every benchmarked node, in a site or not
    gridftp = find(objects, "DaemonSet", "-gridftp")["spec"]["template"]["spec"]
    assert "affinity" not in gridftp and len([o for o in objects if o["kind"] == "DaemonSet"]) == 4


@pytest.mark.parametrize(
    ("sets", "message"),
    [
        ({"sites.enabled": "true"}, "sites.enabled needs sites.names"),
        (
            {"sites.enabled": "true", "sites.names": "{a}", "sites.redirector.rootPort": "1094"},
            "sites.redirector.rootPort 1094 is servers.rootPort",
        ),
        ({"sites.names": "{Site-A}"}, "sites.names.0: Does not match pattern"),
        ({"sites.names": "{a,a}"}, "unique"),
    ],
)
def test_wrong_sites_are_refused_with_a_message(
    helm: Helm, sets: dict[str, str], message: str
) -> None:
    argv = ["template", "rel", str(CHART), "--kube-version", "1.31.4"]
    for key, value in sets.items():
        argv += ["--set", f"{key}={value}"]
    result = helm.run(*argv, check=False)
    assert result.returncode != 0
    assert message in result.stderr, result.stderr
