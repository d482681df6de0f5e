"""The alerts' API shapes (docs/api.md, docs/alerts.md): an alert with its check."""

from rest_framework import serializers

from webapp.results.models import Alert


class CheckSerializer(serializers.Serializer):
    """What the alert is of: the measurements of one src, dst and dimensions."""

    src = serializers.CharField(source="src.name", read_only=True)
    dst = serializers.CharField(source="dst.name", read_only=True)
    protocol = serializers.CharField(read_only=True)
    streams = serializers.IntegerField(read_only=True)
    auth = serializers.CharField(read_only=True)
    client = serializers.CharField(read_only=True)
    checksum = serializers.CharField(read_only=True)
    scope = serializers.CharField(read_only=True)


class AlertSerializer(serializers.ModelSerializer):
    check = CheckSerializer(source="*", read_only=True)
    since = serializers.DateTimeField(
        read_only=True, help_text="When the state last changed (its measurement's start)."
    )
    reason = serializers.CharField(read_only=True, help_text="Why the state last changed.")
    acknowledged = serializers.BooleanField(
        read_only=True,
        help_text="An operator acknowledged it: no notifications until it is ok again.",
    )
    last_started = serializers.DateTimeField(
        read_only=True, help_text="The newest measurement evaluated: its start."
    )
    last_throughput_gbps = serializers.FloatField(
        read_only=True, allow_null=True, help_text="Its throughput (null: every transfer failed)."
    )
    last_success = serializers.DateTimeField(
        read_only=True, allow_null=True, help_text="The end of the check's last success."
    )

    class Meta:
        model = Alert
        fields = [
            "id", "check", "state", "since", "reason", "acknowledged", "last_started",
            "last_throughput_gbps", "last_success",
        ]  # fmt: skip
        read_only_fields = fields
