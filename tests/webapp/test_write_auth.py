"""Every write endpoint refuses a request without a token or with a wrong one, and nothing is
written. The endpoints are read off the URL configuration (DRF's enumeration, which the OpenAPI
document is made from, widened to every route outside the admin), so a new one is tested too."""

from __future__ import annotations

import json

import pytest
from django.apps import apps
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.schemas.generators import EndpointEnumerator, is_api_view
from rest_framework.test import APIClient

from tests.support.webapp_payloads import baseline, payload, prelim_run
from tests.webapp.site_payloads import lookup

WRITES = ("POST", "PUT", "PATCH", "DELETE")


class EveryRoute(EndpointEnumerator):
    """Every route but the admin's (its own login: tests/webapp/test_admin.py)."""

    def should_include_endpoint(self, path: str, callback) -> bool:
        return not path.startswith("/admin/") and "{format}" not in path

    def get_allowed_methods(self, callback) -> list[str]:
        if is_api_view(callback):
            return super().get_allowed_methods(callback)
        return list(WRITES)  # what a Django view takes cannot be read off it: try every write


ROUTES = [
    (method, path, view)
    for path, method, view in EveryRoute().get_api_endpoints()
    if method in WRITES
]

# What a client that may not write might send; a token of a user who may not write is added
# by the test (it needs the database).
NO_RIGHT_TOKEN = {
    "no token": {},
    "an unknown token": {"HTTP_AUTHORIZATION": "Token " + "0123456789abcdef" * 2 + "01234567"},
    "a token header without a token": {"HTTP_AUTHORIZATION": "Token"},
    "a token of another scheme": {"HTTP_AUTHORIZATION": "Bearer 0123456789abcdef"},
}


def test_the_routes_hold_every_write_the_api_documents(client):
    document = client.get("/api/schema/?format=json").json()
    documented = {
        (method.upper(), path)
        for path, operations in document["paths"].items()
        for method in operations
        if method.upper() in WRITES
    }
    found = {(method, path) for method, path, view in ROUTES if is_api_view(view)}
    assert documented and documented <= found


def everything() -> dict[str, list]:
    """Every row of every table (the test database holds a few)."""
    return {
        model._meta.label: list(model._base_manager.order_by("pk").values_list())
        for model in apps.get_models(include_auto_created=True)
    }


def concrete(path: str, view) -> str:
    """`path` with its {parameters} filled: a stored object's key where the view looks one up
    (so a write would find it), else a node's name."""
    queryset = getattr(getattr(view, "cls", None), "queryset", None)
    for name in ("uuid", "name", "id", "src", "row", "dst", "col", "check"):
        value = "node-b" if name in ("dst", "col") else "node-a"
        if queryset is not None and name == view.cls.lookup_field:
            value = str(getattr(queryset.model.objects.order_by("pk").first(), name))
        path = path.replace("{" + name + "}", value)
    assert "{" not in path, f"no value for a parameter of {path}"
    return path


@pytest.fixture
def reader_token(reporter, django_user_model) -> str:
    """One object of each kind for the writes to aim at, and the token of a user who may
    read but not write."""
    for url, body in (
        ("/api/v1/measurements/", payload(campaign="6f1c5a52-2222-4c36-9a3e-7c0ae2f6f5a1")),
        ("/api/v1/baselines/", baseline()),
        ("/api/v1/prelim-runs/", prelim_run()),
        ("/api/v1/lookups/", lookup()),
    ):
        assert reporter.post(url, body, format="json").status_code == 201
    reader = django_user_model.objects.create_user(username="reader", password="not-a-writer")
    return Token.objects.create(user=reader).key


def refused_by_a_page(response) -> bool:
    """A page's answer to a write: 401/403, 405 (it takes none), or the login page (a form's
    way of asking who you are)."""
    login = reverse("admin:login")
    return response.status_code in (401, 403, 405) or (
        response.status_code == 302 and response["Location"].startswith(login)
    )


@pytest.mark.django_db
@pytest.mark.parametrize(("method", "path", "view"), ROUTES, ids=[f"{m} {p}" for m, p, _ in ROUTES])
def test_a_write_without_a_writers_token_is_refused_and_writes_nothing(
    method, path, view, reader_token
):
    url = concrete(path, view)
    body = None if method == "DELETE" else json.dumps(payload())
    tries = {**NO_RIGHT_TOKEN, "a reader's token": {"HTTP_AUTHORIZATION": f"Token {reader_token}"}}
    before = everything()
    for who, headers in tries.items():
        response = APIClient().generic(
            method, url, body, content_type="application/json", **headers
        )
        what = (who, response.status_code, response.content[:200])
        if not is_api_view(view):
            assert refused_by_a_page(response), what
        elif who == "a reader's token":
            assert response.status_code == 403, what
        else:  # DRF's answer to no credentials or wrong ones, with its challenge
            assert response.status_code == 401 and response["WWW-Authenticate"] == "Token", what
    assert everything() == before
