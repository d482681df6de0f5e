"""The sites' aggregates' shapes and query parameters (issue 23): the hop-overhead table and
the scaling curve (aggregate throughput against hosts)."""

from rest_framework import serializers

from webapp.results.api.aggregate_serializers import (
    DimensionsQuerySerializer,
    WindowQuerySerializer,
)
from webapp.results.api.fields import StrictRegexField
from webapp.results.api.ingest_serializers import MAX_STREAMS, SITE_ERRORS
from webapp.results.choices import LOOKUP_PROTOCOLS, SITE_NAME_PATTERN, Protocol


def site_filter(end: str) -> StrictRegexField:
    return StrictRegexField(
        SITE_NAME_PATTERN,
        max_length=8,
        required=False,
        default=None,
        error_messages=SITE_ERRORS,
        help_text=f"Only this {end} site",
    )


class HopOverheadQuerySerializer(WindowQuerySerializer):
    protocol = serializers.ChoiceField(
        choices=[(p.value, p.label) for p in LOOKUP_PROTOCOLS],
        required=False,
        default=None,
        help_text="Only this protocol's lookups (default: both)",
    )


class SiteScalingQuerySerializer(WindowQuerySerializer, DimensionsQuerySerializer):
    src_site = site_filter("source")
    dst_site = site_filter("destination")
    protocol = serializers.ChoiceField(choices=Protocol.choices, required=False, default=None)
    streams = serializers.IntegerField(
        min_value=1, max_value=MAX_STREAMS, required=False, default=None
    )


class LevelSerializer(serializers.Serializer):
    level = serializers.CharField()
    protocol = serializers.CharField()
    lookups = serializers.IntegerField()
    failed = serializers.IntegerField()
    median_seconds = serializers.FloatField(
        allow_null=True, help_text="Of the successful lookups: first request to the data server"
    )
    median_hops = serializers.FloatField(allow_null=True, help_text="Redirects followed")
    median_seconds_per_hop = serializers.FloatField(
        allow_null=True, help_text="seconds / hops of the successful lookups with a hop"
    )
    median_level_rtt_ms = serializers.FloatField(
        allow_null=True, help_text="RTT between the entry redirector and the file's site"
    )


class ReferenceSerializer(serializers.Serializer):
    source = serializers.CharField()
    seconds_per_hop_low = serializers.FloatField()
    seconds_per_hop_high = serializers.FloatField()


class HopOverheadSerializer(serializers.Serializer):
    window = serializers.CharField()
    protocol = serializers.CharField(allow_null=True)
    levels = LevelSerializer(many=True)
    reference = ReferenceSerializer()


class ScalingPointSerializer(serializers.Serializer):
    src_site = serializers.CharField()
    dst_site = serializers.CharField()
    protocol = serializers.CharField()
    streams = serializers.IntegerField()
    hosts = serializers.IntegerField()
    measurements = serializers.IntegerField()
    throughput_gbps = serializers.FloatField(
        allow_null=True, help_text="Mean aggregate throughput of the sweep's points"
    )
    ideal_gbps = serializers.FloatField(
        allow_null=True, help_text="hosts x the one-host mean (null: no one-host point)"
    )
    efficiency = serializers.FloatField(
        allow_null=True, help_text="throughput_gbps / ideal_gbps (null: no one-host point)"
    )


class SiteScalingSerializer(serializers.Serializer):
    window = serializers.CharField()
    auth = serializers.CharField()
    client = serializers.CharField()
    checksum = serializers.CharField()
    points = ScalingPointSerializer(many=True)
