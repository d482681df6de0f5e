"""The lab's token issuer: its discovery document and public keys over HTTPS, for the servers.

`lab up` starts it beside the nodes (netns mode: on the host's end of the lab's link, which
every node routes to; loopback mode: on 127.0.0.1) with a host certificate from our CA, and
hands the orchestrator a `TokenMinter` for it (ClientCredentials.tokens). The signing key
stays in the CA directory: the service serves only the two public documents. It is forked
from `lab up` (not exec'd: the interpreter may live where the user running the lab cannot
read), in a session of its own, and `lab down` stops it by its recorded pid.

    python -m orchestrator.lab.token_issuer --bind ADDR --port P --documents DIR \\
        --cert hostcert.pem --key hostkey.pem
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import ssl
import sys
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from ca.authority import CertificateAuthority
from ca.tokens import (
    JWKS_PATH,
    OPENID_CONFIGURATION_PATH,
    TokenMinter,
    ensure_issuer_key,
    jwks,
    openid_configuration,
)
from orchestrator.errors import UserError
from orchestrator.http_service import Answer, HttpService
from orchestrator.lab import processes
from orchestrator.lab.run_record import LabRun
from orchestrator.lab.topology import NETNS, LabNetwork

ISSUER_NAME = "lab-token-issuer"  # its host certificate's name in the CA directory
NETNS_PORT = 8444
LOOPBACK_PORT_OFFSET = 999  # base_port + this: past the nodes' ports, before the data ports
READY_TIMEOUT = 15.0
DOCUMENTS = {OPENID_CONFIGURATION_PATH: "openid-configuration.json", JWKS_PATH: "jwks.json"}


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
    record: LabRun, folder: Path, ca: CertificateAuthority, address: str, port: int
) -> tuple[LabIssuer, TokenMinter]:
    """Write the documents, start the service (recorded before it starts), wait until it
    answers over verified HTTPS; returns what the nodes trust and what mints its tokens."""
    url = f"https://{address}:{port}"
    key_path = ensure_issuer_key(ca.directory)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / DOCUMENTS[OPENID_CONFIGURATION_PATH]).write_text(
        json.dumps(openid_configuration(url), indent=2) + "\n"
    )
    (folder / DOCUMENTS[JWKS_PATH]).write_text(json.dumps(jwks(key_path), indent=2) + "\n")
    bundle = folder / "ca-certificates.crt"
    bundle.write_bytes(trust_bundle(ca.cert_path))
    host = ca.issue_host(ISSUER_NAME, ips=[address])
    argv = [
        "--bind", address, "--port", str(port), "--documents", str(folder),
        "--cert", str(host.cert), "--key", str(host.key),
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
        code = main(argv)
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


SYSTEM_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")


def trust_bundle(ca_cert: Path, system_bundle: Path = SYSTEM_BUNDLE) -> bytes:
    """The system's CA bundle with our CA appended: what the nodes' SciTokens library reads
    (scitokens-cpp 0.7 trusts only the system bundle, whatever the environment says)."""
    system = system_bundle.read_bytes() if system_bundle.exists() else b""
    if system and not system.endswith(b"\n"):
        system += b"\n"
    return system + ca_cert.read_bytes()


# -- the service ---------------------------------------------------------------------------
def _routes(documents: Path) -> dict[str, Any]:
    def serve(name: str) -> Any:
        body = (documents / name).read_bytes()
        return lambda query: Answer(200, body, "application/json")

    return {path: serve(name) for path, name in DOCUMENTS.items()}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m orchestrator.lab.token_issuer",
        description="Serve the lab token issuer's discovery document and keys over HTTPS.",
    )
    parser.add_argument("--bind", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--documents", type=Path, required=True)
    parser.add_argument("--cert", type=Path, required=True)
    parser.add_argument("--key", type=Path, required=True)
    args = parser.parse_args(argv)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(str(args.cert), str(args.key))
    service = HttpService(
        (args.bind, args.port), _routes(args.documents), name="tpc-bench-issuer", tls=context
    )
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print(f"token issuer serving https://{args.bind}:{args.port}", flush=True)
    try:
        service.serve_forever()
    finally:
        service.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
