from django.contrib import admin

from webapp.results.models import (
    Alert,
    AlertChange,
    Baseline,
    Campaign,
    Lookup,
    Measurement,
    Node,
    PrelimPoint,
    PrelimRun,
    Threshold,
    Transfer,
)


@admin.register(Node)
class NodeAdmin(admin.ModelAdmin):
    list_display = ["name", "address", "site", "first_seen", "last_seen"]
    list_filter = ["site"]
    search_fields = ["name", "address", "site"]


@admin.register(Campaign)
class CampaignAdmin(admin.ModelAdmin):
    list_display = ["uuid", "trigger", "state", "started", "finished"]
    list_filter = ["state", "trigger"]
    search_fields = ["uuid"]


class TransferInline(admin.TabularInline):
    model = Transfer
    extra = 0
    readonly_fields = ["index", "start", "end", "bytes", "outcome", "error_class", "message"]
    can_delete = False


@admin.register(Measurement)
class MeasurementAdmin(admin.ModelAdmin):
    list_display = [
        "uuid",
        "src",
        "dst",
        "protocol",
        "streams",
        "throughput_gbps",
        "succeeded",
        "failed",
        "started",
    ]
    list_filter = ["protocol", "streams"]
    list_select_related = ["src", "dst"]
    search_fields = ["uuid", "src__name", "dst__name"]
    raw_id_fields = ["campaign", "src", "dst"]
    date_hierarchy = "started"
    inlines = [TransferInline]


@admin.register(Threshold)
class ThresholdAdmin(admin.ModelAdmin):
    list_display = ["protocol", "src", "dst", "ok_gbps", "warning_gbps"]
    list_filter = ["protocol"]
    raw_id_fields = ["src", "dst"]


@admin.register(Baseline)
class BaselineAdmin(admin.ModelAdmin):
    list_display = ["uuid", "src", "dst", "tool", "streams", "throughput_gbps", "started"]
    list_filter = ["tool"]
    search_fields = ["uuid", "src__name", "dst__name"]


class PrelimPointInline(admin.TabularInline):
    model = PrelimPoint
    extra = 0
    can_delete = False


@admin.register(PrelimRun)
class PrelimRunAdmin(admin.ModelAdmin):
    list_display = ["uuid", "kind", "node", "streams", "started"]
    list_filter = ["kind"]
    inlines = [PrelimPointInline]


@admin.register(Lookup)
class LookupAdmin(admin.ModelAdmin):
    list_display = ["uuid", "protocol", "level", "entry", "site", "hops", "seconds", "outcome"]
    list_filter = ["level", "protocol", "outcome"]
    search_fields = ["uuid", "entry", "site"]
    raw_id_fields = ["campaign"]
    date_hierarchy = "started"


class AlertChangeInline(admin.TabularInline):
    model = AlertChange
    extra = 0
    fields = ["at", "from_state", "to_state", "reason"]
    readonly_fields = fields
    can_delete = False


@admin.register(Alert)
class AlertAdmin(admin.ModelAdmin):
    """The checks' alerts (docs/alerts.md): the evaluation writes them; an admin may only
    acknowledge (or un-acknowledge) one."""

    list_display = ["src", "dst", "protocol", "streams", "state", "since", "acknowledged"]
    list_filter = ["state", "acknowledged", "protocol"]
    list_select_related = ["src", "dst"]
    search_fields = ["src__name", "dst__name"]
    fields = [
        "src", "dst", "protocol", "streams", "auth", "client", "checksum", "scope", "state",
        "since", "reason", "acknowledged", "last_started", "last_throughput_gbps",
        "last_success",
    ]  # fmt: skip
    readonly_fields = [f for f in fields if f != "acknowledged"]
    inlines = [AlertChangeInline]

    def has_add_permission(self, request) -> bool:
        return False
