"""The HTTP-TPC response body parser: perf markers, stripes, and the verdict line."""

from __future__ import annotations

from orchestrator.transfers.perf_markers import PerfMarkerParser


def marker(stripe: int, moved: int, timestamp: int = 1795278851) -> str:
    return (
        f"Perf Marker\nTimestamp: {timestamp}\nStripe Index: {stripe}\n"
        f"Stripe Bytes Transferred: {moved}\nTotal Stripe Count: 2\n"
        "RemoteConnections: tcp:127.0.0.1:19441\nEnd\n"
    )


def test_markers_split_across_chunks_are_assembled_and_stripes_summed() -> None:
    body = marker(0, 100) + marker(1, 50) + marker(0, 300) + "success: Created"
    parser = PerfMarkerParser()
    seen = []
    for i in range(0, len(body), 7):  # chunk boundaries fall inside lines
        seen += parser.feed(body[i : i + 7])
    parser.close()
    assert [(m.stripe_index, m.stripe_bytes) for m in seen] == [(0, 100), (1, 50), (0, 300)]
    assert parser.total_bytes == 350  # latest of stripe 0 (300) + latest of stripe 1 (50)
    assert seen[0].timestamp == 1795278851
    assert parser.verdict == (True, "Created")


def test_failure_line_decides_even_after_markers() -> None:
    parser = PerfMarkerParser()
    parser.feed(marker(0, 10) + "failure: Remote side failed with status code 404")
    parser.close()
    assert parser.verdict == (False, "Remote side failed with status code 404")
    assert parser.total_bytes == 10


def test_body_without_verdict_has_none() -> None:
    parser = PerfMarkerParser()
    parser.feed(marker(0, 10))
    parser.close()
    assert parser.verdict is None
    assert parser.last_line == "End"


def test_malformed_marker_is_skipped_not_fatal() -> None:
    parser = PerfMarkerParser()
    parser.feed("Perf Marker\nStripe Bytes Transferred: lots\nEnd\nsuccess: Created\n")
    parser.close()
    assert parser.markers == []
    assert parser.verdict == (True, "Created")


def test_the_remote_connection_names_the_server_at_the_other_end() -> None:
    parser = PerfMarkerParser()
    parser.feed(marker(0, 100))
    assert parser.remote_connections == ["127.0.0.1:19441"]
    parser.feed(
        marker(0, 200).replace("tcp:127.0.0.1:19441", "tcp:10.99.2.2:1094,tcp:10.99.2.2:1094")
    )
    assert parser.remote_connections == ["10.99.2.2:1094", "10.99.2.2:1094"]
    parser.feed("Perf Marker\nStripe Bytes Transferred: 300\nEnd\n")  # no connections said
    assert parser.remote_connections == ["10.99.2.2:1094", "10.99.2.2:1094"]
