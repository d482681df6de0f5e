"""Real third-party copies between lab nodes: HTTPS COPY, GridFTP and root://."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from orchestrator.endpoints import Endpoint, source_name
from orchestrator.lab import inventory_path, load_inventory
from tests.support.running_lab import TEST_FILE_SIZE, RunningLab

pytestmark = pytest.mark.lab
TRANSFER_TIMEOUT = 120


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def on_disk(node: Endpoint, name: str) -> Path:
    return Path(node.data_root) / name.lstrip("/")


def https_url(node: Endpoint, name: str) -> str:
    return f"https://{node.address}:{node.ports['https']}/{name.lstrip('/')}"


def curl_as_orchestrator(lab: RunningLab, *args: str) -> subprocess.CompletedProcess[str]:
    client = lab.inventory.client
    return subprocess.run(
        ["curl", "-sS", "--capath", str(client.certdir), "--cert", str(client.cert),
         "--key", str(client.key), *args],
        capture_output=True, text=True, timeout=TRANSFER_TIMEOUT,
    )  # fmt: skip


def curl_copy(lab: RunningLab, source_url: str, destination_url: str, streams: int) -> tuple:
    """A pull as WLCG clients make it with certificates: a macaroon from the source for the
    destination's GET (XRootD 5.5 gets there without a certificate), then the COPY."""
    asked = curl_as_orchestrator(
        lab, "-X", "POST", "-H", "Content-Type: application/macaroon-request",
        "-d", json.dumps({"caveats": ["activity:DOWNLOAD"], "validity": "PT5M"}), source_url,
    )  # fmt: skip
    macaroon = json.loads(asked.stdout)["macaroon"]
    result = curl_as_orchestrator(
        lab, "-X", "COPY", "-H", f"Source: {source_url}",
        "-H", f"TransferHeaderAuthorization: Bearer {macaroon}",
        "-H", f"X-Number-Of-Streams: {streams}", "-w", "\n%{http_code}", destination_url,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    *body, status = result.stdout.splitlines()
    return int(status), [line for line in body if line.strip()]


def test_every_node_is_healthy_and_listed(running_lab: RunningLab) -> None:
    inventory = load_inventory(inventory_path(running_lab.home))
    assert [n.name for n in inventory.nodes] == ["lab-1", "lab-2", "lab-3"]
    endpoints = {(n.address, n.ports["https"]) for n in inventory.nodes}
    assert len(endpoints) == 3  # distinct addresses (netns) or distinct ports (loopback)
    for node in inventory.nodes:
        assert inventory.health[node.name]["ok"], inventory.health[node.name]
        source = on_disk(node, source_name(TEST_FILE_SIZE))
        assert source.stat().st_size == TEST_FILE_SIZE


def test_status_json_reports_nodes_ports_and_health(running_lab: RunningLab) -> None:
    env = {**os.environ, "TPCBENCH_HOME": str(running_lab.home)}
    result = subprocess.run(
        [sys.executable, "-m", "orchestrator", "lab", "status", "--json"],
        capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    status = json.loads(result.stdout)
    assert [n["name"] for n in status["nodes"]] == ["lab-1", "lab-2", "lab-3"]
    for node in status["nodes"]:
        assert set(node["ports"]) == {"https", "root", "gridftp"}
        assert node["health"]["ok"] is True
        assert node["health"]["checks"]["xrootd_process"] == "ok"
    assert status["file_size"] == TEST_FILE_SIZE
    assert Path(status["client"]["cert"]).exists()


def test_certificates_verify_with_openssl(running_lab: RunningLab) -> None:
    certdir = running_lab.inventory.client.certdir
    nodes_dir = running_lab.home / "lab" / "nodes"
    certs = [nodes_dir / n.name / "pki" / "hostcert.pem" for n in running_lab.inventory.nodes]
    certs.append(running_lab.inventory.client.cert)
    for cert in certs:
        result = subprocess.run(
            ["openssl", "verify", "-CApath", str(certdir), str(cert)],
            capture_output=True, text=True,
        )  # fmt: skip
        assert result.returncode == 0 and result.stdout.strip().endswith(": OK"), result


@pytest.mark.parametrize("streams", [1, 8])
def test_https_copy_pull_copies_the_exact_bytes(running_lab: RunningLab, streams: int) -> None:
    src, dst = running_lab.inventory.nodes[0], running_lab.inventory.nodes[1]
    source = source_name(TEST_FILE_SIZE)
    target = f"/tpcbench-https-pull-{streams}-{uuid.uuid4().hex}"
    status, body = curl_copy(running_lab, https_url(src, source), https_url(dst, target), streams)
    assert status == 201
    assert body[-1].startswith("success:"), body
    assert sha256(on_disk(dst, target)) == sha256(on_disk(src, source))


def test_https_copy_of_a_missing_source_is_a_failure(running_lab: RunningLab) -> None:
    src, dst = running_lab.inventory.nodes[0], running_lab.inventory.nodes[2]
    target = f"/tpcbench-https-missing-{uuid.uuid4().hex}"
    missing = https_url(src, "/tpcbench-source-missing")
    status, body = curl_copy(running_lab, missing, https_url(dst, target), 1)
    assert status == 201  # XRootD 5.5 reports the failure in the body, not the status
    assert body[-1].startswith("failure:"), body
    assert "404" in body[-1]


@pytest.mark.parametrize("streams", [1, 8])
def test_gridftp_tpc_copies_the_exact_bytes(running_lab: RunningLab, streams: int) -> None:
    src, dst = running_lab.inventory.nodes[1], running_lab.inventory.nodes[2]
    client = running_lab.inventory.client
    source = on_disk(src, source_name(TEST_FILE_SIZE))
    target = on_disk(dst, f"gridftp-{streams}-{uuid.uuid4().hex}")
    env = {
        **os.environ,
        "X509_USER_CERT": str(client.cert),
        "X509_USER_KEY": str(client.key),
        "X509_CERT_DIR": str(client.certdir),
    }
    result = subprocess.run(
        ["globus-url-copy", "-p", str(streams),
         f"gsiftp://{src.address}:{src.ports['gridftp']}{source}",
         f"gsiftp://{dst.address}:{dst.ports['gridftp']}{target}"],
        capture_output=True, text=True, env=env, timeout=TRANSFER_TIMEOUT,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert sha256(target) == sha256(source)


def test_root_protocol_tpc_copies_the_exact_bytes(running_lab: RunningLab) -> None:
    src, dst = running_lab.inventory.nodes[2], running_lab.inventory.nodes[0]
    source = source_name(TEST_FILE_SIZE)
    target = f"/tpcbench-root-tpc-{uuid.uuid4().hex}"
    client = running_lab.inventory.client
    env = {
        **os.environ,
        "X509_USER_CERT": str(client.cert),
        "X509_USER_KEY": str(client.key),
        "X509_CERT_DIR": str(client.certdir),
        "XrdSecGSICREATEPROXY": "0",  # the certificate itself, no SHA-1 proxy
        "XrdSecGSISRVNAMES": "lab-*",  # host certificates are named after the node
    }
    result = subprocess.run(
        ["xrdcp", "--tpc", "only",
         f"root://{src.address}:{src.ports['root']}/{source}",
         f"root://{dst.address}:{dst.ports['root']}/{target}"],
        capture_output=True, text=True, env=env, timeout=TRANSFER_TIMEOUT,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert sha256(on_disk(dst, target)) == sha256(on_disk(src, source))
