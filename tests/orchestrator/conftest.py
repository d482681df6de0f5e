from __future__ import annotations

from collections.abc import Iterator

import pytest
from ingest_server import IngestServer

from orchestrator.report.spool import Spool


@pytest.fixture
def spool(tmp_path) -> Spool:
    return Spool(tmp_path / "spool")


@pytest.fixture
def ingest() -> Iterator[IngestServer]:
    with IngestServer() as server:
        yield server
