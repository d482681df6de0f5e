"""Without root the lab falls back to loopback ports and still serves real transfers.

The test forks and drops to `nobody` in the child (the interpreter may live in a directory
`nobody` cannot read, so a fresh `runuser` process is not an option); the child runs a whole
lab cycle and reports back through a pipe.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import shutil
import traceback
from pathlib import Path
from typing import Any

import pytest

from ca.authority import CertificateAuthority
from orchestrator.endpoints import source_name
from orchestrator.lab import LabNetwork, start_lab, stop_lab
from orchestrator.lab.processes import group_members
from orchestrator.measurement.run import run_measurement
from orchestrator.measurement.spec import MeasurementRequest, destination_name
from tests.support.running_lab import make_home

pytestmark = [
    pytest.mark.lab,
    pytest.mark.skipif(os.geteuid() != 0, reason="dropping to nobody needs root"),
]
NOBODY = 65534
SIZE = 4 << 20


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def lab_cycle_as_nobody(home: Path) -> dict[str, Any]:
    """Runs in the child after setuid(nobody): up, one HTTPS COPY, down."""
    CertificateAuthority.init(home / "ca")
    network = LabNetwork(prefix="tpcbn", base_port=25000)
    inventory = start_lab(home, 2, SIZE, network=network)
    report: dict[str, Any] = {"mode": inventory.mode, "health": inventory.health}
    report["issuer_health"] = inventory.token_issuer.get("health")
    try:
        src, dst = inventory.nodes
        # a certificate-authorized copy, as the servers now require: the orchestrator's
        # certificate at the destination, a macaroon from the source for its leg
        x509_copy = asyncio.run(
            run_measurement(
                MeasurementRequest.between(src, dst, "https", 2, transfers=1, file_size=SIZE),
                creds=inventory.client, keep_files=True, measure_latency=False,
            )
        )  # fmt: skip
        transfer = x509_copy.transfers[0]
        report["x509_copy"] = (transfer.outcome, transfer.message)
        copied = destination_name(x509_copy.uuid, transfer.index, "https").lstrip("/")
        report["same_bytes"] = sha256(Path(dst.data_root) / copied) == sha256(
            Path(src.data_root) / source_name(SIZE).lstrip("/")
        )
        # tokens too: the loopback nodes know the issuer's keys from their pre-filled cache
        token_copy = asyncio.run(
            run_measurement(
                MeasurementRequest.between(
                    src, dst, "https", 2, auth="token", transfers=1, file_size=SIZE
                ),
                creds=inventory.client, measure_latency=False,
            )
        )  # fmt: skip
        report["token_copy"] = [(t.outcome, t.message) for t in token_copy.transfers]
        record = json.loads((home / "lab" / "run.json").read_text())
        report["pids"] = [p["pid"] for p in record["processes"]]
        report["uids"] = [os.stat(f"/proc/{pid}").st_uid for pid in report["pids"]]
    finally:
        report["stopped"] = stop_lab(home)
    return report


def test_unprivileged_lab_uses_loopback_ports_and_copies() -> None:
    home = make_home()
    os.chown(home, NOBODY, NOBODY)
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never return into pytest
        os.close(reader)
        try:
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            result = {"report": lab_cycle_as_nobody(home)}
        except BaseException:
            result = {"error": traceback.format_exc()}
        with os.fdopen(writer, "w") as out:
            json.dump(result, out)
        os._exit(0)
    os.close(writer)
    with os.fdopen(reader) as incoming:
        result = json.loads(incoming.read() or '{"error": "child wrote nothing"}')
    os.waitpid(pid, 0)
    try:
        assert "error" not in result, result.get("error")
        report = result["report"]
        assert report["mode"] == "loopback"
        assert all(h["ok"] for h in report["health"].values()), report["health"]
        assert report["x509_copy"][0] == "success", report["x509_copy"]
        assert report["same_bytes"] is True
        assert set(report["uids"]) == {NOBODY}
        assert len(report["stopped"]) == 5  # two servers on each node, the token issuer
        assert report["issuer_health"] == "ok"
        assert report["token_copy"] == [["success", "Created"]]
        assert all(group_members(p) == [] for p in report["pids"])
    finally:
        shutil.rmtree(home, ignore_errors=True)
