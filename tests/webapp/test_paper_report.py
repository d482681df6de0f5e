"""`python webapp/manage.py paper_report`: the three comparisons printed and as JSON, the
figures as real PNG and SVG files (drawn by Chromium through kaleido: marker `browser`), the
arguments checked, and Figure 5's pair chosen."""

from __future__ import annotations

import io
import json
import struct
import uuid as uuid_lib
import xml.etree.ElementTree as ET
from datetime import timedelta
from itertools import permutations

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from tests.support.webapp_payloads import baseline, payload, point, prelim_run
from webapp.results.selectors.pairs import busiest_pair

pytestmark = pytest.mark.django_db
NODES = ("alpha", "bravo", "charlie")
RTTS = {pair: 10.0 + 20.0 * i for i, pair in enumerate(permutations(NODES, 2))}
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
STEMS = ("fig3-concurrency", "fig4-filesize", "fig5-pair-charlie-bravo", "fig7-latency",
         "fig8-streams")  # fmt: skip


def report(*args: str) -> str:
    out = io.StringIO()
    call_command("paper_report", *args, stdout=out)
    return out.getvalue()


@pytest.fixture
def campaign(reporter) -> str:
    """One campaign over every ordered pair of three nodes: both protocols, 8 and 1 streams,
    HTTPS a little faster, one stream slower, throughput falling with RTT; link baselines;
    a concurrency and a file size run."""
    uuid = str(uuid_lib.uuid4())
    started = timezone.now() - timedelta(hours=1)
    bodies = []
    for (src, dst), rtt in RTTS.items():
        for protocol, slower in (("https", 1.0), ("gridftp", 1.15)):
            for streams, single in ((8, 1.0), (1, 1.6)):
                seconds = (1 + rtt / 50) * slower * single
                bodies.append(
                    payload(src=src, dst=dst, protocol=protocol, streams=streams, k=3,
                            seconds=seconds, rtt_ms=rtt, campaign=uuid, started=started)
                )  # fmt: skip
        body = baseline(src=src, dst=dst, started=started - timedelta(minutes=1))
        assert reporter.post("/api/v1/baselines/", body, format="json").status_code == 201
    assert reporter.post("/api/v1/measurements/", bodies, format="json").status_code == 201
    sizes = [point("https", c, 3.0 * c, size) for size in (2**30, 2**31) for c in (1, 2)]
    for run in (prelim_run(), prelim_run("filesize", sizes)):
        assert reporter.post("/api/v1/prelim-runs/", run, format="json").status_code == 201
    return uuid


def test_an_empty_database_gives_too_few_data_and_no_figures(tmp_path):
    document = tmp_path / "findings.json"
    text = report("--out", str(tmp_path / "figures"), "--json", str(document))
    assert "0 measurements with a throughput in 0 campaigns" in text
    lines = [line for line in text.splitlines() if "paper:" in line]
    assert [line.split()[0] for line in lines] == ["1.", "2.", "2.", "3."]
    assert all(line.rstrip().endswith("too few data") for line in lines)
    assert "ours: - (0 cells; at least 3 needed)" in lines[0]
    for stem in ("fig3-concurrency", "fig4-filesize", "fig5-pair", "fig7-latency"):
        assert f"skipped {stem}: " in text
    assert "no `tpcbench prelim concurrency` run stored" in text
    found = json.loads(document.read_text())
    assert [f["verdict"] for f in found["findings"]] == ["too few data"] * 4
    assert found["figures"] == [] and len(found["skipped_figures"]) == 5
    assert not (tmp_path / "figures").exists() or not any((tmp_path / "figures").iterdir())


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--campaigns", "not-a-uuid"], "not a uuid: not-a-uuid"),
        (["--campaigns", str(uuid_lib.UUID(int=7))], "no campaign 00000000-"),
        (["--pair", "alpha"], "--pair takes two different node names"),
        (["--pair", "alpha,alpha"], "--pair takes two different node names"),
        (["--pair", "alpha,nowhere"], "no node named nowhere"),
    ],
)
def test_wrong_arguments_say_what_is_wrong(tmp_path, campaign, args, message):
    with pytest.raises(CommandError, match=message):
        report("--out", str(tmp_path), *args)


def test_figure_5_is_of_the_busiest_pair_ties_to_the_largest_rtt(reporter, campaign):
    assert busiest_pair() == ("charlie", "bravo")  # every pair measured 4 times: 110 ms
    extra = payload(src="alpha", dst="bravo", rtt_ms=10.0)
    assert reporter.post("/api/v1/measurements/", extra, format="json").status_code == 201
    assert busiest_pair() == ("alpha", "bravo")
    assert busiest_pair((campaign,)) == ("charlie", "bravo")


@pytest.mark.browser
def test_the_report_prints_the_findings_and_writes_every_figure(tmp_path, campaign):
    out, document = tmp_path / "figures", tmp_path / "findings.json"
    text = report("--out", str(out), "--json", str(document), "--campaigns", campaign)
    lines = {line.split("   ")[0].strip(): line for line in text.splitlines() if "paper:" in line}
    assert set(lines) == {
        "1. HTTPS-TPC vs GridFTP",
        "2. 1 stream vs 8, HTTPS-TPC",
        "2. 1 stream vs 8, GridFTP",
        "3. latency sensitivity, 8 streams",
    }
    first = lines["1. HTTPS-TPC vs GridFTP"]
    assert "paper: HTTPS 1.20x GridFTP" in first and "ours: 1.15x [" in first
    assert "(95% CI, 12 cells)" in first and first.rstrip().endswith("disagrees")
    assert lines["2. 1 stream vs 8, GridFTP"].rstrip().endswith("disagrees")  # 1/1.6 of 8
    assert lines["3. latency sensitivity, 8 streams"].rstrip().endswith("agrees")
    assert "of its mean" in text and "per 10 ms of RTT" in text

    found = json.loads(document.read_text())
    one = found["findings"][0]
    assert (one["paper"], one["cells"], one["verdict"]) == (1.2, 12, "disagrees")
    assert one["ours"] == pytest.approx(1.15, rel=1e-3)
    assert one["ci_low"] <= one["ours"] <= one["ci_high"] < 1.2
    assert found["skipped_figures"] == []
    expected = [str(out / f"{stem}.{suffix}") for stem in STEMS for suffix in ("png", "svg")]
    assert found["figures"] == expected
    for stem in STEMS:
        png = (out / f"{stem}.png").read_bytes()
        assert png.startswith(PNG_SIGNATURE) and len(png) > 10_000, stem
        assert struct.unpack(">II", png[16:24]) == (1000, 600), stem  # IHDR width, height
        svg = ET.parse(out / f"{stem}.svg").getroot()
        assert svg.tag == "{http://www.w3.org/2000/svg}svg", stem
        assert (svg.get("width"), svg.get("height")) == ("1000", "600"), stem
        texts = " ".join(t for t in svg.itertext())
        assert "Figure" in texts, stem
    latency = " ".join(ET.parse(out / "fig7-latency.svg").getroot().itertext())
    assert "round-trip time (ms)" in latency and "https fit" in latency
