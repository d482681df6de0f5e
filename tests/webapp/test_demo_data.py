"""load_demo_data: labelled synthetic history that the grid and plots can show."""

import pytest
from django.core.management import call_command

from webapp.results.api.maddash import grid_document
from webapp.results.grid import limits as grid_limits
from webapp.results.grid.queries import grid_bands
from webapp.results.models import Campaign, Measurement, Node, Transfer
from webapp.results.selectors import aggregates as selectors

pytestmark = pytest.mark.django_db


def test_load_demo_data_fills_a_labelled_mesh(capsys):
    call_command("load_demo_data", "--nodes", "6", "--days", "1")
    assert "SYNTHETIC" in capsys.readouterr().out
    assert set(Node.objects.values_list("site", flat=True)) == {"synthetic"}
    assert Campaign.objects.filter(state="finished").count() == 2
    # 30 ordered pairs x 2 protocols x 2 stream settings x 2 campaigns
    assert Measurement.objects.count() == 30 * 2 * 2 * 2
    assert Transfer.objects.count() == Measurement.objects.count() * 11
    grid = grid_document(grid_bands(name="https"))
    assert grid["checkNames"] == ["8 streams", "1 stream"]
    assert all(
        check["status"] != grid_limits.NOT_RUN
        for row in grid["grid"]
        for cell in row
        if cell
        for check in cell
    )
    comparison = selectors.stream_comparison(protocol="https", window="20d")
    assert len(comparison["pairs"]) == 30
    assert all(p["ratio"] and p["ratio"] > 1 for p in comparison["pairs"])
    fit = selectors.throughput_vs_latency(protocol="https", streams=8, window="20d")["fits"]
    assert fit["https"]["n"] == 30 and fit["https"]["slope_gbps_per_ms"] < 0


def test_load_demo_data_twice_replaces_instead_of_doubling():
    call_command("load_demo_data", "--nodes", "2", "--days", "1")
    call_command("load_demo_data", "--nodes", "2", "--days", "1")
    assert Measurement.objects.count() == 2 * 2 * 2 * 2
