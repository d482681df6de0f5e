"""Where things are inside a server container: the paths the images, the chart and the lab's
podman runtime agree on (docs/images.md has the table)."""

from __future__ import annotations

from pathlib import Path

DATA_ROOT = Path("/data")  # memory-backed: the source file and the incoming copies
RUN_DIR = Path("/run/tpc-bench")  # writable scratch: admin path, generated config
CERTDIR = Path("/etc/grid-security/certificates")  # <hash>.0, .signing_policy, .r0
HOST_CREDENTIALS = Path("/etc/grid-security/tpc-bench")  # the node's own certificate
HOST_CERT = HOST_CREDENTIALS / "hostcert.pem"
HOST_KEY = HOST_CREDENTIALS / "hostkey.pem"
# A directory of its own: a ConfigMap mounted there (no subPath) follows the signer's updates.
GRID_MAPFILE_DIR = Path("/etc/grid-security/gridmap")
GRID_MAPFILE = GRID_MAPFILE_DIR / "grid-mapfile"  # orchestrator DN -> local user (GridFTP)
XROOTD_GRIDMAP = GRID_MAPFILE_DIR / "xrootd-gridmap"  # DN -> identity (servers/access.py)
MACAROON_SECRET = Path("/etc/tpc-bench/macaroons/secret")  # a Secret: one key per release
SERVER_USER = "tpcbench"  # the non-root account every image runs as
SERVER_UID = 10001
SERVER_GID = 10001
