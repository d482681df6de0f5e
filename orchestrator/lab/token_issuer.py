"""The lab's token issuer: its discovery document and public keys over HTTPS, for the servers,
and a token endpoint.

`lab up` starts it beside the nodes (netns mode: on the host's end of the lab's link, which
every node routes to; loopback mode: on 127.0.0.1) with a host certificate from our CA, and
hands the orchestrator a `TokenMinter` for it (ClientCredentials.tokens). The signing key
stays in the CA directory; the service (orchestrator/token_issuer.py, which the chart runs
without a key) serves the two public documents and, given the key, the token endpoint where
the orchestrator's certificate gets tokens (what the DOMA smoke test's `-t scitoken` asks).
It is forked from `lab up` (not exec'd: the interpreter may live where the user running the
lab cannot read), in a session of its own, and `lab down` stops it by its recorded pid.
"""

from __future__ import annotations

import logging
import os
import ssl
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

import httpx

import orchestrator.lab.processes as processes
from ca.authority import CertificateAuthority
from ca.tokens import JWKS_PATH, OPENID_CONFIGURATION_PATH, TokenMinter, ensure_issuer_key
from orchestrator.errors import UserError
from orchestrator.lab.run_record import LabRun
from orchestrator.lab.topology import NETNS, LabNetwork
from orchestrator.servers.trust_bundle import trust_bundle
from orchestrator.token_issuer import DOCUMENTS, issuer_documents
from orchestrator.token_issuer import main as serve_documents

ISSUER_NAME = "lab-token-issuer"  # its host certificate's name in the CA directory
NETNS_PORT = 8444
LOOPBACK_PORT_OFFSET = 999  # base_port + this: past the nodes' ports, before the data ports
READY_TIMEOUT = 15.0


@dataclass(frozen=True)
class LabIssuer:
    """What the nodes need to trust the lab's issuer."""

    url: str
    bundle: Path  # the system CA bundle plus our CA (where the SciTokens library looks)
    jwks: Path  # the public keys (pre-filled into a node's key cache where no bundle helps)


def issuer_address(mode: str, network: LabNetwork) -> tuple[str, int]:
    if mode == NETNS:
        return network.host_address, NETNS_PORT
    return "127.0.0.1", network.base_port + LOOPBACK_PORT_OFFSET


def start_token_issuer(
    record: LabRun,
    folder: Path,
    ca: CertificateAuthority,
    address: str,
    port: int,
    *,
    orchestrator_dn: str,
) -> tuple[LabIssuer, TokenMinter]:
    """Write the documents, start the service (recorded before it starts), wait until it
    answers over verified HTTPS; returns what the nodes trust and what mints its tokens.
    The lab's issuer holds the signing key, so it also serves the token endpoint, where the
    orchestrator's certificate (`orchestrator_dn`), and it alone, gets tokens."""
    url = f"https://{address}:{port}"
    key_path = ensure_issuer_key(ca.directory)
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in issuer_documents(url, key_path, token_endpoint=True).items():
        (folder / name).write_text(text)
    bundle = folder / "ca-certificates.crt"
    bundle.write_bytes(trust_bundle(ca.cert_path))
    host = ca.issue_host(ISSUER_NAME, ips=[address])
    argv = [
        "--bind", address, "--port", str(port), "--documents", str(folder),
        "--cert", str(host.cert), "--key", str(host.key),
        "--signing-key", str(key_path), "--client-ca-dir", str(ca.certdir),
        "--orchestrator-dn", orchestrator_dn,
    ]  # fmt: skip
    log = folder / "issuer.out"
    pid = _fork_service(argv, log)
    process = processes.ServerProcess(
        "issuer", "token-issuer", pid, processes.start_ticks(pid) or 0, str(log)
    )
    record.token_issuer = process
    record.save()
    deadline = time.monotonic() + READY_TIMEOUT
    while (verdict := issuer_health(url, ca.certdir)) != "ok":
        if not processes.is_alive(process) or time.monotonic() > deadline:
            log = (folder / "issuer.out").read_text(errors="replace").strip().splitlines()
            raise UserError(
                f"the token issuer at {url} does not answer ({verdict}); "
                f"last output: {log[-1] if log else 'none'}"
            )
        time.sleep(0.2)
    minter = TokenMinter.for_key(url, key_path)
    return LabIssuer(url=url, bundle=bundle, jwks=folder / DOCUMENTS[JWKS_PATH]), minter


def _fork_service(argv: list[str], log: Path) -> int:
    """The service in a forked child, its own session leader, output appended to `log`."""
    pid = os.fork()
    if pid != 0:
        return pid
    code = 1
    try:  # the child: never returns into the caller
        os.setsid()
        out = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.dup2(out, 1)
        os.dup2(out, 2)
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
        # nothing of the parent's stays open here (a lock file held by `flock`, sockets)
        os.closerange(3, os.sysconf("SC_OPEN_MAX"))
        sys.stdout = open(1, "w", buffering=1, closefd=False)  # noqa: SIM115
        sys.stderr = open(2, "w", buffering=1, closefd=False)  # noqa: SIM115
        logging.root.handlers.clear()  # the parent's, which may write to closed files
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
        code = serve_documents(argv)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def stop_token_issuer(record: LabRun) -> tuple[list[str], list[str]]:
    process = record.token_issuer
    if process is None:
        return [], []
    survivors = processes.stop(process)
    if survivors:
        return [], [f"token issuer: pids {survivors} remain"]
    return [f"stopped the token issuer (pid {process.pid})"], []


def issuer_health(url: str, certdir: Path) -> str:
    """ "ok" when the issuer's discovery document names it and its keys are served."""
    try:
        context = ssl.create_default_context(capath=str(certdir))
        with httpx.Client(verify=context, timeout=3.0) as http:
            config = http.get(url + OPENID_CONFIGURATION_PATH).raise_for_status().json()
            keys = http.get(config["jwks_uri"]).raise_for_status().json()
    except (httpx.HTTPError, ssl.SSLError, OSError, ValueError, KeyError) as exc:
        return f"error: {exc}"
    if config.get("issuer") != url or not keys.get("keys"):
        return f"unexpected documents from {url}"
    return "ok"
