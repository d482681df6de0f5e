"""What the orchestrator posts, validated strictly: a bad value is a 400 naming the field
(the measurement and its transfers, their phases; the bounds other input serializers share)."""

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from webapp.results.api.fields import (
    ErrorTextField,
    FreeTextField,
    MomentField,
    NodeNameField,
    ServerField,
    StrictFloatField,
    StrictIntegerField,
    StrictRegexField,
    StrictUUIDField,
)
from webapp.results.choices import (
    SITE_NAME_PATTERN,
    Auth,
    Checksum,
    Client,
    ErrorClass,
    Outcome,
    Protocol,
    Scope,
)
from webapp.results.models.measurements import MAX_HOSTS
from webapp.results.phases import MAX_PHASES, PHASE_NAME, ordered_phases, phases_fit

MAX_BYTES = 2**62  # keeps sizes inside PostgreSQL bigint
MAX_STREAMS = 1024
MAX_TRANSFERS = 10_000
MIN_TCP_BUFFER = 4096  # a page: Linux's smallest tcp_rmem
MAX_TCP_BUFFER = 2**40
MAX_REDIRECTS = 1000  # XrdCl gives up after 16; a loop is not a measurement
SITE_HELP = (
    "The site of the {end} ({pattern}); null (the default): the lab or cluster has no sites. "
    "Required with scope site."
)
SITE_ERRORS = {
    "invalid": "A site name: a lowercase letter, then up to 7 lowercase letters or digits "
    "(ucsd, unl, site2).",
    "max_length": "A site name has at most 8 characters.",
    "blank": "A site name is not empty (null: no sites).",
}
TCP_BUFFER_HELP = (
    "The largest TCP buffer (bytes) one stream of this pair may use: the smaller of the "
    "sender's tcp_wmem and the receiver's tcp_rmem maximum, when the orchestrator knows it "
    "(the lab sets it); null: not known. One stream moves at most about tcp_buffer_bytes x 8 "
    "/ RTT (less in practice: Linux gives about half of the buffer to the window)."
)


def finished_not_before_started(attrs: dict) -> dict:
    """A serializer's `validate`: a `finished` time, if any, is not before `started`."""
    if attrs.get("finished") is not None and attrs["finished"] < attrs["started"]:
        raise serializers.ValidationError({"finished": "finished is before started."})
    return attrs


@extend_schema_field(
    {
        "type": "object",
        "additionalProperties": {"type": "number", "minimum": 0, "maximum": 1e7},
        "maxProperties": MAX_PHASES,
        "description": f"Phase name ({PHASE_NAME.pattern}) -> seconds.",
    }
)
class PhasesField(serializers.DictField):
    """Phase name -> seconds (finite, >= 0); at most MAX_PHASES names, each a short word.
    (The schema cannot state the names' pattern: OpenAPI 3.0 has no propertyNames.)"""

    default_error_messages = {
        "bad_name": "Phase names are lowercase words (a-z, 0-9, '_', '-'), at most 32 long: "
        "{name!r}.",
        "too_many": "At most {limit} phases.",
    }

    def __init__(self, **kwargs):
        super().__init__(child=StrictFloatField(min_value=0, max_value=1e7), **kwargs)

    def to_internal_value(self, data):
        phases = super().to_internal_value(data)
        if len(phases) > MAX_PHASES:
            self.fail("too_many", limit=MAX_PHASES)
        for name in phases:
            if not PHASE_NAME.match(name):
                self.fail("bad_name", name=name)
        return phases

    def to_representation(self, value):
        return ordered_phases(value or {})


