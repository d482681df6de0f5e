"""Error answers: the API's paths answer JSON, as DRF does for what reaches a view, so a URL no
route matches (/api/v1/campaigns/a.b/) is a 404 a client can read, not an HTML page; and a path
with a NUL names nothing (PostgreSQL text cannot hold one), so no view looks it up."""

from collections.abc import Callable

from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.views.defaults import page_not_found

API_PREFIXES = ("/api/", "/maddash/")


def not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    if request.path.startswith(API_PREFIXES):
        return JsonResponse({"detail": "Not found."}, status=404)
    return page_not_found(request, exception)


class NulPathMiddleware:
    """/api/v1/nodes/a%00b/ is a 404, not the DataError a lookup by that name would raise."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if "\x00" in request.path:
            raise Http404("No such path.")
        return self.get_response(request)
