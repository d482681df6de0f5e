"""API shapes of link baselines (orchestrator/prelim sends them; `Baseline.to_json` there is
the input shape)."""

from rest_framework import serializers

from webapp.results.api.fields import (
    ErrorTextField,
    NodeNameField,
    StrictFloatField,
    StrictIntegerField,
    StrictRegexField,
    StrictUUIDField,
)
from webapp.results.api.serializers import MAX_STREAMS, finished_not_before_started
from webapp.results.models import Baseline


class BaselineInSerializer(serializers.Serializer):
    """A link baseline as `tpcbench baseline` and `campaign run --baseline` send it."""

    uuid = StrictUUIDField()
    campaign = StrictUUIDField(allow_null=True, required=False, default=None)
    src = NodeNameField()
    dst = NodeNameField()
    tool = StrictRegexField(r"^[A-Za-z0-9._-]+$", max_length=32)
    streams = StrictIntegerField(min_value=1, max_value=MAX_STREAMS)
    duration_s = StrictIntegerField(min_value=1, max_value=86_400)
    started = serializers.DateTimeField()
    finished = serializers.DateTimeField(allow_null=True, required=False, default=None)
    throughput_gbps = StrictFloatField(
        min_value=0, max_value=1e6, allow_null=True, required=False, default=None
    )
    error = ErrorTextField()

    def validate(self, attrs: dict) -> dict:
        if attrs["src"] == attrs["dst"]:
            raise serializers.ValidationError({"dst": "dst must differ from src."})
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
            "uuid", "campaign", "src", "dst", "tool", "streams", "duration_s",
            "started", "finished", "throughput_gbps", "error", "received",
        ]  # fmt: skip
