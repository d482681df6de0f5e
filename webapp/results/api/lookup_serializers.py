"""Redirector lookups through the API (issue 23): what the orchestrator posts, validated
strictly (a 400 naming the field), and what the API serves. hops and seconds are the
server's, from the steps: what a client sends for them is ignored, as measurements'
throughput is."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from webapp.results.api.fields import (
    ErrorTextField,
    MomentField,
    NodeNameField,
    ServerField,
    StrictFloatField,
    StrictIntegerField,
    StrictRegexField,
    StrictUUIDField,
)
from webapp.results.api.ingest_serializers import SITE_ERRORS
from webapp.results.choices import (
    LOOKUP_PROTOCOLS,
    SITE_NAME_PATTERN,
    ErrorClass,
    LookupLevel,
    Outcome,
)
from webapp.results.models import Lookup
from webapp.results.models.lookups import LOOKUP_FIELDS

MAX_STEPS = 64  # XrdCl gives up after 16 redirects; a loop is not a lookup
MAX_STEP_SECONDS = 1e5
IGNORED = "Ignored: the server recomputes it from the steps."


class StepSerializer(serializers.Serializer):
    """One request of a lookup: the server asked and how long it took to answer."""

    server = ServerField(help_text="The redirector or data server asked (host:port).")
    seconds = StrictFloatField(
        min_value=0, max_value=MAX_STEP_SECONDS, help_text="Until it answered (s)."
    )


class LookupInSerializer(serializers.Serializer):
    """A lookup as the orchestrator sends it."""

    uuid = StrictUUIDField()
    campaign = StrictUUIDField(allow_null=True, required=False, default=None)
    protocol = serializers.ChoiceField(choices=[(p.value, p.label) for p in LOOKUP_PROTOCOLS])
    entry = NodeNameField(help_text="The redirector first asked (<site>-rdr, regional, global).")
    level = serializers.ChoiceField(
        choices=LookupLevel.choices,
        help_text="local: the entry was the file's own site's redirector; regional, global: "
        "the lookup climbed to that level.",
    )
    site = StrictRegexField(
        SITE_NAME_PATTERN,
        max_length=8,
        error_messages=SITE_ERRORS,
        help_text="The site whose data server holds the file.",
    )
    level_rtt_ms = StrictFloatField(
        min_value=0,
        max_value=1e6,
        allow_null=True,
        required=False,
        default=None,
        help_text="The RTT between the entry redirector and that site (0 or null: no WAN latency).",
    )
    started = MomentField()
    seconds = StrictFloatField(
        min_value=0, allow_null=True, required=False, write_only=True, help_text=IGNORED
    )
    hops = StrictIntegerField(min_value=0, required=False, write_only=True, help_text=IGNORED)
    steps = StepSerializer(
        many=True,
        allow_empty=False,
        max_length=MAX_STEPS,
        help_text="Each request in order; the last is the data server's (on success).",
    )
    data_server = ServerField(
        allow_null=True,
        required=False,
        default=None,
        help_text="The data server that answered (the last step's server); null when none "
        "did. Required on success.",
    )
    outcome = serializers.ChoiceField(choices=Outcome.choices)
    error_class = serializers.ChoiceField(
        choices=ErrorClass.choices, allow_null=True, required=False, default=None
    )
    message = ErrorTextField()

    def validate(self, attrs: dict) -> dict:
        errors = {}
        last = attrs["steps"][-1]["server"]
        server = attrs.get("data_server")
        if server is not None and server != last:
            errors["data_server"] = f"The data server is the last step's server ({last})."
        elif server is None and attrs["outcome"] == Outcome.SUCCESS:
            errors["data_server"] = "A successful lookup names its data server."
        if attrs["outcome"] == Outcome.SUCCESS and attrs.get("error_class"):
            errors["error_class"] = "A successful lookup has no error_class."
        if errors:
            raise serializers.ValidationError(errors)
        return attrs


class LookupSerializer(serializers.ModelSerializer):
    """A stored lookup with the server's hops and seconds."""

    campaign = serializers.SlugRelatedField(slug_field="uuid", read_only=True, allow_null=True)
    steps = StepSerializer(many=True, read_only=True)
    seconds_per_hop = serializers.SerializerMethodField(
        allow_null=True,
        help_text="seconds / hops (null: failed, or no redirect followed). STFC's published "
        "figure: 0.3-1.5 s per hop.",
    )

    class Meta:
        model = Lookup
        fields = ["uuid", "campaign", *LOOKUP_FIELDS, "seconds_per_hop", "received"]

    @extend_schema_field(OpenApiTypes.FLOAT)
    def get_seconds_per_hop(self, lookup: Lookup) -> float | None:
        return seconds_per_hop(lookup.seconds, lookup.hops)


def seconds_per_hop(seconds: float | None, hops: int) -> float | None:
    return seconds / hops if seconds is not None and hops > 0 else None
