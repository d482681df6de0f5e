"""Property tests of ingest: the server's figures follow the paper's definitions, retries are
harmless, whatever the mix of transfer durations and outcomes."""

import uuid as uuid_lib
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from webapp.results.models import Measurement, Transfer

pytestmark = pytest.mark.django_db

URL = "/api/v1/measurements/"
BASE = datetime(2026, 11, 1, tzinfo=UTC)

transfer_plans = st.lists(
    st.tuples(
        st.integers(min_value=0, max_value=5_000),  # start offset, ms
        st.integers(min_value=1, max_value=60_000),  # duration, ms
        st.booleans(),  # succeeded
    ),
    min_size=1,
    max_size=20,
)


@settings(
    max_examples=30,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(plan=transfer_plans, file_size=st.integers(min_value=1, max_value=2**40))
def test_server_figures_follow_the_definitions(reporter, plan, file_size):
    transfers = []
    for index, (offset, duration, ok) in enumerate(plan):
        start = BASE + timedelta(milliseconds=offset)
        transfers.append(
            {
                "index": index,
                "start": start.isoformat(),
                "end": (start + timedelta(milliseconds=duration)).isoformat(),
                "bytes": file_size if ok else 0,
                "outcome": "success" if ok else "failure",
                "error_class": None if ok else "remote-failure",
                "message": "",
            }
        )
    body = {
        "uuid": str(uuid_lib.uuid4()),
        "campaign": None,
        "src": "p",
        "dst": "q",
        "protocol": "gridftp",
        "streams": 1,
        "file_size": file_size,
        "rtt_ms": None,
        "started": BASE.isoformat(),
        "finished": (BASE + timedelta(seconds=66)).isoformat(),
        "transfers": transfers,
    }
    first = reporter.post(URL, body, format="json")
    assert first.status_code == 201, first.content
    data = first.json()

    ok = [(o, d) for o, d, good in plan if good]
    assert (data["succeeded"], data["failed"]) == (len(ok), len(plan) - len(ok))
    if ok:
        bits = len(ok) * file_size * 8
        mean_seconds = sum(d for _, d in ok) / len(ok) / 1000
        span_seconds = (max(o + d for o, d in ok) - min(o for o, _ in ok)) / 1000
        assert data["throughput_gbps"] == pytest.approx(bits / mean_seconds / 1e9)
        assert data["makespan_gbps"] == pytest.approx(bits / span_seconds / 1e9)
        assert data["makespan_gbps"] <= data["throughput_gbps"] * (1 + 1e-9)
    else:
        assert data["throughput_gbps"] is None and data["makespan_gbps"] is None

    measurements, transfers_stored = Measurement.objects.count(), Transfer.objects.count()
    again = reporter.post(URL, body, format="json")
    assert again.status_code == 200
    assert again.json()["throughput_gbps"] == data["throughput_gbps"]
    assert (Measurement.objects.count(), Transfer.objects.count()) == (
        measurements,
        transfers_stored,
    )
