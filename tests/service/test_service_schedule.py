"""The service's pure schedule logic and its settings layers."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.campaign.settings import load_settings, parse_duration
from orchestrator.errors import UserError
from orchestrator.service.daemon import ScheduleClock, next_run

NOON = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)


def test_default_schedule_is_midnight_and_noon_utc() -> None:
    assert next_run("0 0,12 * * *", NOON - timedelta(minutes=1)) == NOON
    assert next_run("0 0,12 * * *", NOON) == NOON + timedelta(hours=12)


@settings(max_examples=200, deadline=None)
@given(
    minutes_after=st.integers(min_value=0, max_value=60 * 24 * 3),
    slip=st.floats(min_value=0, max_value=3 * 86400),
    seed=st.integers(0, 2**32),
)
def test_slip_stays_within_the_slot(minutes_after: int, slip: float, seed: int) -> None:
    after = NOON + timedelta(minutes=minutes_after)
    base = next_run("0 0,12 * * *", after)
    run = next_run("0 0,12 * * *", after, slip, random.Random(seed))
    assert base <= run <= base + timedelta(seconds=min(slip, 12 * 3600))
    assert run > after


def test_slip_is_random_not_constant() -> None:
    rng = random.Random(3)
    runs = {next_run("0 * * * *", NOON, 1800, rng) for _ in range(20)}
    assert len(runs) > 1


def test_a_long_campaign_skips_missed_slots_instead_of_queueing_them() -> None:
    clock = ScheduleClock("0 * * * *", NOON + timedelta(minutes=1))
    assert clock.next_at == NOON + timedelta(hours=1)
    assert not clock.due(NOON + timedelta(minutes=59))
    start = NOON + timedelta(hours=1)
    assert clock.due(start)
    # The campaign took 3.5 hours: 14:00 and 15:00 passed meanwhile.
    clock.campaign_ended(start + timedelta(hours=3, minutes=30))
    assert clock.next_at == NOON + timedelta(hours=5)
    assert not clock.due(start + timedelta(hours=3, minutes=31))


def test_no_double_start_in_one_slot() -> None:
    clock = ScheduleClock("0 0,12 * * *", NOON - timedelta(minutes=5))
    starts = 0
    now = NOON - timedelta(minutes=5)
    while now < NOON + timedelta(hours=11):
        if clock.due(now):
            starts += 1
            clock.campaign_ended(now + timedelta(seconds=30))
        now += timedelta(minutes=1)
    assert starts == 1


def test_run_on_start_is_due_immediately() -> None:
    clock = ScheduleClock("0 0,12 * * *", NOON + timedelta(hours=1), run_on_start=True)
    assert clock.due(NOON + timedelta(hours=1))


def test_an_invalid_cron_is_a_user_error() -> None:
    with pytest.raises(UserError):
        ScheduleClock("every tuesday", NOON)


def test_settings_precedence_flags_over_env_over_file(tmp_path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        'max_parallel_pairs = 2\nstreams = [4, 2]\nfile_size = "16MiB"\n'
        'schedule = "0 6 * * *"\nslip = "30m"\n'
    )
    env = {"TPCBENCH_MAX_PARALLEL_PAIRS": "3", "TPCBENCH_SCHEDULE": "0 7 * * *"}
    s = load_settings({"max_parallel_pairs": "5"}, env=env, config_path=config)
    assert s.max_parallel_pairs == 5 and s.sources["max_parallel_pairs"] == "flag"
    assert s.schedule == "0 7 * * *" and s.sources["schedule"] == "environment"
    assert s.streams == [4, 2] and s.file_size == 16 * 2**20 and s.slip == 1800.0
    assert s.protocols == ["https", "gridftp"] and "protocols" not in s.sources


def test_settings_reject_typos_and_bad_values(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("TPCBENCH_HOME", str(tmp_path / "home"))
    config = tmp_path / "config.toml"
    config.write_text("max_paralel_pairs = 2\n")
    with pytest.raises(UserError, match="unknown setting"):
        load_settings(env={}, config_path=config)
    with pytest.raises(UserError, match="TPCBENCH_STREAMS"):
        load_settings(env={"TPCBENCH_STREAMS": "8,zero"})


def test_missing_default_config_is_fine_but_a_named_one_is_not(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("TPCBENCH_HOME", str(tmp_path))
    assert load_settings(env={}).transfers == 11
    with pytest.raises(UserError, match="does not exist"):
        load_settings(env={"TPCBENCH_CONFIG": str(tmp_path / "nope.toml")})


def test_sizes_and_durations_parse_as_people_type_them(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("TPCBENCH_HOME", str(tmp_path))
    s = load_settings({"file_size": "1GiB"}, env={})
    assert s.file_size == 2**30
    assert load_settings({"file_size": "1073741824"}, env={}).file_size == 2**30
    assert parse_duration("30m") == 1800 and parse_duration("2h") == 7200
    assert parse_duration("90") == 90


def test_auth_and_client_settings_take_lists_of_known_values() -> None:
    s = load_settings({"auth": "x509,token"}, env={"TPCBENCH_CLIENT": "gfal2"})
    assert (s.auth, s.client) == (["x509", "token"], ["gfal2"])
    assert (load_settings(env={}).auth, load_settings(env={}).client) == (["x509"], ["native"])
    with pytest.raises(UserError, match="auth: kerberos is not one of x509, token"):
        load_settings({"auth": "x509,kerberos"}, env={})
    with pytest.raises(UserError, match="TPCBENCH_CLIENT: client: fts is not one of"):
        load_settings(env={"TPCBENCH_CLIENT": "fts"})
