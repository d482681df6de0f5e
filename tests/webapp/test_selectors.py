"""The selectors the pages and the API share: windows, latency fit, stream comparison, history."""

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from tests.support.reads_reference import approx_rows, reference_latency_rows, reference_stream_rows
from webapp.results.models import Campaign
from webapp.results.selectors import aggregates as selectors
from webapp.results.selectors.campaigns import latest_campaign
from webapp.results.selectors.pairs import pair_history
from webapp.results.windows import WINDOW_PATTERN, parse_window

pytestmark = pytest.mark.django_db

GIB_BITS = 2**30 * 8


@pytest.mark.parametrize(
    ("text", "label", "duration"),
    [
        ("latest", "latest", None),
        ("24h", "24h", timedelta(hours=24)),
        ("20d", "20d", timedelta(days=20)),
        (" 7D ", "7d", timedelta(days=7)),
    ],
)
def test_parse_window_accepts_the_documented_forms(text, label, duration):
    window = parse_window(text)
    assert (window.label, window.duration) == (label, duration)


@pytest.mark.parametrize("text", ["", "20", "d", "0d", "-1d", "1w", "20 d", "99999d", "latest1"])
def test_parse_window_rejects_anything_else_and_says_why(text):
    with pytest.raises(ValueError, match="latest"):
        parse_window(text)


def test_the_apis_window_pattern_is_what_parse_window_reads_as_written():
    pattern = re.compile(WINDOW_PATTERN)
    for text in ["latest", *(f"{n}{unit}" for n in range(100_000) for unit in "hd")]:
        try:
            label = parse_window(text).label
        except ValueError:
            label = None
        assert bool(pattern.match(text)) == (label == text), text


def test_throughput_vs_latency_means_points_and_fit(ingest):
    # Three pairs on an exact line: throughput (Gbps) = 11 * 8 * 2^30 / seconds / 1e9.
    for dst, rtt, seconds in (("b", 10.0, 2.0), ("c", 20.0, 4.0), ("d", 40.0, 8.0)):
        ingest(src="a", dst=dst, rtt_ms=rtt, seconds=seconds)
        ingest(src="a", dst=dst, rtt_ms=rtt, seconds=seconds)
    ingest(src="a", dst="b", protocol="gridftp", rtt_ms=10.0, seconds=4.0)
    old = timezone.now() - timedelta(days=30)
    ingest(src="a", dst="b", rtt_ms=10.0, seconds=1.0, started=old)  # outside 20d

    result = selectors.throughput_vs_latency(protocol="https", streams=None, window="20d")
    assert result["protocol"] == "https" and result["window"] == "20d"
    points = {(p["src"], p["dst"]): p for p in result["points"]}
    assert set(points) == {("a", "b"), ("a", "c"), ("a", "d")}
    assert points[("a", "b")]["measurements"] == 2
    assert points[("a", "b")]["throughput_gbps"] == pytest.approx(11 * GIB_BITS / 2.0 / 1e9)
    assert points[("a", "c")]["rtt_ms"] == pytest.approx(20.0)
    fit = result["fits"]["https"]
    assert fit["n"] == 3
    xs = [10.0, 20.0, 40.0]
    ys = [11 * GIB_BITS / s / 1e9 for s in (2.0, 4.0, 8.0)]
    mean_x, mean_y = sum(xs) / 3, sum(ys) / 3
    slope = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / sum(
        (x - mean_x) ** 2 for x in xs
    )
    assert fit["slope_gbps_per_ms"] == pytest.approx(slope)
    assert fit["intercept_gbps"] == pytest.approx(mean_y - slope * mean_x)
    assert -1 < fit["r"] < -0.9
    assert "gridftp" not in result["fits"]

    both = selectors.throughput_vs_latency(protocol=None, streams=None, window="20d")
    assert set(both["fits"]) == {"https", "gridftp"}
    assert both["fits"]["gridftp"] == {
        "slope_gbps_per_ms": None,
        "intercept_gbps": None,
        "r": None,
        "n": 1,
    }


def test_throughput_vs_latency_streams_filter(ingest):
    ingest(src="a", dst="b", streams=8, seconds=2.0)
    ingest(src="a", dst="b", streams=1, seconds=8.0)
    one = selectors.throughput_vs_latency(protocol="https", streams=1, window="24h")
    assert [p["throughput_gbps"] for p in one["points"]] == [
        pytest.approx(11 * GIB_BITS / 8.0 / 1e9)
    ]


