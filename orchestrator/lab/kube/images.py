"""Our images in every node's containerd: the cluster lab has no registry to pull from.

Importing ~2 GB of layers into every node's containerd costs minutes and gigabytes per node.
Instead one containerd root holding every image is made once per set of image IDs (podman
saves the images into one archive, a containerd of our own imports it), kept under the
kube-node cache, and each node's root starts as hard links to it. Blobs and unpacked layers
never change once written (containers write to their own upper directories), so the links
are safe; the two bolt databases containerd writes are copied instead. The images keep their
own names (`localhost/tpc-bench/xrootd:0.1.0`), which the chart's lab values ask for.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import orchestrator.lab.processes as processes
from orchestrator.errors import UserError
from orchestrator.lab.kube.binaries import NODE_CACHE
from orchestrator.lab.kube.node_config import NodeLayout, containerd_config
from orchestrator.lab.podman_runtime import podman
from orchestrator.lab.topology import NodePlan

CRI_NAMESPACE = "k8s.io"
KEEP_TEMPLATES = 2  # the newest few: rebuilt images make new ones
# Files containerd rewrites while it runs: copied into each node, never linked.
DATABASES = (
    "io.containerd.metadata.v1.bolt/meta.db",
    "io.containerd.snapshotter.v1.overlayfs/metadata.db",
)


def cache_dir() -> Path:
    return Path(os.environ.get("TPCBENCH_KUBENODE_CACHE") or NODE_CACHE) / "containerd"


def _image_key(tags: list[str]) -> str:
    ids = []
    for tag in tags:
        result = podman("image", "inspect", "--format", "{{.Id}}", tag)
        if result.returncode != 0:
            raise UserError(f"image {tag} is not built; build it with: make images")
        ids.append(f"{tag}@{result.stdout.strip()}")
    return hashlib.sha256("\n".join(ids).encode()).hexdigest()[:16]


def template_root(tags: list[str]) -> Path:
    """A containerd root holding every image of `tags`, made once per set of image IDs."""
    folder = cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    template = folder / f"root-{_image_key(tags)}"
    with open(folder / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two labs starting at once make it once
        if not template.is_dir():
            _make_template(template, tags)
            _drop_stale(folder, keep=template)
    return template


def _make_template(template: Path, tags: list[str]) -> None:
    work = Path(tempfile.mkdtemp(prefix="template-", dir=template.parent))
    try:
        archive = work / "images.tar"
        saved = podman(
            "save", "--multi-image-archive", "--format", "docker-archive", "--output",
            str(archive), *tags, timeout=900,
        )  # fmt: skip
        if saved.returncode != 0:
            raise UserError(f"podman save failed: {saved.stderr.strip()[-300:]}")
        plan = NodePlan(index=0, name="template", address="127.0.0.1", ports={}, data_ports=(0, 0))
        layout = NodeLayout(plan, work / "node", "/")
        layout.root.mkdir()
        config = work / "containerd.toml"
        config.write_text(containerd_config(layout))
        daemon = processes.spawn(
            "template", "containerd", ["containerd", "--config", str(config)],
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")}, log=work / "containerd.log",
            cwd=work,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 60
            while not layout.containerd_socket.exists():
                if time.monotonic() > deadline or not processes.is_alive(daemon):
                    raise UserError(f"containerd for the image template did not start: {work}")
                time.sleep(0.2)
            imported = subprocess.run(
                ["ctr", "--address", str(layout.containerd_socket), "--namespace",
                 CRI_NAMESPACE, "images", "import", str(archive)],
                capture_output=True, text=True, timeout=1800, check=False,
            )  # fmt: skip
            if imported.returncode != 0:
                detail = (imported.stderr or imported.stdout).strip().splitlines()
                raise UserError(f"ctr images import failed: {detail[-1] if detail else '?'}")
        finally:
            processes.stop(daemon)
        layout.containerd_root.rename(template)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _drop_stale(folder: Path, keep: Path) -> None:
    roots = sorted(folder.glob("root-*"), key=lambda p: p.stat().st_mtime, reverse=True)
    for stale in [r for r in roots if r != keep][KEEP_TEMPLATES - 1 :]:
        shutil.rmtree(stale, ignore_errors=True)


def seed_node(layout: NodeLayout, template: Path) -> None:
    """The node's containerd root as hard links to `template`, its databases copied."""
    target = layout.containerd_root
    if target.exists():
        shutil.rmtree(target)
    linked = subprocess.run(
        ["cp", "-a", "--link", str(template), str(target)], capture_output=True, text=True
    )
    if linked.returncode != 0:  # another file system: a plain copy still works
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(template, target, symlinks=True)
    for name in DATABASES:
        database = target / name
        if database.exists():
            database.unlink()
            shutil.copy2(template / name, database)
