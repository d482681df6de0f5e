"""Lab servers as containers of our own images: `tpcbench lab up --runtime podman`.

Each node runs three containers inside its network namespace (`--network ns:/run/netns/NS`),
the way the chart's pods run on a node's host network: xrootd, gridftp and the RTT probe,
from the debian flavour of images/ (`make images`). Mounts follow the container layout the
chart uses (orchestrator/servers/layout.py): the node's memory-backed directory at /data,
the host certificate and key, the CA directory and the grid-mapfile read-only, and, for the
token issuer, the system CA bundle with our CA over the image's (servers/trust_bundle.py).
Root file systems are read-only, every capability is dropped and the servers run as uid 10001.
`lab down` removes the containers this lab recorded, and nothing else.
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from orchestrator.errors import UserError
from orchestrator.lab.network import LAB_SUPERNET
from orchestrator.lab.node_files import GRID_MAPFILE, MACAROON_SECRET, XROOTD_GRIDMAP, NodeFiles
from orchestrator.lab.preflight import NETNS_PROGRAMS, ServerAccount, check_packages
from orchestrator.lab.run_record import LabRun, ServerContainer
from orchestrator.lab.runtime import PODMAN
from orchestrator.latency import PROBE_DEFAULT_PORT, PROBE_PORT_NAME
from orchestrator.servers import layout
from orchestrator.servers.trust_bundle import SYSTEM_BUNDLE

REPO_ROOT = Path(__file__).resolve().parents[2]
IMAGE_PREFIX_ENV = "TPCBENCH_IMAGE_PREFIX"
DEFAULT_IMAGE_PREFIX = "localhost/tpc-bench"
LAB_LABEL = "tpc-bench.lab"  # value: the lab's prefix; every container we start carries it
SERVER_IMAGES = ("xrootd", "gridftp")  # the probe runs from the xrootd image
# U: owned by the container user (podman ignores mode= for tmpfs here)
SCRATCH_TMPFS = "rw,size=64m,U"


def image_name(component: str) -> str:
    """The image a component runs from: $TPCBENCH_IMAGE_PREFIX/<component>:<our version>."""
    prefix = os.environ.get(IMAGE_PREFIX_ENV, DEFAULT_IMAGE_PREFIX).rstrip("/")
    return f"{prefix}/{component}:{importlib.metadata.version('tpc-bench')}"


def podman_environment() -> dict[str, str]:
    """The environment podman runs with: the repository's containers.conf unless one is set."""
    env = dict(os.environ)
    conf = REPO_ROOT / "images" / "containers.conf"
    if "CONTAINERS_CONF" not in env and conf.is_file():
        env["CONTAINERS_CONF"] = str(conf)
    return env


def podman(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["podman", *args],
        capture_output=True,
        text=True,
        env=podman_environment(),
        timeout=timeout,
        check=False,
    )


def _last_line(result: subprocess.CompletedProcess[str]) -> str:
    lines = (result.stderr or result.stdout).strip().splitlines()
    return lines[-1] if lines else f"exit code {result.returncode}"


