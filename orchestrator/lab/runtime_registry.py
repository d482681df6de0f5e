"""The lab's runtimes by name, for `tpcbench lab up --runtime` and for the record of a running
lab (`lab status` and `lab down` ask the runtime that started it)."""

from __future__ import annotations

from collections.abc import Callable

from orchestrator.errors import UserError
from orchestrator.lab.podman_runtime import PodmanRuntime
from orchestrator.lab.process_runtime import ProcessRuntime
from orchestrator.lab.runtime import PODMAN, PROCESS, RUNTIMES, Runtime

RUNTIME_CLASSES: dict[str, Callable[[], Runtime]] = {PROCESS: ProcessRuntime, PODMAN: PodmanRuntime}


def make_runtime(name: str) -> Runtime:
    runtime_class = RUNTIME_CLASSES.get(name)
    if runtime_class is None:
        raise UserError(f"unknown lab runtime {name!r}; use one of: {', '.join(RUNTIMES)}")
    return runtime_class()
