"""API shapes of campaigns: what the list shows, "run now", and the orchestrator's progress
(state, times and the RTT check it made before measuring)."""

from rest_framework import serializers

from webapp.results.api.fields import (
    FreeTextField,
    MomentField,
    NodeNameField,
    StrictBooleanField,
    StrictFloatField,
)
from webapp.results.choices import CampaignState, Trigger
from webapp.results.models import Campaign


class RttCheckSerializer(serializers.Serializer):
    """One pair's RTT before the campaign against what the emulated WAN promised."""

    src = NodeNameField()
    dst = NodeNameField()
    target_ms = StrictFloatField(min_value=0, max_value=1e6)
    measured_ms = StrictFloatField(min_value=0, max_value=1e6, allow_null=True)
    within_target = StrictBooleanField(allow_null=True)


class CampaignSerializer(serializers.ModelSerializer):
    measurements = serializers.IntegerField(source="measurement_count", read_only=True)
    rtt_checks = RttCheckSerializer(many=True, read_only=True)
    rtt_off = serializers.SerializerMethodField(
        help_text="How many pairs were off their RTT target (1 ms or 5%) before measuring."
    )

    class Meta:
        model = Campaign
        fields = [
            "uuid",
            "trigger",
            "schedule",
            "state",
            "started",
            "finished",
            "created",
            "measurements",
            "rtt_checks",
            "rtt_off",
        ]
        read_only_fields = ["uuid", "state", "started", "finished", "created"]

    def get_rtt_off(self, campaign: Campaign) -> int:
        return sum(1 for check in campaign.rtt_checks or [] if check.get("within_target") is False)


class CampaignCreateSerializer(serializers.Serializer):
    trigger = serializers.ChoiceField(choices=Trigger.choices, default=Trigger.MANUAL)
    schedule = FreeTextField(max_length=100, allow_blank=True, required=False, default="")


class CampaignUpdateSerializer(serializers.Serializer):
    state = serializers.ChoiceField(choices=CampaignState.choices, required=False)
    trigger = serializers.ChoiceField(choices=Trigger.choices, required=False)
    started = MomentField(required=False)
    finished = MomentField(required=False)
    schedule = FreeTextField(max_length=100, allow_blank=True, required=False)
    rtt_checks = RttCheckSerializer(many=True, required=False, max_length=100_000)

    def validate(self, attrs: dict) -> dict:
        campaign = self.instance
        started = attrs.get("started", campaign.started if campaign else None)
        finished = attrs.get("finished", campaign.finished if campaign else None)
        if started and finished and finished < started:
            raise serializers.ValidationError({"finished": "finished is before started."})
        return attrs
