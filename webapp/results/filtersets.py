"""Query filters of the list endpoints (django-filter): invalid values answer 400 naming them."""

from datetime import UTC, datetime

import django_filters
from django import forms
from django.db.models import Q
from django_filters.fields import IsoDateTimeField
from drf_spectacular.utils import extend_schema_field

from webapp.results.api.ingest_serializers import MAX_STREAMS
from webapp.results.choices import (
    Auth,
    CampaignState,
    Checksum,
    Client,
    LookupLevel,
    PrelimKind,
    Protocol,
    Scope,
    Trigger,
)
from webapp.results.models import Alert, Baseline, Campaign, Lookup, Measurement, Node, PrelimRun
from webapp.results.models.alerts import AlertState
from webapp.results.models.measurements import MAX_HOSTS


class IntegerFilter(django_filters.NumberFilter):
    field_class = forms.IntegerField


@extend_schema_field({"type": "integer", "minimum": 1, "maximum": MAX_STREAMS})
class StreamsFilter(IntegerFilter):
    """A stream count; the schema states its range (it reads no bounds off a filter)."""

    def __init__(self, **kwargs):
        super().__init__(min_value=1, max_value=MAX_STREAMS, **kwargs)


@extend_schema_field({"type": "integer", "minimum": 1, "maximum": MAX_HOSTS})
class HostsFilter(IntegerFilter):
    """A scaling sweep's host count (the schema states its range)."""

    def __init__(self, **kwargs):
        super().__init__(min_value=1, max_value=MAX_HOSTS, **kwargs)


class UTCDateTimeField(IsoDateTimeField):
    """ISO 8601, converted to UTC: PostgreSQL refuses offsets beyond +-15:59.

    A moment whose UTC falls outside years 1-9999 (0001-01-01T00:00+05:00) is valid ISO 8601
    and the schema's date-time: it becomes the first or last moment Python has, which a
    since/until filter compares with as it would with the moment itself (nothing is stored
    that early or that late)."""

    def clean(self, value):
        moment = super().clean(value)
        if moment is None:
            return None
        try:
            return moment.astimezone(UTC)
        except OverflowError:
            edge = datetime.min if moment.year == datetime.min.year else datetime.max
            return edge.replace(tzinfo=UTC)


class UTCDateTimeFilter(django_filters.IsoDateTimeFilter):
    field_class = UTCDateTimeField


class PairFilterSet(django_filters.FilterSet):
    """What is taken between a source and a destination, at a time, maybe in a campaign."""

    src = django_filters.CharFilter(field_name="src__name", help_text="Source node name")
    dst = django_filters.CharFilter(field_name="dst__name", help_text="Destination node name")
    since = UTCDateTimeFilter(
        field_name="started", lookup_expr="gte", help_text="Started at or after (ISO 8601)"
    )
    until = UTCDateTimeFilter(
        field_name="started", lookup_expr="lt", help_text="Started before (ISO 8601)"
    )
    campaign = django_filters.UUIDFilter(field_name="campaign__uuid", help_text="Campaign uuid")


class MeasurementFilterSet(PairFilterSet):
    protocol = django_filters.ChoiceFilter(choices=Protocol.choices)
    auth = django_filters.ChoiceFilter(
        choices=Auth.choices, help_text="How the transfers were authorized"
    )
    client = django_filters.ChoiceFilter(choices=Client.choices, help_text="What drove the copies")
    checksum = django_filters.ChoiceFilter(
        choices=Checksum.choices, help_text="The checksum step each transfer ended with"
    )
    scope = django_filters.ChoiceFilter(
        choices=Scope.choices, help_text="host: host to host; site: site to site"
    )
    site = django_filters.CharFilter(
        method="filter_site", help_text="Either end's site (src_site or dst_site)"
    )
    src_site = django_filters.CharFilter(help_text="The source's site")
    dst_site = django_filters.CharFilter(help_text="The destination's site")
    streams = StreamsFilter(field_name="streams")
    hosts = HostsFilter(
        field_name="hosts", help_text="A scaling sweep's points over this many host pairs"
    )
    sweep = django_filters.ChoiceFilter(
        choices=[("true", "true"), ("false", "false")],
        method="filter_sweep",
        help_text="true: the scaling sweeps' points only (hosts set); false: none of them",
    )

    def filter_site(self, queryset, name, value):
        return queryset.filter(Q(src_site=value) | Q(dst_site=value))

    def filter_sweep(self, queryset, name, value):
        return queryset.filter(hosts__isnull=value != "true")

    class Meta:
        model = Measurement
        fields = [
            "src",
            "dst",
            "protocol",
            "auth",
            "client",
            "checksum",
            "scope",
            "site",
            "src_site",
            "dst_site",
            "hosts",
            "sweep",
            "streams",
            "since",
            "until",
            "campaign",
        ]


