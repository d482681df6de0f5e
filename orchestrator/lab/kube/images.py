"""Our images into every node's containerd: the cluster lab has no registry to pull from.

podman saves every image into one archive (shared layers once), kept under the kube-node
cache and named by the images' IDs, so a second lab reuses it; each node's containerd
imports it under the images' own names (`localhost/tpc-bench/xrootd:0.1.0`), which is what
the chart's lab values ask for with `images.registry: localhost`.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from orchestrator.errors import UserError
from orchestrator.lab.kube.binaries import NODE_CACHE
from orchestrator.lab.kube.node_config import NodeLayout
from orchestrator.lab.podman_runtime import podman

CRI_NAMESPACE = "k8s.io"
KEEP_ARCHIVES = 2  # the newest few: rebuilt images make new ones


def archive_dir() -> Path:
    return Path(os.environ.get("TPCBENCH_KUBENODE_CACHE") or NODE_CACHE) / "archives"


def image_archive(tags: list[str]) -> Path:
    """One docker-archive of `tags`, made once per set of image IDs."""
    ids = []
    for tag in tags:
        result = podman("image", "inspect", "--format", "{{.Id}}", tag)
        if result.returncode != 0:
            raise UserError(f"image {tag} is not built; build it with: make images")
        ids.append(f"{tag}@{result.stdout.strip()}")
    key = hashlib.sha256("\n".join(ids).encode()).hexdigest()[:16]
    folder = archive_dir()
    folder.mkdir(parents=True, exist_ok=True)
    archive = folder / f"images-{key}.tar"
    if archive.exists():
        return archive
    partial = archive.with_suffix(".partial")
    partial.unlink(missing_ok=True)
    result = podman(
        "save", "--multi-image-archive", "--format", "docker-archive", "--output", str(partial),
        *tags, timeout=600,
    )  # fmt: skip
    if result.returncode != 0:
        raise UserError(f"podman save failed: {result.stderr.strip().splitlines()[-1:]}")
    partial.rename(archive)
    old = sorted(folder.glob("images-*.tar"), key=lambda p: p.stat().st_mtime, reverse=True)
    for stale in old[KEEP_ARCHIVES:]:
        stale.unlink(missing_ok=True)
    return archive


def import_into(layout: NodeLayout, archive: Path) -> None:
    result = subprocess.run(
        ["ctr", "--address", str(layout.containerd_socket), "--namespace", CRI_NAMESPACE,
         "images", "import", str(archive)],
        capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    if result.returncode != 0:
        detail = (result.stderr or result.stdout).strip().splitlines()
        raise UserError(
            f"importing images into {layout.plan.name}'s containerd failed: "
            f"{detail[-1] if detail else result.returncode}"
        )


def import_everywhere(layouts: list[NodeLayout], tags: list[str]) -> None:
    """Every image into every node, two nodes at a time (ctr import is mostly disk work)."""
    archive = image_archive(tags)
    with ThreadPoolExecutor(max_workers=2) as pool:
        for future in [pool.submit(import_into, layout, archive) for layout in layouts]:
            future.result()
