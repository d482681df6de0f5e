"""API shapes of link baselines (orchestrator/prelim sends them; `Baseline.to_json` there is
the input shape)."""

from rest_framework import serializers

from webapp.results.api.fields import (
    ErrorTextField,
    MomentField,
    NodeNameField,
    StrictFloatField,
    StrictIntegerField,
    StrictRegexField,
    StrictUUIDField,
)
from webapp.results.api.ingest_serializers import MAX_STREAMS, finished_not_before_started
from webapp.results.models import Baseline

MAX_DURATION_S = 86_400
MAX_RETRANSMITS = 2**63 - 1  # the column's (a PostgreSQL bigint)


class BaselineInSerializer(serializers.Serializer):
    """A link baseline as `tpcbench baseline` and `campaign run --baseline` send it."""

    uuid = StrictUUIDField()
    campaign = StrictUUIDField(allow_null=True, required=False, default=None)
    src = NodeNameField()
    dst = NodeNameField()
    tool = StrictRegexField(r"^[A-Za-z0-9._-]+$", max_length=32)
    streams = StrictIntegerField(min_value=1, max_value=MAX_STREAMS)
    duration_s = StrictIntegerField(min_value=1, max_value=MAX_DURATION_S)
    omit_s = StrictIntegerField(
        min_value=0,
        max_value=MAX_DURATION_S - 1,
        required=False,
        default=0,
        help_text="Seconds of slow start run before the duration_s measured and left out of "
        "throughput_gbps (iperf3 --omit); below duration_s.",
    )
    started = MomentField()
    finished = MomentField(allow_null=True, required=False, default=None)
    throughput_gbps = StrictFloatField(
        min_value=0, max_value=1e6, allow_null=True, required=False, default=None
    )
    error = ErrorTextField()
    retransmits = StrictIntegerField(
        min_value=0,
        max_value=MAX_RETRANSMITS,
        allow_null=True,
        required=False,
        default=None,
        help_text="TCP retransmissions the sender counted over the measured seconds; null: "
        "not reported.",
    )

    def validate(self, attrs: dict) -> dict:
        if attrs["src"] == attrs["dst"]:
            raise serializers.ValidationError({"dst": "dst must differ from src."})
        if attrs["omit_s"] >= attrs["duration_s"]:
            raise serializers.ValidationError(
                {"omit_s": "omit_s (seconds left out before the test) must be below duration_s."}
            )
        if attrs["throughput_gbps"] is None and not attrs["error"]:
            raise serializers.ValidationError(
                {"error": "A baseline without throughput_gbps must say why (error)."}
            )
        return finished_not_before_started(attrs)


class BaselineSerializer(serializers.ModelSerializer):
    src = serializers.SlugRelatedField(slug_field="name", read_only=True)
    dst = serializers.SlugRelatedField(slug_field="name", read_only=True)
    campaign = serializers.SlugRelatedField(slug_field="uuid", read_only=True, allow_null=True)

    class Meta:
        model = Baseline
        fields = [
            "uuid", "campaign", "src", "dst", "tool", "streams", "duration_s", "omit_s",
            "started", "finished", "throughput_gbps", "retransmits", "error", "received",
        ]  # fmt: skip