def test_stream_comparison_pairs_single_against_highest_multi(ingest):
    ingest(src="a", dst="b", streams=1, seconds=8.0)
    ingest(src="a", dst="b", streams=4, seconds=4.0)
    ingest(src="a", dst="b", streams=8, seconds=2.0)
    ingest(src="b", dst="a", streams=8, seconds=2.0)
    result = selectors.stream_comparison(protocol="https", window="20d")
    assert result["protocol"] == "https" and result["window"] == "20d"
    ab, ba = result["pairs"]
    assert (ab["src"], ab["dst"], ab["multi_streams"]) == ("a", "b", 8)
    assert ab["single_gbps"] == pytest.approx(11 * GIB_BITS / 8.0 / 1e9)
    assert ab["ratio"] == pytest.approx(4.0)
    assert (ba["single_gbps"], ba["ratio"]) == (None, None)


def test_latest_window_is_the_latest_finished_campaign(ingest, reporter):
    first = reporter.post("/api/v1/campaigns/", {}, format="json").json()["uuid"]
    second = reporter.post("/api/v1/campaigns/", {}, format="json").json()["uuid"]
    ingest(src="a", dst="b", seconds=2.0, campaign=first)
    ingest(src="a", dst="b", seconds=8.0, campaign=second)
    # Before any campaign finished: the latest one with results.
    assert latest_campaign().uuid.hex == second.replace("-", "")
    reporter.patch(f"/api/v1/campaigns/{first}/", {"state": "finished"}, format="json")
    assert str(latest_campaign().uuid) == first
    latest = selectors.stream_comparison(protocol="https", window="latest")
    assert latest["pairs"][0]["multi_gbps"] == pytest.approx(11 * GIB_BITS / 2.0 / 1e9)


def test_latest_campaign_is_none_on_an_empty_database():
    assert latest_campaign() is None
    assert selectors.stream_comparison(protocol="https", window="latest")["pairs"] == []
    assert Campaign.objects.count() == 0


def test_pair_history_is_oldest_first_with_transfers(ingest):
    now = timezone.now()
    older = ingest(src="a", dst="b", started=now - timedelta(days=2), failed=1)
    newer = ingest(src="a", dst="b", started=now - timedelta(hours=2), protocol="gridftp")
    ingest(src="b", dst="a", started=now - timedelta(hours=1))
    history = pair_history(src="a", dst="b")
    assert [h["uuid"] for h in history] == [older["uuid"], newer["uuid"]]
    first = history[0]
    assert (first["succeeded"], first["failed"], first["protocol"]) == (10, 1, "https")
    assert len(first["transfers"]) == 11
    assert first["transfers"][0]["outcome"] == "failure"
    assert first["transfers"][0]["error_class"] == "timeout"
    recent = pair_history(src="a", dst="b", since=now - timedelta(days=1))
    assert [h["uuid"] for h in recent] == [newer["uuid"]]
    assert [h["uuid"] for h in pair_history(src="a", dst="b", limit=1)] == [newer["uuid"]]
    assert pair_history(src="a", dst="nobody") == []


def test_latency_and_stream_rows_equal_the_ones_computed_by_hand(ingest, reporter):
    """The latency and stream aggregates (ORM, any database) against the same figures summed
    in Python, latest campaign included."""
    campaign = reporter.post("/api/v1/campaigns/", {}, format="json").json()["uuid"]
    for src, dst, streams, seconds in (("a", "b", 8, 2.0), ("a", "b", 1, 8.0), ("b", "c", 4, 3.0)):
        ingest(src=src, dst=dst, streams=streams, seconds=seconds)
        ingest(src=src, dst=dst, streams=streams, seconds=seconds * 2, campaign=campaign)
    ingest(src="c", dst="a", protocol="gridftp", rtt_ms=None, seconds=5.0, campaign=campaign)
    ingest(src="c", dst="b", failed=11, campaign=campaign)  # no throughput: left out
    for window in ("latest", "24h"):
        if window == "latest":  # before and after a campaign finished
            unfinished = parse_window(window)
            assert approx_rows(sorted(selectors._stream_rows(unfinished, "https"))) == (
                approx_rows(reference_stream_rows(window, "https"))
            )
            reporter.patch(f"/api/v1/campaigns/{campaign}/", {"state": "finished"}, format="json")
        parsed = parse_window(window)
        for protocol in (None, "https", "gridftp"):
            for streams in (None, 8, 1):
                found = approx_rows(sorted(selectors._latency_rows(parsed, protocol, streams)))
                assert found == approx_rows(reference_latency_rows(window, protocol, streams))
            if protocol:
                found = approx_rows(sorted(selectors._stream_rows(parsed, protocol)))
                assert found == approx_rows(reference_stream_rows(window, protocol))
        assert len(selectors._latency_rows(parsed, None, None)) == 3  # per pair and protocol
