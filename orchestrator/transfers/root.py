"""XRootD native third-party copy: `xrdcp --tpc only` between two root:// URLs."""

from __future__ import annotations

import re

from orchestrator.endpoints import ClientCredentials, Endpoint
from orchestrator.transfers.base import TransferObservation, TransferRequest, TransferTool
from orchestrator.transfers.checksums import ChecksumStepError, compare_digests, digest_from_query
from orchestrator.transfers.error_classes import outcome_of
from orchestrator.transfers.gridftp import credential_env
from orchestrator.transfers.process import run_process
from orchestrator.transfers.record import TransferRecord
from orchestrator.transfers.urls import root_server, root_url
from orchestrator.transfers.xrdcl_log import XrdclLog

# XrdCl retries a refused connection for up to 5 x 120 s by default; a measurement wants a
# dead server to be a prompt `connect` failure. Data movement is unaffected.
FAIL_FAST_CONNECT = {"XRD_CONNECTIONRETRY": "1", "XRD_CONNECTIONWINDOW": "15"}
# XRootD's GSI client: log in with the certificate itself (XRootD 5.5 would make a proxy
# signed with SHA-1, which OpenSSL 3 refuses); XrdSecGSISRVNAMES is set per copy.
GSI_CLIENT = {"XrdSecGSICREATEPROXY": "0"}
# XrdCl log lines that only appear when an established session breaks (the server died).
_SESSION_LOST = re.compile(r"Socket error encountered|Unable to get the response to request")
_LOG_LINE = re.compile(r"^\[\d{4}-\d\d-\d\d ")


def gsi_server_names(*endpoints: Endpoint) -> dict[str, str]:
    """The servers' certificate CNs GSI may accept. XRootD 5.5 compares a server's CN with
    the host name it dialled (never the certificate's alternative names), and our host
    certificates are named after the node, not its address. Without a known DN, or through a
    redirector (whose data servers have CNs of their own), any certificate of the CA
    directory's authorities is accepted."""
    names = []
    for endpoint in endpoints:
        # A redirector sends xrdcp on to a data server whose CN is not the redirector's.
        if not endpoint.host_dn or endpoint.redirector:
            return {"XrdSecGSISRVNAMES": "*"}
        names.append(endpoint.host_dn.rpartition("/CN=")[2])
    return {"XrdSecGSISRVNAMES": "|".join(dict.fromkeys(names))}


def xrdcp_environment(creds: ClientCredentials, src: Endpoint, dst: Endpoint) -> dict[str, str]:
    """xrdcp's environment: the client certificate for GSI, the servers' CNs, fail-fast."""
    return {
        **credential_env(creds),
        **GSI_CLIENT,
        **gsi_server_names(src, dst),
        **FAIL_FAST_CONNECT,
    }


def xrdcp_outcome(returncode: int | None, timed_out: bool, stderr: str, timeout: float) -> dict:
    """Error class and message from xrdcp's exit code, its verdict and its error log."""
    verdict = "\n".join(line for line in stderr.splitlines() if not _LOG_LINE.match(line))
    outcome = outcome_of(returncode, timed_out, verdict, timeout)
    if outcome["error_class"] == "connect" and _SESSION_LOST.search(stderr):
        outcome["error_class"] = "killed"
    return outcome


def xrdcp_argv(request: TransferRequest) -> list[str]:
    """`--tpc only` fails rather than fall back to copying through this client."""
    return [
        "xrdcp",
        "--tpc",
        "only",
        "--force",
        "--nopbar",
        "-d",
        # XrdCl's debug log, as it happens: it times the phases (xrdcl_log.py), and only
        # its errors tell a lost session from a refused connection.
        "2",
        "--streams",
        str(request.streams),
        root_url(request.src, request.src_path),
        root_url(request.dst, request.dst_path),
    ]


class XrootdTpc(TransferTool):
    """root:// TPC: the destination server pulls from the source; exit code and stderr decide.

    xrdcp prints no progress in TPC mode, so `on_progress` is never called here; its debug
    log gives the phases.
    """

    name = "root"
    auths: tuple[str, ...] = ("x509",)  # the client certificate (or its proxy) only

    async def copy(self, request: TransferRequest) -> TransferRecord:
        argv = xrdcp_argv(request)
        seen = TransferObservation.begin(request, self.name, argv[-2], argv[-1])
        env = xrdcp_environment(request.creds, request.src, request.dst)
        log = XrdclLog(
            seen.timeline,
            request.clock,
            source=root_server(request.src),
            destination=root_server(request.dst),
        )
        result = await run_process(argv, env=env, timeout=request.timeout, on_stderr_line=log.feed)
        seen.redirects = log.redirects
        seen.source_server = log.servers.get("source")
        seen.destination_server = log.servers.get("destination")
        succeeded = result.returncode == 0 and not result.timed_out
        outcome = xrdcp_outcome(result.returncode, result.timed_out, result.stderr, request.timeout)
        if succeeded and request.checksum != "none":
            try:
                await verify_root_checksum(seen, env)
            except ChecksumStepError as exc:
                succeeded, outcome = False, {"error_class": exc.error_class, "message": str(exc)}
        return seen.record(succeeded, **outcome)


async def verify_root_checksum(seen: TransferObservation, env: dict[str, str]) -> None:
    """The checksum step (checksums.py): `xrdfs HOST query checksum PATH` of the source and
    then of the destination, compared; timed as `checksum`, within the request's timeout."""
    request = seen.request
    seen.timeline.enter("checksum", request.clock.now())
    digests = []
    for endpoint, path in ((request.src, request.src_path), (request.dst, request.dst_path)):
        remaining = max(1.0, request.timeout - (request.clock.now() - seen.start))
        argv = ["xrdfs", root_server(endpoint), "query", "checksum", path]
        result = await run_process(argv, env=env, timeout=remaining)
        digest = digest_from_query(result.stdout, request.checksum)
        if result.returncode != 0 or result.timed_out or digest is None:
            outcome = outcome_of(result.returncode, result.timed_out, result.stderr, remaining)
            raise ChecksumStepError(
                outcome["error_class"] or "remote-failure",
                f"{' '.join(argv)}: {outcome['message'] or result.stdout.strip()!r}",
            )
        digests.append(digest)
    compare_digests(request.checksum, *digests)
