"""The streams and latency pages' note on the lab's TCP buffer: shown when one stream's
ceiling (buffer x 8 / RTT, times the measurement's K x streams) is below the link or below
what more streams reached, naming the pairs, buffer and RTTs; absent when the buffer is
unknown or large enough."""

import pytest

from tests.support.webapp_payloads import payload
from webapp.results.selectors.buffer_limits import (
    BELOW_LINK,
    BELOW_MORE_STREAMS,
    buffer_limits,
    stream_ceiling_gbps,
)

pytestmark = pytest.mark.django_db
GIB_BITS = 2**30 * 8
KIB, MIB = 2**10, 2**20
NOTE = "The lab's TCP buffer, not the protocol, limits"
# Three pairs of a 2 Gbit/s lab, as the demo's WAN spreads them.
RTTS = {("a", "b"): 10.0, ("a", "c"): 50.0, ("b", "c"): 90.0}


@pytest.fixture
def measure(reporter):
    """POST one measurement of 11 transfers reading `gbps`, with the pair's TCP buffer and
    the nodes' link capacity when given."""

    def post(*, src, dst, streams, gbps, buffer=None, link=2.0, k=11, protocol="https"):
        body = payload(
            src=src, dst=dst, streams=streams, k=k, seconds=k * GIB_BITS / (gbps * 1e9),
            rtt_ms=RTTS[(src, dst)], protocol=protocol,
        )  # fmt: skip
        if buffer is not None:
            body["tcp_buffer_bytes"] = buffer
        if link is not None:
            body |= {"src_link_gbps": link, "dst_link_gbps": link}
        response = reporter.post("/api/v1/measurements/", body, format="json")
        assert response.status_code == 201, response.content

    return post


def mesh(measure, buffer, link=2.0, single=(1.5, 0.8, 0.45), multi=(1.9, 1.8, 1.7)):
    for (src, dst), one, many in zip(RTTS, single, multi, strict=True):
        measure(src=src, dst=dst, streams=1, gbps=one, buffer=buffer, link=link)
        measure(src=src, dst=dst, streams=8, gbps=many, buffer=buffer, link=link)


def test_one_streams_ceiling_is_the_buffer_over_the_rtt():
    assert stream_ceiling_gbps(512 * KIB, 90.0) == pytest.approx(0.0466, abs=1e-4)
    assert stream_ceiling_gbps(64 * MIB, 91.0) == pytest.approx(5.90, abs=0.01)
    assert stream_ceiling_gbps(None, 90.0) is None
    assert stream_ceiling_gbps(512 * KIB, None) is None
    assert stream_ceiling_gbps(512 * KIB, 0.0) is None


def test_a_small_buffer_limits_the_far_pairs_single_stream_points(client, measure):
    mesh(measure, buffer=512 * KIB)
    found = buffer_limits(streams=1, window="20d")
    assert found["checked"] == 3
    # 10 ms: 11 x 419 Mbit/s = 4.6 Gbit/s, above the link and the 1.9 of 8 streams
    assert [(p["src"], p["dst"]) for p in found["pairs"]] == [("a", "c"), ("b", "c")]
    far = found["pairs"][1]
    assert far["ceiling_gbps"] == pytest.approx(11 * 0.0466, abs=1e-3)
    assert far["below"] == [BELOW_LINK, BELOW_MORE_STREAMS]
    assert (far["link_gbps"], far["more_streams_gbps"]) == (2.0, pytest.approx(1.7))

    html = client.get("/plots/streams/").content.decode()
    assert NOTE + " the single-stream points of 2 of 3 pairs." in html
    assert "84 Mbit/s with a 0.5 MiB buffer at 50\u201390 ms" in html.replace("47\u2013", "")
    assert "47\u201384 Mbit/s" in html
    assert "11 concurrent transfers of 1 stream each move at most 11 times that" in html
    assert "below the link capacity or what the same pair reached with more streams" in html
    assert "more streams win there by construction" in html
    assert "<code>tpcbench lab up --tcp-buffer auto</code>" in html
    assert "docs/reproduce.md" in html
    # The latency page: at 8 streams 88 x 47 Mbit/s = 4.1 Gbit/s, above the link; at 1, not.
    assert NOTE not in client.get("/plots/latency/?streams=8").content.decode()
    latency = client.get("/plots/latency/?streams=1").content.decode()
    assert NOTE + " the single-stream points of 2 of 3 pairs." in latency
    assert "the buffer's slope, not the protocol's" in latency


def test_a_tiny_buffer_limits_the_eight_stream_points_too(client, measure):
    mesh(measure, buffer=64 * KIB)  # 88 streams x 5.8 Mbit/s at 90 ms: 0.51 Gbit/s
    html = client.get("/plots/latency/?streams=8").content.decode()
    assert NOTE + " the 8-stream points of 2 of 3 pairs." in html
    assert "11 concurrent transfers of 8 streams each move at most 88 times that" in html
    assert "below the link capacity:" in html


def test_without_a_known_link_more_streams_are_the_bound(client, measure):
    mesh(measure, buffer=512 * KIB, link=None)
    html = client.get("/plots/streams/?protocol=https").content.decode()
    assert NOTE + " the single-stream points of 2 of 3 pairs." in html
    assert "below what the same pair reached with more streams:" in html
    assert "link capacity" not in html


@pytest.mark.parametrize("buffer", [None, 64 * MIB], ids=["unknown", "large enough"])
def test_no_note_when_the_buffer_is_unknown_or_large_enough(client, measure, buffer):
    mesh(measure, buffer=buffer)
    assert buffer_limits(streams=1, window="20d")["pairs"] == []
    for url in ("/plots/streams/", "/plots/latency/?streams=1", "/plots/latency/?streams=8"):
        html = client.get(url).content.decode()
        assert "streams-figure" in html or "latency-figure" in html, url
        assert NOTE not in html and 'id="buffer-note"' not in html, url


def test_the_note_counts_pairs_of_the_protocol_shown(client, measure):
    mesh(measure, buffer=64 * MIB)
    measure(src="b", dst="c", streams=1, gbps=0.4, buffer=512 * KIB, protocol="gridftp")
    measure(src="b", dst="c", streams=8, gbps=1.7, buffer=512 * KIB, protocol="gridftp")
    assert NOTE not in client.get("/plots/streams/?protocol=https").content.decode()
    gridftp = client.get("/plots/streams/?protocol=gridftp").content.decode()
    assert NOTE + " the single-stream points of 1 of 1 pair." in gridftp
    assert "47 Mbit/s with a 0.5 MiB buffer at 90 ms" in gridftp
    every = client.get("/plots/streams/").content.decode()
    assert NOTE + " the single-stream points of 1 of 3 pairs." in every