class TransferInSerializer(serializers.Serializer):
    index = StrictIntegerField(min_value=0, max_value=MAX_TRANSFERS)
    start = MomentField()
    end = MomentField()
    bytes = StrictIntegerField(min_value=0, max_value=MAX_BYTES)
    outcome = serializers.ChoiceField(choices=Outcome.choices)
    error_class = serializers.ChoiceField(
        choices=ErrorClass.choices, allow_null=True, required=False, default=None
    )
    message = ErrorTextField()
    duration_s = StrictFloatField(
        min_value=0, required=False, write_only=True, help_text="Ignored: end - start is used."
    )
    progress = serializers.JSONField(
        required=False,
        allow_null=True,
        write_only=True,
        help_text="[seconds since start, bytes] pairs from the tool's progress (perf markers); "
        "not stored.",
    )
    phases = PhasesField(
        required=False,
        default=dict,
        help_text="Where the transfer's time went: phase name (authorize, redirect, connect, "
        "handshake, request, streaming, poll, close, checksum) -> seconds; they add up to its "
        "duration.",
    )
    streaming_gbps = StrictFloatField(
        min_value=0,
        max_value=1e6,
        allow_null=True,
        required=False,
        default=None,
        help_text="The rate after the first progress (null: no progress seen).",
    )
    source_server = ServerField(
        allow_null=True,
        required=False,
        default=None,
        help_text="The data server that served the source end (host:port as the client saw "
        "it); null: not learned.",
    )
    destination_server = ServerField(
        allow_null=True,
        required=False,
        default=None,
        help_text="The data server that served the destination end (host:port as the client "
        "saw it); null: not learned.",
    )
    redirects = StrictIntegerField(
        min_value=0,
        max_value=MAX_REDIRECTS,
        required=False,
        default=0,
        help_text="The redirects followed to reach the data servers (default 0).",
    )

    def validate(self, attrs: dict) -> dict:
        if attrs["end"] < attrs["start"]:
            raise serializers.ValidationError({"end": "end is before start."})
        duration = (attrs["end"] - attrs["start"]).total_seconds()
        if not phases_fit(attrs.get("phases") or {}, duration):
            total = sum(attrs["phases"].values())
            raise serializers.ValidationError(
                {
                    "phases": f"The phases add up to {total:.6f} s, more than the transfer's "
                    f"duration (end - start = {duration:.6f} s)."
                }
            )
        if attrs["outcome"] == Outcome.SUCCESS and attrs.get("error_class"):
            raise serializers.ValidationError(
                {"error_class": "A successful transfer has no error_class."}
            )
        return attrs


