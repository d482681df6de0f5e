"""The paper's findings (`results.selectors.paper_findings`) on constructed measurements whose
answer is known: the figure, its bootstrap interval, the number of cells and the verdict."""

from __future__ import annotations

import uuid as uuid_lib
from datetime import timedelta
from itertools import permutations

import numpy as np
import pytest
from django.utils import timezone

from tests.support.webapp_payloads import payload
from webapp.results import bootstrap
from webapp.results.selectors.paper_findings import (
    AGREES,
    AT_LEAST,
    DISAGREES,
    EQUAL,
    TOO_FEW,
    Finding,
    paper_findings,
)

pytestmark = pytest.mark.django_db
NODES = ("n1", "n2", "n3", "n4")
PAIRS = list(permutations(NODES, 2))  # 12 ordered pairs
SIZE = 1_000_000  # bytes: K x S x 8 / d is exact enough for durations in whole microseconds
K = 2


@pytest.fixture
def send(reporter):
    """POST measurements, each (src, dst, protocol, streams, seconds per transfer, rtt_ms),
    in one campaign (or none), as one bulk list."""

    def post(items: list[tuple], campaign: str | None = "new") -> str | None:
        campaign = str(uuid_lib.uuid4()) if campaign == "new" else campaign
        started = timezone.now() - timedelta(hours=1)
        bodies = [
            payload(
                src=src, dst=dst, protocol=protocol, streams=streams, k=K, seconds=seconds,
                rtt_ms=rtt, file_size=SIZE, campaign=campaign, started=started,
            )
            for src, dst, protocol, streams, seconds, rtt in items
        ]  # fmt: skip
        response = reporter.post("/api/v1/measurements/", bodies, format="json")
        assert response.status_code == 201, response.content
        return campaign

    return post


def rtt(pair: tuple[str, str]) -> float:
    return 10.0 + 7.0 * PAIRS.index(pair)


def finding(key: str, campaigns: tuple[str, ...] = ()) -> Finding:
    return next(f for f in paper_findings(campaigns).findings if f.key == key)


# --- 1. HTTPS-TPC versus GridFTP ------------------------------------------------------------


def protocols(https_over_gridftp: float, pairs=PAIRS) -> list[tuple]:
    """Every pair at 8 and 1 streams: GridFTP's transfers last 1 + 0.5 i s, HTTPS's the
    given ratio shorter (so HTTPS is that many times faster)."""
    items = []
    for i, pair in enumerate(pairs):
        for streams in (8, 1):
            gridftp = 1.0 + 0.5 * i + (0.25 if streams == 1 else 0.0)
            items.append((*pair, "gridftp", streams, gridftp, rtt(pair)))
            items.append((*pair, "https", streams, gridftp / https_over_gridftp, rtt(pair)))
    return items


def test_https_exactly_1_2x_gridftp_everywhere_agrees_within_a_narrow_interval(send):
    send(protocols(1.2))
    found = finding("https-vs-gridftp")
    assert found.cells == len(PAIRS) * 2
    assert found.ours == pytest.approx(1.2, rel=1e-5)
    assert found.ci_low <= 1.2 + 1e-6 and found.ci_high >= 1.2 - 1e-6
    assert found.ci_high - found.ci_low < 1e-3
    assert (found.paper, found.verdict) == (1.2, AGREES)


def test_gridftp_1_2x_https_disagrees(send):
    send(protocols(1 / 1.2))
    found = finding("https-vs-gridftp")
    assert found.ours == pytest.approx(1 / 1.2, rel=1e-5)
    assert found.ci_high < 1.2
    assert found.verdict == DISAGREES


def test_noisy_cells_give_an_interval_around_the_mean_ratio(send):
    items = protocols(1.2)
    # every other HTTPS transfer 10% slower: the ratio spreads around ~1.14
    items = [
        (*item[:4], item[4] * (1.1 if index % 4 == 1 else 1.0), item[5])
        for index, item in enumerate(items)
    ]
    send(items)
    found = finding("https-vs-gridftp")
    assert found.ci_low < found.ours < found.ci_high
    assert 1.1 < found.ours < 1.2
    assert 0.005 < found.ci_high - found.ci_low < 0.2


def test_too_few_cells_or_none_outside_a_campaign(send):
    send(protocols(1.2, pairs=PAIRS[:1]))  # one pair at 8 and 1 streams: 2 cells
    found = finding("https-vs-gridftp")
    assert (found.cells, found.ours, found.verdict) == (2, None, TOO_FEW)
    send(protocols(1.2, pairs=PAIRS[1:4]), campaign=None)  # no campaign: no cell
    assert finding("https-vs-gridftp").cells == 2


def test_cells_are_within_a_campaign_and_campaigns_narrow_them(send):
    first = send([item for item in protocols(1.2) if item[2] == "https"])
    second = send([item for item in protocols(1.2) if item[2] == "gridftp"])
    assert finding("https-vs-gridftp").cells == 0  # never both in one campaign
    both = send(protocols(0.5))
    assert finding("https-vs-gridftp").ours == pytest.approx(0.5, rel=1e-5)
    only = finding("https-vs-gridftp", campaigns=(first, second))
    assert (only.cells, only.verdict) == (0, TOO_FEW)
    assert finding("https-vs-gridftp", campaigns=(both,)).cells == 24


# --- 2. One stream versus eight ----------------------------------------------------------------


def streams(single_over_multi: float, protocol: str = "https") -> list[tuple]:
    items = []
    for i, pair in enumerate(PAIRS):
        multi = 1.0 + 0.5 * i
        items.append((*pair, protocol, 8, multi, rtt(pair)))
        items.append((*pair, protocol, 1, multi / single_over_multi, rtt(pair)))
    return items


