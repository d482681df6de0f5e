"""`/healthz`: is this webapp process up and is its database reachable?

Answered before any other middleware, so a kubelet probe (which addresses the pod by its IP,
a name no ALLOWED_HOSTS lists) or a probe without credentials (TPCBENCH_ANONYMOUS_READS=false)
gets the truth instead of 400 or 401. It says nothing about the data, only "ok" or why not.
"""

from collections.abc import Callable

from django.db import DatabaseError, connection
from django.http import HttpRequest, HttpResponse

HEALTH_PATH = "/healthz"


def database_problem() -> str | None:
    """None when a trivial query runs, else the database's complaint in one line."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except DatabaseError as exc:
        first_line = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        return f"database unreachable: {first_line}"
    return None


class HealthCheckMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path != HEALTH_PATH or request.method not in ("GET", "HEAD"):
            return self.get_response(request)
        problem = database_problem()
        body = "ok\n" if problem is None else problem + "\n"
        return HttpResponse(body, status=200 if problem is None else 503, content_type="text/plain")