class MeasurementInSerializer(serializers.Serializer):
    """A measurement as the orchestrator sends it; throughput_gbps, makespan_gbps, succeeded and
    failed are derived here, never taken from the client."""

    uuid = StrictUUIDField()
    campaign = StrictUUIDField(allow_null=True, required=False, default=None)
    src = NodeNameField()
    dst = NodeNameField()
    protocol = serializers.ChoiceField(choices=Protocol.choices)
    auth = serializers.ChoiceField(
        choices=Auth.choices,
        required=False,
        default=Auth.X509,
        help_text="How the transfers were authorized (default x509).",
    )
    client = serializers.ChoiceField(
        choices=Client.choices,
        required=False,
        default=Client.NATIVE,
        help_text="What drove the copies (default native: the protocol's own tool).",
    )
    checksum = serializers.ChoiceField(
        choices=Checksum.choices,
        required=False,
        default=Checksum.NONE,
        help_text="The checksum step each transfer ended with (default none; adler32: both "
        "servers' digests asked and compared, the phase 'checksum').",
    )
    scope = serializers.ChoiceField(
        choices=Scope.choices,
        required=False,
        default=Scope.HOST,
        help_text="host (the default): host to host; site: site to site, the copy addressed "
        "to the destination site's redirector.",
    )
    src_site = StrictRegexField(
        SITE_NAME_PATTERN,
        allow_null=True,
        required=False,
        default=None,
        max_length=8,
        error_messages=SITE_ERRORS,
        help_text=SITE_HELP.format(end="source", pattern=SITE_NAME_PATTERN),
    )
    dst_site = StrictRegexField(
        SITE_NAME_PATTERN,
        allow_null=True,
        required=False,
        default=None,
        max_length=8,
        error_messages=SITE_ERRORS,
        help_text=SITE_HELP.format(end="destination", pattern=SITE_NAME_PATTERN),
    )
    hosts = StrictIntegerField(
        min_value=1,
        max_value=MAX_HOSTS,
        allow_null=True,
        required=False,
        default=None,
        help_text="Site scope only: null (the default), through the sites' fronts (the "
        "redirectors chose the data servers); m, a point of the scaling sweep (the transfers "
        "spread round-robin over m host pairs, addressed to the hosts directly).",
    )
    streams = StrictIntegerField(min_value=1, max_value=MAX_STREAMS)
    file_size = StrictIntegerField(min_value=1, max_value=MAX_BYTES)
    rtt_ms = StrictFloatField(
        min_value=0, max_value=1e6, allow_null=True, required=False, default=None
    )
    rtt_target_ms = StrictFloatField(
        min_value=0,
        max_value=1e6,
        allow_null=True,
        required=False,
        default=None,
        help_text="The RTT an emulated WAN promised for this pair (lab --rtt), if any.",
    )
    tcp_buffer_bytes = StrictIntegerField(
        min_value=MIN_TCP_BUFFER,
        max_value=MAX_TCP_BUFFER,
        allow_null=True,
        required=False,
        default=None,
        help_text=TCP_BUFFER_HELP,
    )
    src_link_gbps = StrictFloatField(
        min_value=1e-6,
        max_value=1e6,
        allow_null=True,
        required=False,
        help_text="The source node's link capacity: kept on the node; null: not known (any "
        "capacity kept before is forgotten); absent: leave the node's as it is.",
    )
    dst_link_gbps = StrictFloatField(
        min_value=1e-6,
        max_value=1e6,
        allow_null=True,
        required=False,
        help_text="The destination node's link capacity: kept on the node; null: not known (any "
        "capacity kept before is forgotten); absent: leave the node's as it is.",
    )
    started = MomentField()
    finished = MomentField()
    throughput_gbps = StrictFloatField(
        allow_null=True,
        required=False,
        write_only=True,
        help_text="Ignored: the server recomputes it.",
    )
    makespan_gbps = StrictFloatField(
        allow_null=True,
        required=False,
        write_only=True,
        help_text="Ignored: the server recomputes it.",
    )
    succeeded = StrictIntegerField(
        min_value=0, required=False, write_only=True, help_text="Ignored: the server recomputes it."
    )
    failed = StrictIntegerField(
        min_value=0, required=False, write_only=True, help_text="Ignored: the server recomputes it."
    )
    transfers = TransferInSerializer(many=True, allow_empty=False, max_length=MAX_TRANSFERS)
    cleanup_errors = serializers.ListField(
        child=FreeTextField(allow_blank=True, max_length=100_000),
        required=False,
        write_only=True,
        max_length=MAX_TRANSFERS,
        help_text="Destination files the orchestrator could not delete afterwards; not stored.",
    )
    rtt_from = serializers.ChoiceField(
        choices=["source", "orchestrator"],
        required=False,
        write_only=True,
        help_text="Where rtt_ms was measured from (default: the source node); not stored.",
    )

    def validate(self, attrs: dict) -> dict:
        errors = {}
        if attrs["finished"] < attrs["started"]:
            errors["finished"] = "finished is before started."
        if attrs["src"] == attrs["dst"]:
            errors["dst"] = "dst must differ from src."
        if attrs.get("scope") == Scope.SITE:
            for end in ("src_site", "dst_site"):
                if attrs.get(end) is None:
                    errors[end] = f"A site-scope measurement names its {end}."
        elif attrs.get("hosts") is not None:
            errors["hosts"] = "hosts is for site-scope measurements only (scope site)."
        indexes = [t["index"] for t in attrs["transfers"]]
        if len(set(indexes)) != len(indexes):
            errors["transfers"] = "Each transfer needs its own index."
        if errors:
            raise serializers.ValidationError(errors)
        return attrs
