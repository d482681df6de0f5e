from django.contrib import admin

from results.models import Campaign, Measurement, Node, Threshold, Transfer


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
