"""The pair page's "Of link" is honest: when the paper's throughput (K x S x 8 / mean
duration) reads above what the link carried, the page says so in place, shows the makespan's
fraction beside it and explains why; otherwise it says nothing more."""

from datetime import timedelta

import pytest
from django.utils import timezone

from tests.support.webapp_payloads import baseline, payload

pytestmark = pytest.mark.django_db
GIB_BITS = 2**30 * 8
EXPLANATION = "Above 100% of the link?"


@pytest.fixture
def measured(reporter):
    """POST a baseline of `link_gbps`, then one 4-transfer measurement of 1 GiB files, each
    transfer 2 s long, either one after another (`overlap=False`: the paper's figure is 4x
    the makespan) or all at once; returns the page's HTML."""

    def post(*, link_gbps: float, overlap: bool) -> str:
        now = timezone.now().replace(microsecond=0)
        body = baseline(started=now - timedelta(hours=2), throughput_gbps=link_gbps)
        assert reporter.post("/api/v1/baselines/", body, format="json").status_code == 201
        started = now - timedelta(hours=1)
        sent = payload(k=4, seconds=2.0, started=started)
        for index, transfer in enumerate(sent["transfers"]):
            begin = started + timedelta(seconds=0 if overlap else 2 * index)
            transfer["start"] = begin.isoformat()
            transfer["end"] = (begin + timedelta(seconds=2)).isoformat()
        sent["finished"] = (started + timedelta(seconds=2 if overlap else 8)).isoformat()
        response = reporter.post("/api/v1/measurements/", sent, format="json")
        assert response.status_code == 201, response.content
        figures = response.json()
        mean_figure = 4 * GIB_BITS / 2 / 1e9  # 17.18 Gbps either way
        assert figures["throughput_gbps"] == pytest.approx(mean_figure)
        makespan = mean_figure if overlap else mean_figure / 4
        assert figures["makespan_gbps"] == pytest.approx(makespan)
        page = reporter.get("/pairs/node-a/node-b/")
        assert page.status_code == 200
        return page.content.decode()

    return post


def test_a_paper_figure_above_the_link_is_explained_with_the_makespan_beside(measured):
    html = measured(link_gbps=10.0, overlap=False)  # paper 17.18 (172%), makespan 4.29 (43%)
    assert "172% of 10.00" in html
    assert '<a href="#above-link">above the link</a>: makespan 43%' in html
    assert EXPLANATION in html and 'id="above-link"' in html
    assert "a transfer that ran alone part of the time is fast" in html
    assert "last end \u2212 first start" in html
    assert "the link baseline carried less than these transfers did" not in html


def test_a_makespan_above_the_link_too_says_the_baseline_did_not_fill_it(measured):
    html = measured(link_gbps=3.0, overlap=False)  # makespan 4.29: 143% of 3.00
    assert "573% of 3.00" in html and "makespan 143%" in html
    assert "the link baseline carried less than these transfers did" in html
    assert "<code>tpcbench baseline</code>" in html


def test_a_figure_within_the_link_reads_plainly(measured):
    html = measured(link_gbps=20.0, overlap=True)  # 17.18 of 20: 86%, makespan the same
    assert "86% of 20.00" in html
    assert "above the link" not in html and EXPLANATION not in html
    assert 'id="above-link"' not in html
