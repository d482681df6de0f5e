"""Messages that real tools and servers print map to the documented error classes."""

from __future__ import annotations

import pytest

from orchestrator.transfers.error_classes import classify_http_status, classify_message, outcome_of


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        # XRootD HTTP-TPC failure lines
        ('Remote side failed with status code 404; error message: "Unable to open"', "not-found"),
        ("Remote side failed with status code 403", "auth"),
        ("Transfer timed out", "timeout"),
        ("Failed to connect to 127.0.0.1 port 19443: Connection refused", "connect"),
        # xrdcp
        ("Run: [ERROR] Server responded with an error: [3011] Unable to open /x", "not-found"),
        ("Run: [ERROR] Server responded with an error: [3010] tpc not authorized", "auth"),
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