class PodmanRuntime:
    name = PODMAN

    def preflight(self, mode: str) -> None:
        if shutil.which("podman") is None:
            raise UserError(
                "--runtime podman needs podman, which is not installed; install it with: "
                "make system-deps (or: apt-get install podman)"
            )
        if mode != "netns":
            raise UserError(
                "--runtime podman needs netns mode (root): its containers join the nodes' "
                "network namespaces"
            )
        check_packages(NETNS_PROGRAMS)
        for component in SERVER_IMAGES:
            image = image_name(component)
            if podman("image", "exists", image).returncode != 0:
                raise UserError(f"the image {image} is not built; build it with: make images")

    def server_account(self) -> ServerAccount:
        return ServerAccount(layout.SERVER_USER, layout.SERVER_UID, layout.SERVER_GID)

    def served_data_root(self, files: NodeFiles) -> str:
        return str(layout.DATA_ROOT)

    def extra_ports(self) -> dict[str, int]:
        return {PROBE_PORT_NAME: PROBE_DEFAULT_PORT}

    def start_node(self, record: LabRun, files: NodeFiles, hosts: dict[str, str]) -> None:
        plan = files.plan
        mounts = [
            f"{files.data_root}:{layout.DATA_ROOT}",
            f"{files.certdir}:{layout.CERTDIR}:ro",
            f"{files.node_dir / 'pki'}:{layout.HOST_CREDENTIALS}:ro",
            f"{files.node_dir / GRID_MAPFILE}:{layout.GRID_MAPFILE}:ro",
            f"{files.node_dir / XROOTD_GRIDMAP}:{layout.XROOTD_GRIDMAP}:ro",
        ]
        # the key sits in pki/, mounted as the host credentials' folder
        macaroon_secret = layout.HOST_CREDENTIALS / Path(MACAROON_SECRET).name
        xrootd_args = [
            "xrootd", "--exec", "--name", plan.name,
            "--https-port", str(plan.ports["https"]), "--root-port", str(plan.ports["root"]),
            "--macaroon-secret", str(macaroon_secret),
        ]  # fmt: skip
        xrootd_mounts = list(mounts)
        if files.issuer is not None:
            xrootd_args += ["--token-issuer", files.issuer.url]
            xrootd_args += ["--token-audience", files.token_audience]
            xrootd_mounts.append(f"{files.issuer.bundle}:{SYSTEM_BUNDLE}:ro")
        self._run(record, files, "xrootd", image_name("xrootd"), xrootd_args, xrootd_mounts, hosts)
        low, high = plan.data_ports
        gridftp_args = [
            "gridftp", "--exec", "--data-interface", plan.address,
            "--port", str(plan.ports["gridftp"]), "--data-ports", f"{low},{high}",
        ]  # fmt: skip
        self._run(record, files, "gridftp", image_name("gridftp"), gridftp_args, mounts, hosts)
        probe_args = [
            "--entrypoint", "/usr/bin/tini", image_name("xrootd"), "--",
            "python3", "-m", "orchestrator.latency", "serve", "--bind", plan.address,
            "--port", str(PROBE_DEFAULT_PORT), "--allow", LAB_SUPERNET,
        ]  # fmt: skip
        self._run(record, files, "probe", None, probe_args, [], hosts)

    def _run(
        self,
        record: LabRun,
        files: NodeFiles,
        service: str,
        image: str | None,
        args: Sequence[str],
        mounts: Sequence[str],
        hosts: dict[str, str],
    ) -> None:
        plan = files.plan
        container = ServerContainer(
            node=plan.name, service=service, name=f"{record.network.prefix}-{plan.name}-{service}"
        )
        if podman("container", "exists", container.name).returncode == 0:
            raise UserError(
                f"a container named {container.name} already exists and this lab did not start "
                f"it; remove it with: podman rm -f {container.name}"
            )
        record.containers.append(container)  # before the run: a crash still leaves its name
        record.save()
        argv = [
            "run", "--detach", "--name", container.name,
            "--label", f"{LAB_LABEL}={record.network.prefix}",
            "--network", f"ns:/run/netns/{plan.netns}", "--hostname", plan.name,
            *[f"--add-host={name}:{address}" for name, address in hosts.items()],
            "--user", f"{layout.SERVER_UID}:{layout.SERVER_GID}",
            "--read-only", "--read-only-tmpfs=false",
            "--tmpfs", f"{layout.RUN_DIR}:{SCRATCH_TMPFS}", "--tmpfs", f"/tmp:{SCRATCH_TMPFS}",
            "--cap-drop", "all", "--security-opt", "no-new-privileges",
            # podman schedules HEALTHCHECKs through systemd, which a lab machine may not have;
            # the lab watches the ports itself (lab status)
            "--no-healthcheck",
            "--log-driver", "k8s-file",
            "--log-opt", f"path={files.node_dir / (service + '.out')}",
            *[option for mount in mounts for option in ("--volume", mount)],
        ]  # fmt: skip
        result = podman(*argv, *([image] if image else []), *args)
        if result.returncode != 0:
            raise UserError(f"podman could not start {container.name}: {_last_line(result)}")

    def _states(self, record: LabRun) -> dict[str, str]:
        """Container name -> podman's state ("running", "exited", ...) for what exists."""
        if not record.containers:
            return {}
        names = [c.name for c in record.containers]
        # one call for all; a missing container makes inspect fail but still list the others
        result = podman("container", "inspect", "--format", "{{.Name}} {{.State.Status}}", *names)
        states = {}
        for line in result.stdout.splitlines():
            name, _, state = line.partition(" ")
            states[name.lstrip("/")] = state.strip()
        return states

    def liveness(self, record: LabRun) -> dict[tuple[str, str], str]:
        states = self._states(record)
        checks = {}
        for c in record.containers:
            state = states.get(c.name)
            verdict = "ok" if state == "running" else f"container {c.name} is {state or 'gone'}"
            checks[(c.node, f"{c.service}_container")] = verdict
        return checks

    def failure_detail(self, record: LabRun) -> str | None:
        states = self._states(record)
        for c in record.containers:
            if states.get(c.name) not in (None, "running", "created", "configured"):
                logs = podman("logs", "--tail", "3", c.name)
                tail = (logs.stdout + logs.stderr).strip().splitlines()
                last = tail[-1] if tail else "no output"
                return f"{c.service} on {c.node} stopped during start-up: {last}"
        return None

    def _ours(self, record: LabRun) -> set[str] | None:
        """Names of the containers that carry this lab's label (None: podman did not answer)."""
        label = f"label={LAB_LABEL}={record.network.prefix}"
        result = podman("ps", "--all", "--filter", label, "--format", "{{.Names}}")
        return set(result.stdout.split()) if result.returncode == 0 else None

    def stop(self, record: LabRun) -> tuple[list[str], list[str]]:
        done: list[str] = []
        problems: list[str] = []
        if not record.containers:
            return done, problems
        ours = self._ours(record)
        if ours is None:
            return done, ["podman could not list the lab's containers; run: tpcbench lab down"]
        for c in record.containers:
            if c.name not in ours:  # never started, or someone else's under that name
                if podman("container", "exists", c.name).returncode == 0:
                    done.append(f"left container {c.name} alone: this lab did not start it")
                continue
            result = podman("rm", "--force", "--time", "0", c.name)
            gone = result.returncode == 0 or "no such container" in result.stderr.lower()
            if gone and podman("container", "exists", c.name).returncode != 0:
                done.append(f"removed container {c.name} ({c.service} on {c.node})")
            else:
                problems.append(f"container {c.name}: {_last_line(result)}")
        return done, problems