class LookupFilterSet(django_filters.FilterSet):
    """Redirector lookups by the file's site, the level found from, the entry redirector,
    protocol, campaign and time."""

    site = django_filters.CharFilter(help_text="The site whose data server holds the file")
    level = django_filters.ChoiceFilter(choices=LookupLevel.choices)
    entry = django_filters.CharFilter(help_text="The redirector first asked")
    protocol = django_filters.ChoiceFilter(choices=Protocol.choices)
    campaign = django_filters.UUIDFilter(field_name="campaign__uuid", help_text="Campaign uuid")
    since = UTCDateTimeFilter(
        field_name="started", lookup_expr="gte", help_text="Started at or after (ISO 8601)"
    )
    until = UTCDateTimeFilter(
        field_name="started", lookup_expr="lt", help_text="Started before (ISO 8601)"
    )

    class Meta:
        model = Lookup
        fields = ["site", "level", "entry", "protocol", "campaign", "since", "until"]


class CampaignFilterSet(django_filters.FilterSet):
    state = django_filters.ChoiceFilter(choices=CampaignState.choices)
    trigger = django_filters.ChoiceFilter(choices=Trigger.choices)

    class Meta:
        model = Campaign
        fields = ["state", "trigger"]


class NodeFilterSet(django_filters.FilterSet):
    site = django_filters.CharFilter()
    name = django_filters.CharFilter()

    class Meta:
        model = Node
        fields = ["site", "name"]


class BaselineFilterSet(PairFilterSet):
    class Meta:
        model = Baseline
        fields = ["src", "dst", "since", "until", "campaign"]


class PrelimRunFilterSet(django_filters.FilterSet):
    node = django_filters.CharFilter(field_name="node__name", help_text="Node name")
    kind = django_filters.ChoiceFilter(choices=PrelimKind.choices)

    class Meta:
        model = PrelimRun
        fields = ["node", "kind"]


@extend_schema_field({"type": "string", "enum": ["true", "false"]})
class TrueFalseFilter(django_filters.ChoiceFilter):
    """ "true" or "false" (the schema says so: it would read a boolean off the model field)."""


class AlertFilterSet(django_filters.FilterSet):
    """Alerts by state, check and when their state last changed."""

    state = django_filters.ChoiceFilter(choices=AlertState.choices)
    src = django_filters.CharFilter(field_name="src__name", help_text="Source node name")
    dst = django_filters.CharFilter(field_name="dst__name", help_text="Destination node name")
    protocol = django_filters.ChoiceFilter(choices=Protocol.choices)
    acknowledged = TrueFalseFilter(
        choices=[("true", "true"), ("false", "false")],
        method="filter_acknowledged",
        help_text="true: acknowledged ones only; false: the others",
    )
    since = UTCDateTimeFilter(
        field_name="since", lookup_expr="gte", help_text="State changed at or after (ISO 8601)"
    )

    def filter_acknowledged(self, queryset, name, value):
        return queryset.filter(acknowledged=value == "true")

    class Meta:
        model = Alert
        fields = ["state", "src", "dst", "protocol", "acknowledged", "since"]
