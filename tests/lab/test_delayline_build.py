"""The delay program is built from its Go source by scripts/delayline/build.sh, once: a second
run finds the cache stamped with the same version and source hash and builds nothing."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BUILD = REPO / "scripts" / "delayline" / "build.sh"
SOURCE = REPO / "orchestrator" / "lab" / "delayline"


def build(cache: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TPCBENCH_DELAYLINE_CACHE": str(cache)}
    return subprocess.run(
        [str(BUILD)], capture_output=True, text=True, env=env, timeout=600, check=False
    )


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("delayline-cache")


def test_build_once_then_from_the_cache(cache: Path) -> None:
    tmp_path = cache
    first = build(tmp_path)
    assert first.returncode == 0, first.stderr
    program = Path(first.stdout.strip())
    assert program == tmp_path / "delayline" and os.access(program, os.X_OK)
    assert "building the delay program" in first.stderr
    version = subprocess.run([str(program), "-version"], capture_output=True, text=True)
    assert version.stdout.startswith("delayline ")
    stamp = (tmp_path / ".version").read_text()
    sources = b"".join(
        (SOURCE / name).read_bytes() for name in ("go.mod", "go.sum", "main.go", "nfqueue.go")
    )
    assert f"source={hashlib.sha256(sources).hexdigest()[:16]}" in stamp
    assert version.stdout.split()[1] in stamp
    built_at = program.stat().st_mtime_ns

    second = build(tmp_path)
    assert second.returncode == 0 and second.stdout.strip() == str(program)
    assert second.stderr == "" and program.stat().st_mtime_ns == built_at


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], "give at least one -queue NUM=DELAY"),
        (["-queue", "102"], "want NUM=DELAY"),
        (["-queue", "102=fast"], "want a duration from 0 to 10s"),
        (["-queue", "70000=5ms"], "want 0-65535"),
        (["-queue", "102=5ms", "-queue", "102=6ms"], "queue 102 given twice"),
    ],
)
def test_bad_arguments_are_refused(cache: Path, argv: list[str], message: str) -> None:
    program = Path(build(cache).stdout.strip())
    refused = subprocess.run([str(program), *argv], capture_output=True, text=True)
    assert refused.returncode == 2 and message in refused.stderr
