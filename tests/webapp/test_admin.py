"""Admin pages of the results app render, and thresholds are edited there with validation."""

import pytest

from webapp.results.models import Measurement, Threshold

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff(client, django_user_model):
    user = django_user_model.objects.create_superuser("admin", "admin@example.org", "pw-12345")
    client.force_login(user)
    return client


def test_changelists_and_a_measurement_page_render(staff, ingest):
    ingest(failed=1)
    for model in ("node", "campaign", "measurement", "threshold"):
        response = staff.get(f"/admin/results/{model}/")
        assert response.status_code == 200, model
    measurement = Measurement.objects.get()
    page = staff.get(f"/admin/results/measurement/{measurement.pk}/change/")
    assert page.status_code == 200
    assert b"timeout talking to node-b" in page.content  # the failed transfer inline


def test_threshold_added_in_admin_and_inverted_limits_refused(staff):
    added = staff.post(
        "/admin/results/threshold/add/",
        {"protocol": "https", "ok_gbps": "40", "warning_gbps": "20"},
    )
    assert added.status_code == 302
    assert Threshold.objects.get().ok_gbps == 40
    inverted = staff.post(
        "/admin/results/threshold/add/",
        {"protocol": "gridftp", "ok_gbps": "5", "warning_gbps": "20"},
    )
    assert inverted.status_code == 200  # the form again, with the constraint's error
    assert Threshold.objects.count() == 1


def test_a_second_grid_wide_threshold_for_a_protocol_is_refused(staff):
    Threshold.objects.create(protocol="https", ok_gbps=40, warning_gbps=20)
    again = staff.post(
        "/admin/results/threshold/add/",
        {"protocol": "https", "ok_gbps": "50", "warning_gbps": "20"},
    )
    assert again.status_code == 200  # NULLS NOT DISTINCT: one grid-wide row per protocol
    assert Threshold.objects.count() == 1
