"""How a lab node's servers come to trust the lab's token issuer.

scitokens-cpp 0.7 (Debian bookworm) fetches an issuer's keys over HTTPS trusting only
/etc/ssl/certs/ca-certificates.crt; no environment variable points it elsewhere. So:
- netns mode: /etc/netns/<node>/ssl is a copy of /etc/ssl whose bundle also holds our CA;
  `ip netns exec`, which starts the node's servers, mounts it over /etc/ssl for them only;
- podman: the same bundle is mounted over the container's (podman_runtime);
- loopback mode (no namespaces, maybe no root to mount anything): the issuer's keys are
  written into the library's key cache ($XDG_CACHE_HOME/scitokens/scitokens_cpp.sqllite)
  before the server starts, so it never needs to fetch them.
The host's own /etc/ssl is never touched.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import time
from pathlib import Path

from orchestrator.lab.network import ETC_NETNS
from orchestrator.lab.node_files import own
from orchestrator.lab.preflight import ServerAccount

SYSTEM_SSL = Path("/etc/ssl")
CACHE_FILE = Path("scitokens") / "scitokens_cpp.sqllite"  # the library's own spelling
# Pre-filled keys are never refreshed during a lab's life (the issuer's key does not change).
CACHED_KEYS_LIFETIME = 365 * 24 * 3600


def trust_in_namespace(netns: str, bundle: Path) -> Path:
    """/etc/netns/<netns>/ssl: the system's /etc/ssl with `bundle` as its CA bundle.

    The folder /etc/netns/<netns> is the lab's (network.py records it; lab down removes it).
    """
    target = ETC_NETNS / netns / "ssl"
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(SYSTEM_SSL, target, symlinks=True)
    bundle_copy = target / "certs" / "ca-certificates.crt"
    bundle_copy.unlink(missing_ok=True)
    bundle_copy.write_bytes(bundle.read_bytes())
    bundle_copy.chmod(0o644)
    return target


def prefill_key_cache(
    cache_home: Path, issuer_url: str, jwks_file: Path, account: ServerAccount
) -> Path:
    """The issuer's keys in scitokens-cpp's key cache under `cache_home` (XDG_CACHE_HOME)."""
    path = cache_home / CACHE_FILE
    for folder in (cache_home, path.parent):
        folder.mkdir(parents=True, exist_ok=True)
        own(folder, account, 0o755)
    now = int(time.time())
    keys = {
        "jwks": json.loads(jwks_file.read_text()),
        "expires": now + CACHED_KEYS_LIFETIME,
        "next_update": now + CACHED_KEYS_LIFETIME,
    }
    with sqlite3.connect(path) as db:
        db.execute(
            "CREATE TABLE IF NOT EXISTS keycache ("
            "issuer text UNIQUE PRIMARY KEY NOT NULL, keys text NOT NULL)"
        )
        db.execute(
            "INSERT OR REPLACE INTO keycache (issuer, keys) VALUES (?, ?)",
            (issuer_url, json.dumps(keys)),
        )
    db.close()
    own(path, account, 0o644)
    return path
