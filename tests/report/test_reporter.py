"""Spool + reporter against a real HTTP server on 127.0.0.1: nothing lost, nothing doubled."""

from __future__ import annotations

import json
import random
import threading

import pytest

from orchestrator.errors import UserError
from orchestrator.report.reporter import Reporter, backoff_delay, load_token
from orchestrator.report.spool import Spool
from tests.support.ingest_server import IngestServer, free_port
from tests.support.measurement_samples import sample_measurement


def wait_for(condition, timeout: float = 30.0) -> bool:
    """Poll `condition` (a liveness wait, not a timing assertion)."""
    done = threading.Event()
    for _ in range(int(timeout / 0.02)):
        if condition():
            return True
        done.wait(0.02)
    return condition()


def test_spool_write_is_complete_and_leaves_no_temporary_files(spool: Spool) -> None:
    m = sample_measurement()
    item = spool.put(m)
    assert item.path.name == f"{m['uuid']}.json"
    assert json.loads(item.path.read_text()) == m
    assert [p.name for p in spool.directory.iterdir() if p.is_file()] == [item.path.name]
    (spool.directory / ".x.json.123.tmp").write_text("{half")  # a crash mid-write
    assert [i.uuid for i in spool.pending()] == [m["uuid"]]
    assert spool.depth() == 1


def test_spool_refuses_a_uuid_that_is_not_one(spool: Spool) -> None:
    with pytest.raises(ValueError):
        spool.put(sample_measurement(uuid="../../etc/passwd"))


def test_webapp_down_spool_grows_then_up_drains_without_duplicates(tmp_path) -> None:
    port = free_port()
    spool = Spool(tmp_path / "spool")
    reporter = Reporter(spool, f"http://127.0.0.1:{port}", "secret-token", timeout=5)
    measurements = [sample_measurement() for _ in range(3)]
    assert [reporter.report(m) for m in measurements] == ["spooled"] * 3
    assert spool.depth() == 3
    assert not reporter.drain().complete
    reporter.close()

    # A restarted orchestrator (a new Reporter on the same spool) finds and sends them.
    with IngestServer(port=port) as server:
        reporter = Reporter(Spool(tmp_path / "spool"), server.url, "secret-token")
        result = reporter.drain()
        assert (result.sent, result.failed, result.rejected) == (3, 0, 0)
        assert spool.depth() == 0
        assert set(server.measurements) == {m["uuid"] for m in measurements}
        # Re-sending one (as after a crash between POST and unlink) is a harmless replay.
        assert reporter.report(measurements[0]) == "sent"
        assert len(server.measurements) == 3
        assert server.measurements[measurements[0]["uuid"]] == measurements[0]
        reporter.close()


def test_5xx_keeps_the_measurement_until_the_server_recovers(spool, ingest) -> None:
    reporter = Reporter(spool, ingest.url, "secret-token")
    ingest.force_status = 503
    m = sample_measurement()
    assert reporter.report(m) == "spooled"
    assert spool.depth() == 1 and "503" in (reporter.last_error or "")
    ingest.force_status = None
    assert reporter.drain().sent == 1
    assert spool.depth() == 0 and m["uuid"] in ingest.measurements


def test_a_wrong_token_is_retried_not_rejected(spool, ingest) -> None:
    reporter = Reporter(spool, ingest.url, "wrong-token")
    assert reporter.report(sample_measurement()) == "spooled"
    assert spool.depth() == 1 and spool.rejected() == []


def test_4xx_moves_to_rejected_with_the_servers_answer(spool, ingest) -> None:
    reporter = Reporter(spool, ingest.url, "secret-token")
    bad = sample_measurement()
    del bad["src"]
    assert reporter.report(bad) == "rejected"
    assert spool.depth() == 0
    (rejected,) = spool.rejected()
    assert json.loads(rejected.read_text()) == bad
    answer = json.loads(rejected.with_name(f"{rejected.stem}.response.json").read_text())
    assert answer["status"] == 400 and "src" in answer["answer"]
    assert spool.requeue_rejected() == 1 and spool.depth() == 1


def test_409_same_uuid_different_content_is_rejected(spool, ingest) -> None:
    reporter = Reporter(spool, ingest.url, "secret-token")
    first = sample_measurement()
    assert reporter.report(first) == "sent"
    changed = {**first, "streams": 1}
    assert reporter.report(changed) == "rejected"
    assert ingest.measurements[first["uuid"]]["streams"] == 8
    assert json.loads(spool.rejected()[0].read_text())["streams"] == 1


def test_campaign_state_waits_for_the_campaign_its_measurements_create(spool, ingest) -> None:
    reporter = Reporter(spool, ingest.url, "secret-token")
    cid = "0b5a1d8e-5a7e-4b9e-9d7f-1f4d1f0f0c11"
    # Unknown to the webapp until its first measurement arrives: kept, not rejected, and
    # never POSTed (that would create a different, pending "run now" campaign).
    assert reporter.report_campaign(cid, {"state": "running", "trigger": "cli"}) == "spooled"
    assert ingest.campaigns == {} and spool.rejected() == []
    assert reporter.report(sample_measurement(campaign=cid)) == "sent"
    assert ingest.campaigns[cid]["state"] == "running"
    assert reporter.report_campaign(cid, {"state": "finished", "finished": "x"}) == "sent"
    assert reporter.drain().complete
    assert ingest.campaigns[cid]["state"] == "finished"
    assert len(ingest.campaigns) == 1
    assert spool.pending() == []


def test_a_final_state_of_a_campaign_the_webapp_never_saw_is_rejected_visibly(
    spool, ingest
) -> None:
    reporter = Reporter(spool, ingest.url, "secret-token")
    cid = "3c1e0a53-8f43-4d55-9bd6-0a8f45c8e2a7"
    assert reporter.report_campaign(cid, {"state": "failed"}) == "rejected"
    (kept,) = spool.rejected()
    assert json.loads(kept.read_text())["state"] == "failed"
    assert ingest.campaigns == {}


def test_background_resender_delivers_once_the_webapp_is_back(tmp_path) -> None:
    port = free_port()
    spool = Spool(tmp_path / "spool")
    reporter = Reporter(
        spool, f"http://127.0.0.1:{port}", "secret-token", backoff_initial=0.05, backoff_cap=0.2
    )
    reporter.start()
    ms = [sample_measurement() for _ in range(5)]
    for m in ms:
        reporter.report(m)
    assert spool.depth() == 5
    with IngestServer(port=port) as server:
        assert wait_for(lambda: spool.depth() == 0)
        assert set(server.measurements) == {m["uuid"] for m in ms}
        assert server.posts >= 5
        reporter.close()


def test_without_a_url_everything_stays_spooled(spool) -> None:
    reporter = Reporter(spool)
    assert reporter.report(sample_measurement()) == "spooled"
    assert spool.depth() == 1


def test_backoff_doubles_is_capped_and_jittered() -> None:
    rng = random.Random(7)
    for attempt in range(12):
        delay = backoff_delay(attempt, initial=1.0, cap=60.0, rng=rng)
        ideal = min(60.0, 2.0**attempt)
        assert ideal / 2 <= delay <= ideal
    assert backoff_delay(10_000, cap=300.0, rng=rng) <= 300.0


def test_token_from_file_wins_over_environment(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("TPCBENCH_API_TOKEN", "from-env")
    assert load_token() == "from-env"
    token_file = tmp_path / "token"
    token_file.write_text("from-file\n")
    assert load_token(token_file) == "from-file"
    with pytest.raises(UserError):
        load_token(tmp_path / "missing")
