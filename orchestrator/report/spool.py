"""A durable on-disk spool: every finished measurement is a file before it is sent anywhere.

One JSON file per measurement uuid (`<uuid>.json`), written atomically (temporary file,
fsync, rename, fsync of the directory), so a crash at any instant leaves either the
complete measurement or nothing — never half a file. A file leaves the spool only when the
webapp has acknowledged it, or moves to `rejected/` together with the server's answer.
Campaign state updates live in `campaigns/<uuid>.json` (the latest state wins).
"""

from __future__ import annotations

import json
import os
import tempfile
import uuid as uuidlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.paths import tpcbench_home


def default_spool_dir() -> Path:
    return tpcbench_home() / "spool"


def _checked_uuid(value: Any) -> str:
    """The canonical form of a uuid; anything else could escape the spool directory."""
    return str(uuidlib.UUID(str(value)))


def write_json_atomically(path: Path, data: Any) -> None:
    """Write `data` to `path` so that readers (and crashes) see the old file or the new one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle, sort_keys=True)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    fsync_directory(path.parent)


def fsync_directory(directory: Path) -> None:
    """Make a rename or unlink in `directory` itself durable."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# Results other than measurements, each in a folder of its own: kind -> folder.
RESULT_FOLDERS = {"baseline": "baselines", "prelim": "prelim", "lookup": "lookups"}


@dataclass(frozen=True)
class SpoolItem:
    """One thing waiting to be sent: a measurement, a link baseline or a preliminary run
    (POST), or a campaign state (PATCH)."""

    kind: str  # "measurement" | "campaign" | "baseline" | "prelim" | "lookup"
    uuid: str
    path: Path

    def load(self) -> dict[str, Any]:
        return json.loads(self.path.read_text(encoding="utf-8"))


class Spool:
    """The directory of unsent results. Safe to share between threads and restarts."""

    def __init__(self, directory: Path | str | None = None) -> None:
        self.directory = Path(directory) if directory is not None else default_spool_dir()
        self.campaign_dir = self.directory / "campaigns"
        self.rejected_dir = self.directory / "rejected"
        self.result_dirs = {kind: self.directory / name for kind, name in RESULT_FOLDERS.items()}
        for d in (self.directory, self.campaign_dir, self.rejected_dir, *self.result_dirs.values()):
            d.mkdir(parents=True, exist_ok=True)

    # -- writing -------------------------------------------------------------------------

    def put(self, measurement: dict[str, Any]) -> SpoolItem:
        """Store a finished measurement durably; returns its spool item."""
        uuid = _checked_uuid(measurement["uuid"])
        path = self.directory / f"{uuid}.json"
        write_json_atomically(path, measurement)
        return SpoolItem("measurement", uuid, path)

    def put_result(self, kind: str, result: dict[str, Any]) -> SpoolItem:
        """Store a link baseline or a preliminary run durably (`kind`: see RESULT_FOLDERS)."""
        uuid = _checked_uuid(result["uuid"])
        path = self.result_dirs[kind] / f"{uuid}.json"
        write_json_atomically(path, result)
        return SpoolItem(kind, uuid, path)

    def put_campaign(self, campaign_uuid: str, state: dict[str, Any]) -> SpoolItem:
        """Store the latest state of a campaign, replacing any older unsent one."""
        uuid = _checked_uuid(campaign_uuid)
        path = self.campaign_dir / f"{uuid}.json"
        write_json_atomically(path, state)
        return SpoolItem("campaign", uuid, path)

    # -- reading -------------------------------------------------------------------------

    def _items(self, directory: Path, kind: str) -> Iterator[SpoolItem]:
        paths = [p for p in directory.glob("*.json") if not p.name.startswith(".")]
        for path in sorted(paths, key=lambda p: (p.stat().st_mtime_ns, p.name)):
            yield SpoolItem(kind, path.stem, path)

    def pending(self) -> list[SpoolItem]:
        """Campaign states first (results refer to their campaign), oldest first."""
        try:
            return [
                *self._items(self.campaign_dir, "campaign"),
                *[item for kind, d in self.result_dirs.items() for item in self._items(d, kind)],
                *self._items(self.directory, "measurement"),
            ]
        except FileNotFoundError:  # a file sent by another thread while listing
            return self.pending()

    def depth(self) -> int:
        """How many results (measurements, baselines, preliminary runs) wait to be sent."""
        folders = (self.directory, *self.result_dirs.values())
        return sum(1 for d in folders for p in d.glob("*.json") if not p.name.startswith("."))

    def rejected(self) -> list[Path]:
        return sorted(p for p in self.rejected_dir.glob("*.json") if ".response" not in p.name)

    # -- leaving the spool ---------------------------------------------------------------

    def acknowledge(self, item: SpoolItem) -> None:
        """The webapp has it: forget the local copy."""
        item.path.unlink(missing_ok=True)
        fsync_directory(item.path.parent)

    def reject(self, item: SpoolItem, status: int, answer: str) -> Path:
        """Keep a result the webapp refused, next to the server's answer, for a human."""
        target = self.rejected_dir / f"{item.kind}-{item.uuid}.json"
        write_json_atomically(
            self.rejected_dir / f"{item.kind}-{item.uuid}.response.json",
            {"status": status, "answer": answer},
        )
        os.replace(item.path, target)
        fsync_directory(self.rejected_dir)
        fsync_directory(item.path.parent)
        return target

    def requeue_rejected(self) -> int:
        """Move every rejected result back into the spool (after the cause is fixed)."""
        count = 0
        for path in self.rejected():
            kind, _, uuid = path.stem.partition("-")
            target_dir = {"campaign": self.campaign_dir, **self.result_dirs}.get(
                kind, self.directory
            )
            os.replace(path, target_dir / f"{uuid}.json")
            (self.rejected_dir / f"{path.stem}.response.json").unlink(missing_ok=True)
            count += 1
        fsync_directory(self.rejected_dir)
        return count
