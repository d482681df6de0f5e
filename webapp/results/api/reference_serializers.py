"""API shapes of the references: link baselines and preliminary runs (orchestrator/prelim
sends them; `Baseline.to_json` and `PrelimRun.to_json` there are the input shapes)."""

from rest_framework import serializers

from webapp.results.api.fields import (
    FreeTextField,
    NodeNameField,
    StrictFloatField,
    StrictIntegerField,
    StrictRegexField,
    StrictUUIDField,
)
from webapp.results.api.serializers import MAX_BYTES, MAX_STREAMS
from webapp.results.choices import PrelimKind, PrelimMethod
from webapp.results.models import Baseline, PrelimPoint, PrelimRun

MAX_CONCURRENCY = 1000
MAX_POINTS = 10_000
ERROR_LENGTH = 100_000


def _error_field():
    return FreeTextField(allow_blank=True, required=False, default="", max_length=ERROR_LENGTH)


def _finished_not_before_started(attrs: dict) -> dict:
    if attrs.get("finished") is not None and attrs["finished"] < attrs["started"]:
        raise serializers.ValidationError({"finished": "finished is before started."})
    return attrs


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
    error = _error_field()

    def validate(self, attrs: dict) -> dict:
        if attrs["src"] == attrs["dst"]:
            raise serializers.ValidationError({"dst": "dst must differ from src."})
        if attrs["throughput_gbps"] is None and not attrs["error"]:
            raise serializers.ValidationError(
                {"error": "A baseline without throughput_gbps must say why (error)."}
            )
        return _finished_not_before_started(attrs)


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


class PrelimPointSerializer(serializers.ModelSerializer):
    """One point: `concurrency` copies at once of a `file_size`-byte file by `method`."""

    method = serializers.ChoiceField(choices=PrelimMethod.choices)
    file_size = StrictIntegerField(min_value=1, max_value=MAX_BYTES)
    concurrency = StrictIntegerField(min_value=1, max_value=MAX_CONCURRENCY)
    throughput_gbps = StrictFloatField(
        min_value=0, max_value=1e6, allow_null=True, required=False, default=None
    )
    makespan_gbps = StrictFloatField(
        min_value=0, max_value=1e6, allow_null=True, required=False, default=None
    )
    succeeded = StrictIntegerField(min_value=0, max_value=MAX_CONCURRENCY)
    failed = StrictIntegerField(min_value=0, max_value=MAX_CONCURRENCY, required=False, default=0)
    error = _error_field()

    class Meta:
        model = PrelimPoint
        fields = [
            "method", "file_size", "concurrency", "throughput_gbps", "makespan_gbps",
            "succeeded", "failed", "error",
        ]  # fmt: skip
        validators: list = []  # the run's uniqueness is checked in PrelimRunInSerializer


class PrelimRunInSerializer(serializers.Serializer):
    """A run as `tpcbench prelim concurrency|filesize` sends it."""

    uuid = StrictUUIDField()
    kind = serializers.ChoiceField(choices=PrelimKind.choices)
    node = NodeNameField()
    streams = StrictIntegerField(min_value=1, max_value=MAX_STREAMS)
    started = serializers.DateTimeField()
    finished = serializers.DateTimeField(allow_null=True, required=False, default=None)
    points = PrelimPointSerializer(many=True, max_length=MAX_POINTS)

    def validate(self, attrs: dict) -> dict:
        keys = [(p["method"], p["file_size"], p["concurrency"]) for p in attrs["points"]]
        if len(set(keys)) != len(keys):
            raise serializers.ValidationError(
                {"points": "Each (method, file_size, concurrency) may appear once."}
            )
        return _finished_not_before_started(attrs)


class PrelimRunSerializer(serializers.ModelSerializer):
    node = serializers.SlugRelatedField(slug_field="name", read_only=True)
    points = PrelimPointSerializer(many=True, read_only=True)

    class Meta:
        model = PrelimRun
        fields = ["uuid", "kind", "node", "streams", "started", "finished", "received", "points"]
