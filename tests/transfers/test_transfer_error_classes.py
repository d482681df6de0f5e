"""Messages that real tools and servers print map to the documented error classes."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.endpoints import ClientCredentials, Endpoint
from orchestrator.transfers.base import TransferObservation, TransferRequest
from orchestrator.transfers.error_classes import classify_http_status, classify_message, outcome_of
from orchestrator.transfers.root import gsi_server_names, xrdcp_outcome


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        # the checksum step: each client's words for two different digests (captured on
        # the lab), and a refusal to give a digest, which is no mismatch
        ("adler32 checksum mismatch: source 0badc0de, destination c7219f13", "checksum-mismatch"),
        (
            "error: [globus_l_gass_copy_verify_cksm]: checksum verification failure for "
            "'gsiftp://10.99.231.2:2811/data/x': got '00000001', expected 'c7219f13'",
            "checksum-mismatch",
        ),
        (
            "DESTINATION CHECKSUM MISMATCH Source and destination ADLER32 do not match "
            "(0badc0de != c7219f13)",
            "checksum-mismatch",
        ),
        ("Error on XrdCl::CopyProcess::Run(): [ERROR] CheckSum error", "checksum-mismatch"),
        ("[3010] Unable to checksum /tokens/tpcbench-x; permission denied", "auth"),
        # XRootD HTTP-TPC failure lines
        ('Remote side failed with status code 404; error message: "Unable to open"', "not-found"),
        ("Remote side failed with status code 403", "auth"),
        ("Transfer timed out", "timeout"),
        ("Failed to connect to 127.0.0.1 port 19443: Connection refused", "connect"),
        # xrdcp
        ("Run: [ERROR] Server responded with an error: [3011] Unable to open /x", "not-found"),
        ("Run: [ERROR] Server responded with an error: [3010] tpc not authorized", "auth"),
        ("Run: [FATAL] Connection error", "connect"),
        # globus-url-copy
        (
            "globus_xio: Unable to connect to 127.0.0.1:19812 "
            "globus_xio: System error in connect: Connection refused",
            "connect",
        ),
        (
            "500-Command failed. : globus_l_gfs_file_open failed. "
            "System error in open: No such file or directory",
            "not-found",
        ),
        (
            "globus_gsi_callback_module: Could not verify credential: "
            "Can't get the local trusted CA certificate: Untrusted self-signed certificate",
            "tls",
        ),
        ("globus_xio: An end of file occurred", "killed"),
        (
            "530-globus_xio: Server side credential failure 530-GSS Major Status: General failure "
            "530-globus_sysconfig: File does not exist: /tmp/x509up_u0 is not a valid file",
            "auth",
        ),
        # httpx
        (
            "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: "
            "unable to get local issuer certificate",
            "tls",
        ),
        ("something nobody anticipated", "remote-failure"),
    ],
)
def test_classify_message(message: str, expected: str) -> None:
    assert classify_message(message) == expected


def test_classify_http_status_reads_the_remote_reason_of_a_5xx() -> None:
    detail = "Remote side failed with status code 404"
    assert classify_http_status(500, detail) == "not-found"
    assert classify_http_status(500, "Remote side failed with status code 403") == "auth"
    assert classify_http_status(500, "something odd") == "remote-failure"
    assert classify_http_status(403, detail) == "auth"  # the COPY itself was refused


def test_classify_http_status() -> None:
    assert [classify_http_status(s) for s in (401, 403, 404, 500)] == [
        "auth",
        "auth",
        "not-found",
        "remote-failure",
    ]


def test_process_outcomes() -> None:
    assert outcome_of(0, False, "", 10)["error_class"] is None
    assert outcome_of(None, True, "", 10)["error_class"] == "timeout"
    assert outcome_of(-9, False, "", 10)["error_class"] == "killed"
    assert outcome_of(1, False, "error: No such file or directory\n", 10) == {
        "error_class": "not-found",
        "message": "error: No such file or directory",
    }


LOST_SESSION = """\
[2026-11-21 17:42:02.002488 +0000][Error  ][AsyncSock         ] [127.0.0.1:19095.0] Socket error encountered: [ERROR] Socket error: operation now in progress
[2026-11-21 17:42:02.002709 +0000][Error  ][XRootD            ] [127.0.0.1:19095] Unable to get the response to request kXR_sync (handle: 0x00000000)
[2026-11-21 17:42:02.002923 +0000][Error  ][AsyncSock         ] [127.0.0.1:19095.0] Unable to connect: connection refused
Run: [FATAL] Connection error
"""  # noqa: E501 (verbatim xrdcp -d 1 output)
REFUSED = """\
[2026-11-21 17:42:06.157248 +0000][Error  ][AsyncSock         ] [127.0.0.1:19095.0] Unable to connect: connection refused
Run: [FATAL] Connection error:  (destination)
"""  # noqa: E501


def test_xrdcp_tells_a_lost_session_from_a_refused_connection() -> None:
    assert xrdcp_outcome(51, False, LOST_SESSION, 10) == {
        "error_class": "killed",
        "message": "Run: [FATAL] Connection error",
    }
    assert xrdcp_outcome(51, False, REFUSED, 10)["error_class"] == "connect"


def test_a_message_keeps_no_nul_for_the_database() -> None:
    # xrdcp 5.5.3 ends its error line with a NUL, which PostgreSQL text (and so the
    # webapp's ingest) refuses; the record keeps the words without it.
    said = "Run: [ERROR] Server responded with an error: [3011] Unable to open /x\x00\n"
    outcome = xrdcp_outcome(54, False, said, 10)
    a, b = Endpoint("a", "10.99.1.2"), Endpoint("b", "10.99.2.2")
    creds = ClientCredentials(Path("/pki/user.pem"), Path("/pki/user.key"), Path("/pki/ca"))
    request = TransferRequest(a, b, "/x", "/y", 1, creds, size=1)
    seen = TransferObservation.begin(request, "root", "root://a//x", "root://b//y")
    record = seen.record(False, **outcome)
    assert record.message == "Run: [ERROR] Server responded with an error: [3011] Unable to open /x"
    assert record.error_class == "not-found"


def test_gsi_names_the_endpoints_cns_but_accepts_any_of_ours_through_a_redirector() -> None:
    one = Endpoint("a-1", "10.99.1.2", host_dn="/DC=org/DC=tpc-bench/OU=Services/CN=a-1")
    two = Endpoint("b-1", "10.99.2.2", host_dn="/DC=org/DC=tpc-bench/OU=Services/CN=b-1")
    assert gsi_server_names(one, two) == {"XrdSecGSISRVNAMES": "a-1|b-1"}
    rdr = Endpoint("b-rdr", "10.99.2.3", host_dn="/DC=org/CN=b-rdr", redirector=True)
    # the data server b-rdr sends xrdcp to is named b-1 or b-2, not b-rdr
    assert gsi_server_names(one, rdr) == {"XrdSecGSISRVNAMES": "*"}
