"""Tokens on a cluster, as rendered: with `campaign.auth: [x509, token]` the chart runs the
token issuer, the XRootD servers accept its tokens and trust our CA where their SciTokens
plugin looks, and only the orchestrator gets the signing key. The API server's dry run of
the same scenario (ci/tokens-values.yaml) is in test_chart_dry_run.py; the pods run for real
in test_chart_on_kubelets.py."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import pytest

from orchestrator.cli import build_parser as tpcbench_parser
from orchestrator.cluster.signer import TOKEN_KEY_KEY
from orchestrator.servers.trust_bundle import build_parser as trust_bundle_parser
from orchestrator.token_issuer import DOCUMENTS
from orchestrator.token_issuer import build_parser as issuer_parser
from tests.support.helm_chart import CHART, Helm, find

TOKENS = "tokens-values.yaml"
SCITOKENS_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"  # what scitokens-cpp 0.7 trusts


def pod_spec(objects: list[dict[str, Any]], kind: str, suffix: str) -> dict[str, Any]:
    return find(objects, kind, suffix)["spec"]["template"]["spec"]


def named(items: list[dict[str, Any]], name: str) -> dict[str, Any]:
    found = [item for item in items if item["name"] == name]
    assert len(found) == 1, [item["name"] for item in items]
    return found[0]


def flag(args: list[str], name: str) -> str:
    values = [a.split("=", 1)[1] for a in args if a.startswith(f"--{name}=")]
    assert len(values) == 1, (name, args)
    return values[0]


def env_of(container: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e.get("value", "") for e in container["env"]}


def test_without_tokens_nothing_of_the_issuer_is_rendered(helm: Helm) -> None:
    objects = helm.template()
    assert not [o for o in objects if "token-" in o["metadata"]["name"]]
    xrootd = pod_spec(objects, "DaemonSet", "-xrootd")
    assert [c["name"] for c in xrootd["initContainers"]] == ["host-certificate"]
    assert not [a for a in named(xrootd["containers"], "xrootd")["args"] if "token" in a]
    env = env_of(
        named(pod_spec(objects, "Deployment", "-orchestrator")["containers"], "orchestrator")
    )
    assert env["TPCBENCH_AUTH"] == "x509"
    assert "TPCBENCH_TOKEN_ISSUER" not in env
    signer = named(pod_spec(objects, "Deployment", "-signer")["containers"], "signer")
    assert not [a for a in signer["args"] if "token" in a or "issuer" in a]


@pytest.mark.parametrize(
    ("checksum", "expected"), [(None, "none"), ("{none,adler32}", "none,adler32"), ("null", "none")]
)
def test_the_checksum_dimension_reaches_the_orchestrator(
    helm: Helm, checksum: str | None, expected: str
) -> None:
    """campaign.checksum becomes TPCBENCH_CHECKSUM; unset (a release from before it): none."""
    sets = {} if checksum is None else {"campaign.checksum": checksum}
    objects = helm.template(**sets)
    orchestrator = named(
        pod_spec(objects, "Deployment", "-orchestrator")["containers"], "orchestrator"
    )
    assert env_of(orchestrator)["TPCBENCH_CHECKSUM"] == expected


@pytest.mark.parametrize(
    ("sets", "expected"),
    [
        ({}, ("host", "false", "false")),
        ({"campaign.scope": "null", "campaign.sweepHosts": "null", "campaign.lookups": "null"},
         ("host", "false", "false")),
        ({"campaign.scope": "site", "campaign.sweepHosts": "true", "campaign.lookups": "true"},
         ("site", "true", "true")),
    ],
)  # fmt: skip
def test_the_campaign_scope_reaches_the_orchestrator(
    helm: Helm, sets: dict[str, str], expected: tuple[str, str, str]
) -> None:
    """campaign.scope, .sweepHosts, .lookups become TPCBENCH_SCOPE, _SWEEP_HOSTS, _LOOKUPS
    (docs/sites.md); unset (a release from before them): host, false, false."""
    objects = helm.template(**sets)
    orchestrator = named(
        pod_spec(objects, "Deployment", "-orchestrator")["containers"], "orchestrator"
    )
    env = env_of(orchestrator)
    assert (env["TPCBENCH_SCOPE"], env["TPCBENCH_SWEEP_HOSTS"], env["TPCBENCH_LOOKUPS"]) == expected


def test_an_upgrade_that_reuses_values_from_before_campaign_auth_keeps_certificates(
    helm: Helm,
) -> None:
    """`helm upgrade --reuse-values` keeps the old release's values, which have no
    campaign.auth: the orchestrator must not get an empty TPCBENCH_AUTH (it would not start)."""
    objects = helm.template(**{"campaign.auth": "null"})
    orchestrator = named(
        pod_spec(objects, "Deployment", "-orchestrator")["containers"], "orchestrator"
    )
    assert env_of(orchestrator)["TPCBENCH_AUTH"] == "x509"
    assert not [o for o in objects if "token-" in o["metadata"]["name"]]


def test_every_part_names_the_same_issuer_the_service_answers_for(helm: Helm) -> None:
    objects = helm.template(TOKENS, namespace="bench")
    service = find(objects, "Service", "-token-issuer")
    url = f"https://{service['metadata']['name']}.bench.svc"
    assert service["spec"]["ports"] == [{"name": "https", "port": 443, "targetPort": "https"}]
    issuer = pod_spec(objects, "Deployment", "-token-issuer")
    serving = named(issuer["containers"], "token-issuer")
    assert serving["ports"] == [{"name": "https", "containerPort": 8443}]
    assert serving["readinessProbe"]["httpGet"]["scheme"] == "HTTPS"
    served = issuer_parser().parse_args(serving["args"])
    assert served.port == 8443
    xrootd = named(pod_spec(objects, "DaemonSet", "-xrootd")["containers"], "xrootd")
    assert flag(xrootd["args"], "token-issuer") == url
    # tokens are minted for https_origin(endpoint): the pod's host IP and the https port
    assert flag(xrootd["args"], "token-audience") == "https://$(HOST_IP):8443"
    orchestrator = named(
        pod_spec(objects, "Deployment", "-orchestrator")["containers"], "orchestrator"
    )
    assert env_of(orchestrator)["TPCBENCH_TOKEN_ISSUER"] == url
    assert env_of(orchestrator)["TPCBENCH_AUTH"] == "x509,token"
    signer = named(pod_spec(objects, "Deployment", "-signer")["containers"], "signer")
    assert flag(signer["args"], "token-issuer-url") == url
    # the issuer's certificate: asked for (and renewed) for the URL's host name, by its own
    # ServiceAccount, from the signer name the signer answers
    for entry in (issuer["initContainers"][0], named(issuer["containers"], "certificate-renewal")):
        request = tpcbench_parser().parse_args(entry["args"])
        assert (request.kind, request.name) == ("issuer", urlsplit(url).hostname)
        assert request.signer == flag(signer["args"], "issuer-signer")
    assert issuer["serviceAccountName"] == flag(signer["args"], "issuer-service-account")
    assert request.keep_renewed and request.out_dir == served.cert.parent
    # the documents the signer publishes are the ones served
    documents = named(issuer["volumes"], "documents")["configMap"]["name"]
    assert documents == flag(signer["args"], "token-documents-configmap")
    mount = named(serving["volumeMounts"], "documents")["mountPath"]
    assert str(served.documents) == mount
    config_map = find(objects, "ConfigMap", "-token-issuer")
    assert config_map["metadata"]["name"] == documents and "data" not in config_map
    assert sorted(DOCUMENTS.values()) == ["jwks.json", "openid-configuration.json"]


def test_xrootd_trusts_our_ca_where_the_scitokens_plugin_looks(helm: Helm) -> None:
    spec = pod_spec(helm.template(TOKENS), "DaemonSet", "-xrootd")
    init = named(spec["initContainers"], "token-trust")
    assert [c["name"] for c in spec["initContainers"]] == ["host-certificate", "token-trust"]
    trust = trust_bundle_parser().parse_args(init["args"])
    assert str(trust.system_bundle) == SCITOKENS_BUNDLE  # the image's own bundle ...
    assert str(trust.ca) == "/etc/grid-security/certificates/ca.crt"  # ... plus the signer's CA
    assert trust.wait > 0  # the grid-security ConfigMap may fill after the pod started
    written = named(init["volumeMounts"], "token-trust")["mountPath"]
    assert str(trust.out.parent) == written
    mount = named(named(spec["containers"], "xrootd")["volumeMounts"], "token-trust")
    assert mount == {
        "name": "token-trust",
        "mountPath": SCITOKENS_BUNDLE,
        "subPath": trust.out.name,
        "readOnly": True,
    }
    assert named(spec["volumes"], "token-trust")["emptyDir"]["sizeLimit"] == "4Mi"
    certificates = named(init["volumeMounts"], "certificates")
    assert certificates["mountPath"] == str(trust.ca.parent) and certificates["readOnly"]
    # the trust step runs in the xrootd image (its bundle), under the same restrictions
    assert init["image"] == named(spec["containers"], "xrootd")["image"]
    assert init["securityContext"]["readOnlyRootFilesystem"]
    assert init["resources"]["requests"] == init["resources"]["limits"]


def test_only_the_orchestrator_mounts_the_signing_key_and_only_the_signer_writes_it(
    helm: Helm,
) -> None:
    objects = helm.template(TOKENS)
    secret = find(objects, "Secret", "-token-key")
    assert "data" not in secret and "stringData" not in secret  # never from values or Helm
    name = secret["metadata"]["name"]
    mounted_by = [
        (o["metadata"]["name"], v["secret"])
        for o in objects
        if o["kind"] in ("Deployment", "DaemonSet", "StatefulSet", "Job")
        for v in o["spec"]["template"]["spec"].get("volumes", [])
        if v.get("secret", {}).get("secretName") == name
    ]
    assert [(owner, volume["defaultMode"]) for owner, volume in mounted_by] == [
        ("rel-tpc-bench-orchestrator", 0o400)
    ]
    spec = pod_spec(objects, "Deployment", "-orchestrator")
    orchestrator = named(spec["containers"], "orchestrator")
    mount = named(orchestrator["volumeMounts"], "token-key")
    assert "subPath" not in mount  # the key the signer writes after the pod started arrives
    key = env_of(orchestrator)["TPCBENCH_TOKEN_ISSUER_KEY"]
    assert key == f"{mount['mountPath']}/{TOKEN_KEY_KEY}"
    signer = named(pod_spec(objects, "Deployment", "-signer")["containers"], "signer")
    assert flag(signer["args"], "token-key-secret") == name
    for item in objects:
        if item["kind"] not in ("Role", "ClusterRole"):
            continue
        rules = [r for r in item["rules"] if name in r.get("resourceNames", [])]
        if item["kind"] == "Role" and item["metadata"]["name"].endswith("-signer"):
            assert [r["verbs"] for r in rules] == [["get", "patch"]]
        else:
            assert rules == [], item["metadata"]["name"]
            assert not [r for r in item["rules"] if "secrets" in r["resources"]]


def test_the_issuer_may_ask_for_its_certificate_and_the_signer_may_answer(helm: Helm) -> None:
    objects = helm.template(TOKENS, namespace="bench")
    account = find(objects, "ServiceAccount", "-token-issuer")["metadata"]["name"]
    requesters = next(
        o for o in objects
        if o["kind"] == "ClusterRoleBinding" and o["metadata"]["name"].endswith("-servers")
    )  # fmt: skip
    assert {"kind": "ServiceAccount", "name": account, "namespace": "bench"} in requesters[
        "subjects"
    ]
    signers = next(
        r for r in find(objects, "ClusterRole", "-signer")["rules"] if "signers" in r["resources"]
    )
    assert "tpc-bench.io/bench.rel-tpc-bench-issuer" in signers["resourceNames"]
    config_maps = next(
        r for r in find(objects, "Role", "-signer")["rules"] if "configmaps" in r["resources"]
    )
    assert "rel-tpc-bench-token-issuer" in config_maps["resourceNames"]


def test_a_release_name_too_long_for_the_certificate_is_refused(helm: Helm) -> None:
    result = helm.run(
        "template", "rel", str(CHART), "--kube-version", "1.31.4",
        "--values", str(CHART / "ci" / TOKENS),
        "--set", f"fullnameOverride={'x' * 40}", "--namespace", "a-long-namespace-name",
        check=False,
    )  # fmt: skip
    assert result.returncode != 0
    assert "longer than 64 characters" in result.stderr


@pytest.mark.parametrize("auth", ["{kerberos}", "{}", "{token,token}"])
def test_campaign_auth_takes_x509_and_token_only(helm: Helm, auth: str) -> None:
    result = helm.run(
        "template", "rel", str(CHART), "--kube-version", "1.31.4",
        "--set", f"campaign.auth={auth}", check=False,
    )  # fmt: skip
    assert result.returncode != 0
    assert "campaign.auth" in result.stderr