def test_one_stream_faster_than_eight_agrees(send):
    send(streams(1.1))
    found = finding("single-vs-multi-https")
    assert (found.cells, found.rule) == (12, AT_LEAST)
    assert found.ours == pytest.approx(1.1, rel=1e-5)
    assert found.verdict == AGREES
    assert finding("single-vs-multi-gridftp").verdict == TOO_FEW  # no GridFTP measured


def test_one_stream_at_half_of_eight_disagrees(send):
    send(streams(0.5, "gridftp"))
    found = finding("single-vs-multi-gridftp")
    assert found.ours == pytest.approx(0.5, rel=1e-5)
    assert found.ci_high < 1
    assert found.verdict == DISAGREES


# --- 3. Latency sensitivity --------------------------------------------------------------------


def latency(https_seconds, gridftp_seconds) -> list[tuple]:
    """Every pair at 8 streams, each protocol's transfer lasting f(RTT) seconds."""
    return [
        item
        for pair in PAIRS
        for item in (
            (*pair, "https", 8, https_seconds(rtt(pair)), rtt(pair)),
            (*pair, "gridftp", 8, gridftp_seconds(rtt(pair)), rtt(pair)),
        )
    ]


def test_proportional_protocols_have_the_same_relative_slope(send):
    # GridFTP's transfers 1.25x as long: it is 0.8x as fast at every RTT
    send(latency(lambda r: 1 + r / 100, lambda r: 1.25 * (1 + r / 100)))
    found = finding("latency-slope")
    assert (found.cells, found.unit) == (12, "pairs")
    assert found.ours == pytest.approx(0.0, abs=1e-6)  # percentage points
    assert found.scale == "pp"
    assert found.verdict == AGREES
    https, gridftp = found.details["https"], found.details["gridftp"]
    assert https["relative_per_10ms"]["value"] < 0  # both lose with RTT ...
    assert https["relative_per_10ms"]["value"] == pytest.approx(
        gridftp["relative_per_10ms"]["value"], rel=1e-5
    )  # ... the same fraction of their own mean
    ratio = https["slope_gbps_per_ms"]["value"] / gridftp["slope_gbps_per_ms"]["value"]
    assert ratio == pytest.approx(1.25, rel=1e-5)  # in Gbit/s per ms HTTPS loses more
    assert found.details["absolute_ratio"]["value"] == pytest.approx(1.25, rel=1e-5)


def test_a_latency_blind_protocol_disagrees(send):
    # HTTPS slows with RTT; GridFTP hardly
    send(latency(lambda r: 1 + r / 20, lambda r: 2 + r / 2000))
    found = finding("latency-slope")
    assert found.ours < -1  # HTTPS loses more percent of its mean per 10 ms
    assert found.ci_high < 0
    assert found.verdict == DISAGREES


def test_one_rtt_has_no_slope(send):
    send([(*pair, protocol, 8, 1.0, 20.0) for pair in PAIRS for protocol in ("https", "gridftp")])
    found = finding("latency-slope")
    assert (found.cells, found.ours, found.verdict) == (12, None, TOO_FEW)


# --- the rules and the statistics, without a database -----------------------------------------


@pytest.mark.parametrize(
    ("rule", "low", "high", "verdict"),
    [
        (EQUAL, 1.1, 1.3, AGREES),
        (EQUAL, 1.2, 1.2, AGREES),
        (EQUAL, 0.8, 1.1, DISAGREES),
        (EQUAL, 1.25, 1.4, DISAGREES),
        (AT_LEAST, 0.9, 1.05, AGREES),  # reaches the paper's value
        (AT_LEAST, 1.1, 1.3, AGREES),  # on the paper's side
        (AT_LEAST, 0.6, 0.99, DISAGREES),
    ],
)
def test_verdicts(rule, low, high, verdict):
    paper = 1.2 if rule == EQUAL else 1.0
    judged = Finding(1, "k", "t", paper, "", rule, ours=(low + high) / 2, ci_low=low,
                     ci_high=high, cells=3).judge()  # fmt: skip
    assert judged.verdict == verdict
    assert Finding(1, "k", "t", paper, "", rule, ours=1.0, ci_low=low, ci_high=high,
                   cells=2).judge().verdict == TOO_FEW  # fmt: skip


def test_the_statistics():
    x = np.array([10.0, 20.0, 30.0, 40.0])
    assert bootstrap.slope(x, 5 - 0.1 * x) == pytest.approx(-0.1)
    assert bootstrap.relative_slope(x, 5 - 0.1 * x) == pytest.approx(-0.1 / 2.5)
    assert np.isnan(bootstrap.slope(np.full(4, 3.0), x))
    assert bootstrap.ratio_of_means(np.array([2.0, 4.0]), np.array([1.0, 1.0])) == 3.0
    value, low, high = bootstrap.estimate(bootstrap.ratio_of_means, ([1.0, 2.0], [1.0, 1.0]))
    assert low <= value == 1.5 <= high
    assert bootstrap.estimate(bootstrap.ratio_of_means, ([1.0], [2.0])) == (0.5, None, None)
    assert bootstrap.estimate(bootstrap.slope, ([3.0, 3.0], [1.0, 2.0])) == (None, None, None)
    # the same data, the same interval (a fixed seed)
    data = ([1.0, 2.0, 4.0, 3.0, 5.0], [1.1, 1.9, 3.5, 3.2, 4.0])
    assert bootstrap.estimate(bootstrap.ratio_of_means, data) == bootstrap.estimate(
        bootstrap.ratio_of_means, data
    )
