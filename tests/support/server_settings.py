"""One lab node's XRootD settings as the lab writes them, for the configuration tests."""

from __future__ import annotations

from pathlib import Path

from orchestrator.servers import XrootdSettings

LAB_NODE_XROOTD = XrootdSettings(
    name="lab-1",
    data_root=Path("/dev/shm/d1"),
    run_dir=Path("/srv/n1/run"),
    host_cert=Path("/srv/n1/pki/hostcert.pem"),
    host_key=Path("/srv/n1/pki/hostkey.pem"),
    certdir=Path("/srv/certificates"),
    gridmap=Path("/srv/n1/xrootd-gridmap"),
    macaroon_secret=Path("/srv/n1/pki/macaroon-secret"),
)
