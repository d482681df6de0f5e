"""Who may do what on a lab's servers, tried with the real clients (curl, xrdcp/xrdfs,
globus-url-copy): the probes the lab's and the podman lab's refusal tests share.

A `Client` is an identity: nobody (no certificate), a certificate of another CA, one of ours
that is not the orchestrator's, a host's, or the orchestrator's own. Each probe returns what
the server answered, so a test can say both that it was refused and how.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from orchestrator.endpoints import Endpoint

TIMEOUT = 60


@dataclass(frozen=True)
class Client:
    name: str
    cert: Path | None  # None: anonymous
    key: Path | None
    certdir: Path  # the CA directory the client trusts (ours: it verifies the servers)


@dataclass(frozen=True)
class Answer:
    code: int  # HTTP status (0: no HTTP answer, the connection failed), or a tool's exit code
    body: str
    errors: str = ""

    @property
    def text(self) -> str:
        return self.body + self.errors

    def __str__(self) -> str:
        return f"{self.code}: {self.text.strip()[-300:]}"


def https_url(node: Endpoint, name: str) -> str:
    return f"https://{node.address}:{node.ports['https']}/{name.lstrip('/')}"


def curl(client: Client, *args: str) -> Answer:
    """One curl request; the last output line is the status code (000 when TLS failed)."""
    identity = ["--cert", str(client.cert), "--key", str(client.key)] if client.cert else []
    result = subprocess.run(
        ["curl", "-sS", "--capath", str(client.certdir), *identity,
         "-w", "\n%{http_code}", *args],
        capture_output=True, text=True, timeout=TIMEOUT,
    )  # fmt: skip
    body, _, status = result.stdout.rpartition("\n")
    return Answer(int(status or 0), body, result.stderr)


def http_put(client: Client, url: str, payload: Path, bearer: str | None = None) -> Answer:
    token = ["-H", f"Authorization: Bearer {bearer}"] if bearer else []
    return curl(client, *token, "-T", str(payload), url)


def http_delete(client: Client, url: str) -> Answer:
    return curl(client, "-X", "DELETE", url)


def http_list(client: Client, url: str) -> Answer:
    return curl(client, "-X", "PROPFIND", "-H", "Depth: 1", url)


def http_copy(client: Client, source_url: str, destination_url: str, *headers: str) -> Answer:
    """A pull COPY; XRootD 5.5 answers a failed copy 201 with `failure:` as its last line."""
    extra = [option for header in headers for option in ("-H", header)]
    return curl(client, "-X", "COPY", "-H", f"Source: {source_url}", *extra, destination_url)


def macaroon(client: Client, url: str, activity: str) -> str:
    """What the server issues `client` for `activity` on `url` (it issues to anyone, capped
    at what the asker may do)."""
    body = json.dumps({"caveats": [f"activity:{activity}"], "validity": "PT5M"})
    answer = curl(
        client, "-X", "POST", "-H", "Content-Type: application/macaroon-request", "-d", body, url
    )
    assert answer.code == 200, answer
    return json.loads(answer.body)["macaroon"]


def gsi_env(client: Client, server_names: str) -> dict[str, str]:
    """XRootD's and Globus' clients: the identity from the environment (none: anonymous)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("X509_", "XrdSec"))}
    env.update(X509_CERT_DIR=str(client.certdir), XrdSecGSICREATEPROXY="0")
    env["XrdSecGSISRVNAMES"] = server_names
    if client.cert is not None:
        env.update(X509_USER_CERT=str(client.cert), X509_USER_KEY=str(client.key))
    else:  # no certificate: XrdCl offers only what needs none (XrdCl 5.5 crashes on a
        # missing certificate file rather than skip GSI)
        env.update(HOME="/nonexistent", XrdSecPROTOCOL="unix,host")
    return env


def run(argv: list[str], env: dict[str, str]) -> Answer:
    result = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=TIMEOUT)
    return Answer(result.returncode, result.stdout, result.stderr)


def root_url(node: Endpoint, name: str = "") -> str:
    return f"root://{node.address}:{node.ports['root']}/{name}"


def gsiftp_url(node: Endpoint, path: Path | str, client: Client | None = None) -> str:
    """Without a certificate a client can only try plain FTP's anonymous login."""
    scheme = "ftp" if client is not None and client.cert is None else "gsiftp"
    return f"{scheme}://{node.address}:{node.ports['gridftp']}{path}"
