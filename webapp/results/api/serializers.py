"""API shapes. Output serializers are flat; what is posted is validated in
ingest_serializers.py (a 400 naming the field)."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from webapp.results.api.ingest_serializers import TCP_BUFFER_HELP, PhasesField
from webapp.results.models import Measurement, Node, Transfer
from webapp.results.models.measurements import TRANSFER_FIELDS
from webapp.results.selectors.baselines import baseline_fraction


class TransferSerializer(serializers.ModelSerializer):
    phases = PhasesField(read_only=True, help_text="Phase name -> seconds, in phase order.")

    class Meta:
        model = Transfer
        fields = list(TRANSFER_FIELDS)


class MeasurementSerializer(serializers.ModelSerializer):
    """A stored measurement with the server's figures; transfers only with ?expand=transfers."""

    campaign = serializers.SlugRelatedField(slug_field="uuid", read_only=True, allow_null=True)
    src = serializers.SlugRelatedField(slug_field="name", read_only=True)
    dst = serializers.SlugRelatedField(slug_field="name", read_only=True)
    transfers = TransferSerializer(many=True, read_only=True, required=False)
    rtt_within_target = serializers.BooleanField(
        read_only=True,
        allow_null=True,
        help_text="rtt_ms within 1 ms or 5% of rtt_target_ms (null: no target).",
    )
    tcp_buffer_bytes = serializers.IntegerField(
        read_only=True, allow_null=True, help_text=TCP_BUFFER_HELP
    )
    baseline_gbps = serializers.FloatField(
        read_only=True,
        allow_null=True,
        help_text="What the link carried (the pair's latest link baseline before this "
        "measurement; null: none taken).",
    )
    baseline_fraction = serializers.SerializerMethodField(
        allow_null=True, help_text="throughput_gbps / baseline_gbps (null when either is unknown)."
    )

    class Meta:
        model = Measurement
        fields = [
            "uuid",
            "campaign",
            "src",
            "dst",
            "protocol",
            "auth",
            "client",
            "checksum",
            "scope",
            "src_site",
            "dst_site",
            "hosts",
            "streams",
            "transfer_count",
            "file_size",
            "rtt_ms",
            "rtt_target_ms",
            "rtt_within_target",
            "tcp_buffer_bytes",
            "started",
            "finished",
            "throughput_gbps",
            "makespan_gbps",
            "baseline_gbps",
            "baseline_fraction",
            "succeeded",
            "failed",
            "received",
            "transfers",
        ]

    @extend_schema_field(OpenApiTypes.FLOAT)
    def get_baseline_fraction(self, measurement: Measurement) -> float | None:
        return baseline_fraction(
            measurement.throughput_gbps, getattr(measurement, "baseline_gbps", None)
        )

    def __init__(self, *args, expand_transfers: bool = True, **kwargs):
        super().__init__(*args, **kwargs)
        if not expand_transfers:
            self.fields.pop("transfers")


class MeasurementListQuerySerializer(serializers.Serializer):
    expand = serializers.ChoiceField(
        choices=["transfers"], required=False, help_text="Nest the transfers"
    )
    rows = serializers.ChoiceField(
        choices=["measurements", "transfers"],
        required=False,
        help_text="With format=csv: one row per measurement or per transfer",
    )


class BulkItemResultSerializer(serializers.Serializer):
    index = serializers.IntegerField()
    uuid = serializers.CharField(allow_null=True)
    status = serializers.IntegerField(help_text="201 created, 200 already stored, 409, 400")
    errors = serializers.JSONField(required=False)


class BulkResultSerializer(serializers.Serializer):
    created = serializers.IntegerField()
    unchanged = serializers.IntegerField()
    rejected = serializers.IntegerField()
    results = BulkItemResultSerializer(many=True)


class NodeSerializer(serializers.ModelSerializer):
    measurements_as_src = serializers.IntegerField(
        source="measurements_as_src_count", read_only=True
    )
    measurements_as_dst = serializers.IntegerField(
        source="measurements_as_dst_count", read_only=True
    )

    class Meta:
        model = Node
        fields = [
            "name",
            "address",
            "site",
            "labels",
            "link_gbps",
            "first_seen",
            "last_seen",
            "measurements_as_src",
            "measurements_as_dst",
        ]
