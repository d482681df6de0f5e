"""The aggregate answers' shapes (throughput versus latency, stream comparison, MaDDash)
and their query parameters: a window and the authorization, client and checksum to read."""

from rest_framework import serializers

from webapp.results.api.ingest_serializers import MAX_STREAMS
from webapp.results.choices import Auth, Checksum, Client, Protocol, Scope
from webapp.results.windows import WINDOW_PATTERN, WINDOW_SYNTAX, parse_window


def window_field(default: str) -> serializers.RegexField:
    return serializers.RegexField(
        WINDOW_PATTERN,
        default=default,
        help_text="latest, <N>h or <N>d (at most 3650 days)",
        error_messages={"invalid": f"Expected {WINDOW_SYNTAX}."},
    )


class WindowQuerySerializer(serializers.Serializer):
    window = window_field("20d")

    def validate_window(self, value: str) -> str:
        return parse_window(value).label


class DimensionsQuerySerializer(serializers.Serializer):
    """Which measurements an aggregate reads: by authorization, client and checksum (one of
    each)."""

    auth = serializers.ChoiceField(
        choices=Auth.choices, default=Auth.X509, help_text="How the transfers were authorized"
    )
    client = serializers.ChoiceField(
        choices=Client.choices, default=Client.NATIVE, help_text="What drove the copies"
    )
    checksum = serializers.ChoiceField(
        choices=Checksum.choices,
        default=Checksum.NONE,
        help_text="The checksum step each transfer ended with",
    )


class ThroughputVsLatencyQuerySerializer(WindowQuerySerializer, DimensionsQuerySerializer):
    protocol = serializers.ChoiceField(
        choices=Protocol.choices, required=False, default=None, allow_null=True
    )
    streams = serializers.IntegerField(
        min_value=1, max_value=MAX_STREAMS, required=False, default=None, allow_null=True
    )


class StreamComparisonQuerySerializer(WindowQuerySerializer, DimensionsQuerySerializer):
    protocol = serializers.ChoiceField(choices=Protocol.choices, default=Protocol.HTTPS)


class LatencyPointSerializer(serializers.Serializer):
    src = serializers.CharField()
    dst = serializers.CharField()
    protocol = serializers.CharField()
    rtt_ms = serializers.FloatField()
    throughput_gbps = serializers.FloatField()
    measurements = serializers.IntegerField()


class FitSerializer(serializers.Serializer):
    slope_gbps_per_ms = serializers.FloatField(allow_null=True)
    intercept_gbps = serializers.FloatField(allow_null=True)
    r = serializers.FloatField(allow_null=True)
    n = serializers.IntegerField()


class ThroughputVsLatencySerializer(serializers.Serializer):
    protocol = serializers.CharField(allow_null=True)
    auth = serializers.CharField()
    client = serializers.CharField()
    checksum = serializers.CharField()
    streams = serializers.IntegerField(allow_null=True)
    window = serializers.CharField()
    points = LatencyPointSerializer(many=True)
    fits = serializers.DictField(child=FitSerializer())


class StreamPairSerializer(serializers.Serializer):
    src = serializers.CharField()
    dst = serializers.CharField()
    single_gbps = serializers.FloatField(allow_null=True)
    multi_gbps = serializers.FloatField(allow_null=True)
    multi_streams = serializers.IntegerField(allow_null=True)
    ratio = serializers.FloatField(allow_null=True)


class StreamComparisonSerializer(serializers.Serializer):
    protocol = serializers.CharField()
    auth = serializers.CharField()
    client = serializers.CharField()
    checksum = serializers.CharField()
    window = serializers.CharField()
    pairs = StreamPairSerializer(many=True)


class MaddashWindowQuerySerializer(WindowQuerySerializer, DimensionsQuerySerializer):
    window = window_field("latest")
    scope = serializers.ChoiceField(
        choices=Scope.choices,
        default=Scope.HOST,
        help_text="host (the default): rows and columns are nodes; site: sites (issue 23)",
    )


class MaddashCheckQuerySerializer(DimensionsQuerySerializer):
    # MaDDash's parameter name.
    resultsPerPage = serializers.IntegerField(min_value=1, max_value=1000, default=10)
    page = serializers.IntegerField(min_value=0, max_value=1_000_000, default=0)
