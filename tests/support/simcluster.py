"""A real Kubernetes control plane on this machine, with simulated nodes.

etcd (Debian's, data on tmpfs), kube-apiserver, kube-controller-manager and kube-scheduler
(v1.31.4, built once by `scripts/simcluster/build.sh`) and kwok, which plays the kubelets of
fake nodes. Everything listens on 127.0.0.1 only, on free ports, so several clusters can run
at once. The command lines and credentials are the cluster lab's own
(orchestrator/lab/kube/control_plane.py); the recipe and its findings are in docs/discovery.md
(how the tests run the cluster) and scripts/simcluster/README.md (the build).

    with SimCluster(workdir) as cluster:
        api = cluster.api_client()          # a kubernetes.client.ApiClient, admin
        ...                                  # or use cluster.kubeconfig
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import secrets
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from orchestrator.lab.kube.control_plane import ControlPlane, free_ports

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

log = logging.getLogger(__name__)

REPO_ROOT = Path(__file__).resolve().parents[2]
BUILD_SCRIPT = REPO_ROOT / "scripts" / "simcluster" / "build.sh"
DEFAULT_CACHE = Path("/var/cache/tpc-bench/simcluster/bin")
# kwok manages only the nodes carrying this annotation (see `fake_node`).
FAKE_NODE_ANNOTATION = ("kwok.x-k8s.io/node", "fake")
# The controllers a DaemonSet-on-fake-nodes cluster needs; nodelifecycle removes the
# not-ready taint TaintNodesByCondition puts on new nodes, without it no DS pod is scheduled.
# statefulset and persistentvolume-binder run the chart's database (on volumes tests make).
CONTROLLERS = (
    "daemonset,nodelifecycle,serviceaccount,serviceaccount-token,deployment,replicaset,"
    "garbagecollector,namespace,podgc,job,endpoint,endpointslice,statefulset,"
    "persistentvolume-binder"
)
STARTUP_TIMEOUT = 300.0  # generous: a loaded 2-core machine starts the apiserver slowly


class SimClusterError(RuntimeError):
    """The simulated cluster could not be built or started."""


def binary_cache() -> Path:
    return Path(os.environ.get("TPCBENCH_SIMCLUSTER_CACHE", DEFAULT_CACHE))


def ensure_binaries() -> Path:
    """Build (once, cached machine-wide) the control-plane binaries; return their directory."""
    # stderr passes through: a cold build takes minutes and says what it is doing.
    result = subprocess.run([str(BUILD_SCRIPT)], stdout=subprocess.PIPE, text=True, check=False)
    if result.returncode != 0:
        raise SimClusterError(f"{BUILD_SCRIPT} failed with exit code {result.returncode}")
    return Path(result.stdout.strip().splitlines()[-1])


def fake_node(name: str, internal_ip: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    """A Node manifest kwok will manage: it turns Ready and runs the pods scheduled on it."""
    key, value = FAKE_NODE_ANNOTATION
    capacity = {"cpu": "32", "memory": "256Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {key: value},
            "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux"}
            | (labels or {}),
        },
        "status": {
            "addresses": [
                {"type": "InternalIP", "address": internal_ip},
                {"type": "Hostname", "address": name},
            ],
            "allocatable": capacity,
            "capacity": capacity,
        },
    }


def _die_with_parent() -> None:
    """Runs in the child before exec: if the test process dies (even SIGKILL), so do we."""
    pr_set_pdeathsig = 1
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)


class SimCluster:
    """Starts the five processes under `workdir` and stops them (by pid) on exit."""

    def __init__(self, workdir: Path, bin_dir: Path | None = None) -> None:
        self.workdir = Path(workdir)
        self.bin_dir = bin_dir or binary_cache()
        etcd_port, peer_port, api_port = free_ports(3)
        etcd_data = Path("/dev/shm") / f"tpcbench-etcd-{etcd_port}-{secrets.token_hex(4)}"
        self.plane = ControlPlane(
            workdir=self.workdir,
            bin_dir=self.bin_dir,
            address="127.0.0.1",
            port=api_port,
            etcd_port=etcd_port,
            etcd_peer_port=peer_port,
            etcd_data=etcd_data,
            controllers=CONTROLLERS,
        )
        self.kubeconfig = self.plane.kubeconfig
        self.ca_file = self.plane.ca_file
        self.admin_token = self.plane.admin.token
        self.api_port = api_port
        self.server = self.plane.server
        self._procs: list[tuple[str, subprocess.Popen[bytes]]] = []

    # -- lifecycle -------------------------------------------------------------------------

    def __enter__(self) -> SimCluster:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def start(self) -> None:
        etcd = shutil.which("etcd")
        if etcd is None:
            raise SimClusterError("etcd not found: run scripts/install-system-deps.sh cluster")
        for name in ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"):
            if not os.access(self.bin_dir / name, os.X_OK):
                raise SimClusterError(f"{self.bin_dir / name} missing: run {BUILD_SCRIPT}")
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.plane.write_credentials()
        self._spawn("etcd", self.plane.etcd_argv(etcd))
        self._spawn("kube-apiserver", self.plane.apiserver_argv())
        self._wait_for("apiserver /readyz", lambda: self.plane.get("/readyz") == 200)
        self._start_controllers()
        # The ServiceAccount admission plugin rejects pods until the default SA exists.
        self._wait_for(
            "default ServiceAccount",
            lambda: self.plane.get("/api/v1/namespaces/default/serviceaccounts/default") == 200,
        )
        log.info("simulated cluster ready at %s (workdir %s)", self.server, self.workdir)

    def stop(self) -> None:
        for name, proc in reversed(self._procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    log.warning("%s (pid %d) ignored SIGTERM; killing it", name, proc.pid)
                    proc.kill()
                    proc.wait()
        self._procs.clear()
        shutil.rmtree(self.plane.etcd_data, ignore_errors=True)

    def api_client(self) -> ApiClient:
        """An admin `kubernetes.client.ApiClient` for this cluster."""
        from kubernetes import config

        return config.new_client_from_config(config_file=str(self.kubeconfig))

    # -- internals ---------------------------------------------------------------------------

    def _start_controllers(self) -> None:
        key, value = FAKE_NODE_ANNOTATION
        self._spawn("kube-controller-manager", self.plane.controller_manager_argv())
        self._spawn("kube-scheduler", self.plane.scheduler_argv())
        self._spawn(
            "kwok",
            [
                str(self.bin_dir / "kwok"),
                f"--kubeconfig={self.kubeconfig}",
                "--manage-all-nodes=false",
                f"--manage-nodes-with-annotation-selector={key}={value}",
                "--manage-nodes-with-label-selector=",
                "--node-lease-duration-seconds=40",
                "--cidr=10.244.0.1/16",
                "--node-ip=10.88.255.254",
            ],
        )

    def _spawn(self, name: str, argv: list[str]) -> None:
        with open(self.workdir / f"{name}.log", "wb") as out:
            proc = subprocess.Popen(
                argv,
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=self.workdir,
                start_new_session=True,
                preexec_fn=_die_with_parent,
            )
        self._procs.append((name, proc))

    def _wait_for(self, what: str, ready: Callable[[], bool]) -> None:
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while not ready():
            self._check_alive()
            if time.monotonic() > deadline:
                raise SimClusterError(f"timed out waiting for {what}; logs in {self.workdir}")
            time.sleep(0.3)

    def _check_alive(self) -> None:
        for name, proc in self._procs:
            if proc.poll() is not None:
                tail = (self.workdir / f"{name}.log").read_text(errors="replace")[-3000:]
                raise SimClusterError(f"{name} exited with {proc.returncode}:\n{tail}")


def main() -> None:
    """`PYTHONPATH=tests python -m support.simcluster [WORKDIR]`: run a cluster until Ctrl-C."""
    import sys
    import tempfile

    logging.basicConfig(level=logging.INFO, format="%(message)s")
    workdir = (
        Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp(prefix="simcluster-"))
    )
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    with SimCluster(workdir, ensure_binaries()) as cluster:
        print(f"export KUBECONFIG={cluster.kubeconfig}   # Ctrl-C stops the cluster", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            signal.pause()


if __name__ == "__main__":
    main()
