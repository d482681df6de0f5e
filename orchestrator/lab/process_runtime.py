"""Lab servers as processes on this machine: entered into the node's namespace, then dropped
to the unprivileged server account, each in its own process group (see processes.py)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import orchestrator.lab.processes as processes
from orchestrator.lab.node_files import (
    GRID_MAPFILE,
    MACAROON_SECRET,
    XROOTD_GRIDMAP,
    NodeFiles,
    own,
)
from orchestrator.lab.preflight import (
    NETNS_PROGRAMS,
    PROGRAMS,
    ServerAccount,
    check_packages,
    ensure_server_account,
)
from orchestrator.lab.run_record import LabRun
from orchestrator.lab.runtime import PROCESS
from orchestrator.lab.token_trust import prefill_key_cache
from orchestrator.lab.topology import NETNS, NodePlan
from orchestrator.servers import (
    GridftpSettings,
    XrootdSettings,
    cmsd_command,
    gridftp_command,
    gridftp_environment,
    render_xrootd_config,
    xrootd_command,
    xrootd_environment,
    xrootd_files,
    xrootd_log_file,
)

SERVER_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


class ProcessRuntime:
    name = PROCESS

    def __init__(self) -> None:
        self._account: ServerAccount | None = None

    def preflight(self, mode: str) -> None:
        check_packages({**PROGRAMS, **(NETNS_PROGRAMS if mode == NETNS else {})})

    def server_account(self) -> ServerAccount:
        if self._account is None:
            self._account = ensure_server_account()
        return self._account

    def served_data_root(self, files: NodeFiles) -> str:
        return str(files.data_root)

    def extra_ports(self) -> dict[str, int]:
        return {}

    def start_node(self, record: LabRun, files: NodeFiles, hosts: dict[str, str]) -> None:
        plan, node_dir, pki = files.plan, files.node_dir, files.node_dir / "pki"
        base_env = {"PATH": SERVER_PATH, "HOME": str(node_dir), "LANG": "C.UTF-8"}
        xrootd = XrootdSettings(
            name=plan.name,
            data_root=files.data_root,
            run_dir=node_dir / "run",
            host_cert=pki / "hostcert.pem",
            host_key=pki / "hostkey.pem",
            certdir=files.certdir,
            gridmap=node_dir / XROOTD_GRIDMAP,
            macaroon_secret=node_dir / MACAROON_SECRET,
            root_port=plan.ports["root"],
            https_port=plan.ports["https"],
            xrdcp_path=shutil.which("xrdcp") or "/usr/bin/xrdcp",
            token_issuer=files.issuer.url if files.issuer else None,
            token_audience=files.token_audience if files.issuer else None,
            open_access=files.open_access,
            cluster=files.cluster,
        )
        config = node_dir / "xrootd.cfg"
        config.write_text(render_xrootd_config(xrootd))
        for path, text in xrootd_files(xrootd).items():
            path.write_text(text)
        if files.issuer is not None:
            cache_home = Path(xrootd_environment(xrootd)["XDG_CACHE_HOME"])
            cache_home.mkdir(exist_ok=True)
            own(cache_home, self.server_account(), 0o755)
            if plan.netns is None:  # no /etc/netns/<node>/ssl to fetch the keys through
                issuer = files.issuer
                prefill_key_cache(cache_home, issuer.url, issuer.jwks, self.server_account())
        argv = self._launcher(plan) + xrootd_command(config, node_dir / "xrootd.log", plan.name)
        env = {**base_env, **xrootd_environment(xrootd)}
        _spawn(record, plan, "xrootd", argv, env, node_dir)
        if files.cluster.clustered:  # the cluster's management service, from the same config
            argv = self._launcher(plan) + cmsd_command(config, node_dir / "cmsd.log", plan.name)
            _spawn(record, plan, "cmsd", argv, env, node_dir)
        if not files.gridftp:
            return

        gridftp = GridftpSettings(
            data_interface=plan.address,
            host_cert=pki / "hostcert.pem",
            host_key=pki / "hostkey.pem",
            certdir=files.certdir,
            grid_mapfile=node_dir / GRID_MAPFILE,
            log_path=node_dir / "gridftp.log",
            home_dir=files.data_root,
            port=plan.ports["gridftp"],
            data_port_range=plan.data_ports,
        )
        argv = self._launcher(plan) + gridftp_command(gridftp)
        env = {**base_env, **gridftp_environment(gridftp)}
        _spawn(record, plan, "gridftp", argv, env, node_dir)

    def _launcher(self, plan: NodePlan) -> list[str]:
        """Enter the node's namespace, then drop to the server account."""
        prefix = ["ip", "netns", "exec", plan.netns] if plan.netns else []
        if os.geteuid() == 0:
            account = self.server_account()
            prefix += ["setpriv", "--reuid", account.name, "--regid", str(account.gid)]
            prefix += ["--init-groups", "--"]
        return prefix

    def liveness(self, record: LabRun) -> dict[tuple[str, str], str]:
        return {
            (p.node, f"{p.service}_process"): (
                "ok" if processes.is_alive(p) else f"pid {p.pid} is gone"
            )
            for p in record.processes
        }

    def failure_detail(self, record: LabRun) -> str | None:
        for process in record.processes:
            if not processes.is_alive(process):
                return f"{process.service} on {process.node} stopped during start-up: " + (
                    _last_log_line(process)
                )
        return None

    def stop(self, record: LabRun) -> tuple[list[str], list[str]]:
        done: list[str] = []
        problems: list[str] = []
        for process in record.processes:
            survivors = processes.stop(process)
            if survivors:
                problems.append(f"{process.service} on {process.node}: pids {survivors} remain")
            else:
                done.append(f"stopped {process.service} on {process.node} (pid {process.pid})")
        return done, problems


def _spawn(
    record: LabRun,
    plan: NodePlan,
    service: str,
    argv: list[str],
    env: dict[str, str],
    node_dir: Path,
) -> None:
    log = node_dir / f"{service}.out"
    process = processes.spawn(plan.name, service, argv, env=env, log=log, cwd=node_dir)
    record.processes.append(process)
    record.save()


def _last_log_line(process: processes.ServerProcess) -> str:
    log = Path(process.log)
    if process.service == "xrootd":  # xrootd writes its own log beside the captured output
        return processes.last_log_line(xrootd_log_file(log.with_suffix(".log"), process.node), log)
    return processes.last_log_line(log)
