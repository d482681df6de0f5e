"""API shapes of preliminary runs and their points (orchestrator/prelim sends them;
`PrelimRun.to_json` there is the input shape)."""

from rest_framework import serializers

from webapp.results.api.fields import (
    ErrorTextField,
    MomentField,
    NodeNameField,
    StrictFloatField,
    StrictIntegerField,
    StrictUUIDField,
)
from webapp.results.api.ingest_serializers import (
    MAX_BYTES,
    MAX_STREAMS,
    finished_not_before_started,
)
from webapp.results.choices import PrelimKind, PrelimMethod
from webapp.results.models import PrelimPoint, PrelimRun

MAX_CONCURRENCY = 1000
MAX_POINTS = 10_000


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
    error = ErrorTextField()

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
    started = MomentField()
    finished = MomentField(allow_null=True, required=False, default=None)
    points = PrelimPointSerializer(many=True, max_length=MAX_POINTS)

    def validate(self, attrs: dict) -> dict:
        keys = [(p["method"], p["file_size"], p["concurrency"]) for p in attrs["points"]]
        if len(set(keys)) != len(keys):
            raise serializers.ValidationError(
                {"points": "Each (method, file_size, concurrency) may appear once."}
            )
        return finished_not_before_started(attrs)


class PrelimRunSerializer(serializers.ModelSerializer):
    node = serializers.SlugRelatedField(slug_field="name", read_only=True)
    points = PrelimPointSerializer(many=True, read_only=True)

    class Meta:
        model = PrelimRun
        fields = ["uuid", "kind", "node", "streams", "started", "finished", "received", "points"]
