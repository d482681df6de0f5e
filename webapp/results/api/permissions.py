"""Who may do what through the API: reads are anonymous unless TPCBENCH_ANONYMOUS_READS=false;
writes need a user with the model's permission, which the reporters' group has (the
permissions to send measurements, campaigns' progress, baselines, preliminary runs and
redirector lookups, and to acknowledge alerts), and
reporters authenticate with their API token (one each)."""

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


REPORTERS_GROUP = "tpcbench-reporters"
REPORTER_PERMISSIONS = [
    "add_measurement", "add_campaign", "change_campaign", "add_baseline", "add_prelimrun",
    "add_lookup", "change_alert",
]  # fmt: skip


def reporters_group_sync(**_: object):
    """The reporters' group with exactly REPORTER_PERMISSIONS (also run after each migrate,
    so reporters made by an older version may send what a newer one accepts)."""
    from django.contrib.auth.models import Group, Permission

    group, _ = Group.objects.get_or_create(name=REPORTERS_GROUP)
    group.permissions.set(
        Permission.objects.filter(
            content_type__app_label="results", codename__in=REPORTER_PERMISSIONS
        )
    )
    return group


def reporter_ensure(*, name: str):
    """A user allowed to report measurements and run campaigns (no password: token only)."""
    from django.contrib.auth import get_user_model

    group = reporters_group_sync()
    user, created = get_user_model().objects.get_or_create(username=name)
    if created:
        user.set_unusable_password()
        user.save(update_fields=["password"])
    user.groups.add(group)
    return user


def api_token_create(*, name: str) -> str:
    """A new API token for reporter `name` (any earlier token of that user stops working)."""
    from rest_framework.authtoken.models import Token

    user = reporter_ensure(name=name)
    Token.objects.filter(user=user).delete()
    return Token.objects.create(user=user).key


def api_token_ensure(*, name: str, key: str) -> bool:
    """Make `key` the token of reporter `name` (a token from a Secret); True if it changed."""
    from rest_framework.authtoken.models import Token

    if not 20 <= len(key) <= 40 or not key.isascii() or not key.isalnum():
        raise ValueError("an API token is 20 to 40 ASCII letters and digits")
    user = reporter_ensure(name=name)
    if Token.objects.filter(user=user, key=key).exists():
        return False
    if Token.objects.filter(key=key).exclude(user=user).exists():
        raise ValueError("that token already belongs to another user")
    Token.objects.filter(user=user).delete()
    Token.objects.create(user=user, key=key)
    return True
