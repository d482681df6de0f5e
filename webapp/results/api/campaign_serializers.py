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
from webapp.results.choices import CAMPAIGN_COUNTERS as COUNTERS
from webapp.results.choices import CampaignState, Trigger
from webapp.results.models import Campaign

# A campaign's counters, as the orchestrator's journal keeps them (campaign/journal.py).
COUNTER_HELP = (
    "The orchestrator's count: planned in this cycle, done (all transfers succeeded), failed, "
    "missed (not begun before the next cycle's start), late (ended after it)."
)


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
            *COUNTERS,
            "cycle_fit",
        ]
        read_only_fields = [
            "uuid", "state", "started", "finished", "created", *COUNTERS, "cycle_fit"
        ]  # fmt: skip

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
    planned = serializers.IntegerField(min_value=0, required=False, help_text=COUNTER_HELP)
    done = serializers.IntegerField(min_value=0, required=False, help_text=COUNTER_HELP)
    failed = serializers.IntegerField(min_value=0, required=False, help_text=COUNTER_HELP)
    missed = serializers.IntegerField(min_value=0, required=False, help_text=COUNTER_HELP)
    late = serializers.IntegerField(min_value=0, required=False, help_text=COUNTER_HELP)
    cycle_fit = serializers.DictField(
        required=False,
        help_text="How the campaign fitted its cycle (mode fits, rotate, shorten or over; k, "
        "part, the estimate), as the orchestrator's journal has it.",
    )

    def validate(self, attrs: dict) -> dict:
        campaign = self.instance
        started = attrs.get("started", campaign.started if campaign else None)
        finished = attrs.get("finished", campaign.finished if campaign else None)
        if started and finished and finished < started:
            raise serializers.ValidationError({"finished": "finished is before started."})
        return attrs
