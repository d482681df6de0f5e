"""The bare commands the benches compare our tools with: what an operator would type
(curl COPY, globus-url-copy, xrdcp --tpc), with the options our native tools use."""

from __future__ import annotations

from orchestrator.endpoints import ClientCredentials, Endpoint, source_name
from orchestrator.transfers.gridftp import globus_url_copy_argv
from orchestrator.transfers.https import tpc_headers
from orchestrator.transfers.root import xrdcp_argv
from orchestrator.transfers.urls import https_url


def bare_argv(
    protocol: str, src: Endpoint, dst: Endpoint, creds: ClientCredentials, size: int, name: str,
    streams: int,
) -> list[str]:  # fmt: skip
    """The command an operator would type, with the options our native tool uses."""
    if protocol == "gridftp":
        return globus_url_copy_argv(src, dst, source_name(size), name, streams)
    if protocol == "root":
        return xrdcp_argv(src, dst, source_name(size), name, streams)
    headers = tpc_headers(https_url(src, source_name(size)), None, streams)
    argv = ["curl", "-sS", "--capath", str(creds.certdir), "--cert", str(creds.cert)]
    argv += ["--key", str(creds.key), "-X", "COPY"]
    for key, value in headers.items():
        argv += ["-H", f"{key}: {value}"]
    return [*argv, https_url(dst, name)]
