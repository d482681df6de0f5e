"""Reads anonymous unless TPCBENCH_ANONYMOUS_READS=false; writes need a user with the model perm."""

from django.conf import settings
from rest_framework.permissions import SAFE_METHODS, BasePermission

_ACTIONS = {"POST": "add", "PUT": "change", "PATCH": "change", "DELETE": "delete"}


class ReadAnonymousWriteWithPermission(BasePermission):
    """GET/HEAD/OPTIONS: anyone (or any authenticated user); writes: results.<action>_<model>."""

    def has_permission(self, request, view) -> bool:
        user = request.user
        authenticated = bool(user and user.is_authenticated)
        if request.method in SAFE_METHODS:
            return settings.TPCBENCH_ANONYMOUS_READS or authenticated
        if not authenticated:
            return False  # DRF answers 401 with the Token challenge
        action = _ACTIONS.get(request.method)
        if action is None:
            return True  # TRACE and friends: let the view answer 405
        queryset = getattr(view, "queryset", None)
        if queryset is None:
            return False
        meta = queryset.model._meta
        return user.has_perm(f"{meta.app_label}.{action}_{meta.model_name}")
