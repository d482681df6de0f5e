"""The REST resources' views (netbox's api/views.py): measurements, nodes, campaigns, link
baselines and preliminary runs. Thin: validation in serializers, writes in services, reads
in selectors."""

from drf_spectacular.utils import (
    OpenApiResponse,
    PolymorphicProxySerializer,
    extend_schema,
    extend_schema_view,
)
from rest_framework import mixins, status, viewsets
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from webapp.results.api import baseline_serializers as bs
from webapp.results.api import campaign_serializers as cs
from webapp.results.api import prelim_run_serializers as ps
from webapp.results.api import serializers as s
from webapp.results.api.csv_rows import MEASUREMENT_COLUMNS, TRANSFER_COLUMNS, stream_csv
from webapp.results.api.ingest_serializers import MeasurementInSerializer
from webapp.results.api.negotiation import JSONErrorsMixin
from webapp.results.api.parameters import validated_query
from webapp.results.api.renderers import CSVRenderer
from webapp.results.filtersets import (
    BaselineFilterSet,
    CampaignFilterSet,
    MeasurementFilterSet,
    NodeFilterSet,
    PrelimRunFilterSet,
)
from webapp.results.models import Baseline, Campaign, Measurement, Node, PrelimRun, Transfer
from webapp.results.related_counts import count_related
from webapp.results.selectors.baselines import with_baseline
from webapp.results.services.baselines import baseline_ingest
from webapp.results.services.campaigns import campaign_request, campaign_update
from webapp.results.services.measurements import (
    MeasurementConflict,
    measurement_ingest,
    measurements_ingest,
)
from webapp.results.services.prelim_runs import prelim_run_ingest
from webapp.results.services.uuid_conflicts import UuidConflict

MAX_BULK = 1000  # measurements per bulk request: a bound on one request's work
# One measurement's answer is that measurement; a list's, what became of each.
INGEST_RESULT = PolymorphicProxySerializer(
    component_name="MeasurementIngestResult",
    serializers=[s.MeasurementSerializer, s.BulkResultSerializer],
    resource_type_field_name=None,
)


@extend_schema_view(list=extend_schema(parameters=[s.MeasurementListQuerySerializer]))
class MeasurementViewSet(
    JSONErrorsMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet
):
    """Measurements: ingest (POST one, or a list for bulk) and filtered, paginated reads."""

    queryset = Measurement.objects.select_related("src", "dst", "campaign")
    serializer_class = s.MeasurementSerializer
    filterset_class = MeasurementFilterSet
    lookup_field = "uuid"
    renderer_classes = [*APIView.renderer_classes, CSVRenderer]

    def get_renderers(self):
        # CSV is a list's rows; an ingest answer or a measurement with its transfers is JSON.
        renderers = super().get_renderers()
        if self.action in ("create", "retrieve"):
            return [renderer for renderer in renderers if renderer.format != "csv"]
        return renderers

    def initial(self, request: Request, *args, **kwargs) -> None:
        super().initial(request, *args, **kwargs)
        if self.action == "list":
            self.list_query = validated_query(s.MeasurementListQuerySerializer, request)

    def _expand(self) -> bool:
        return getattr(self, "list_query", {}).get("expand") == "transfers"

    def get_queryset(self):
        queryset = with_baseline(super().get_queryset())
        if self.action == "retrieve" or self._expand():
            queryset = queryset.prefetch_related("transfers")
        return queryset

    def get_serializer(self, *args, **kwargs):
        kwargs.setdefault("expand_transfers", self.action == "retrieve" or self._expand())
        return super().get_serializer(*args, **kwargs)

    def list(self, request: Request, *args, **kwargs):
        if request.accepted_renderer.format == "csv":
            # Every row: limit and offset are checked (a wrong one is a 400), not applied.
            self.paginator.get_limit(request)
            self.paginator.get_offset(request)
            queryset = self.filter_queryset(Measurement.objects.all())
            if self.list_query.get("rows") == "transfers":
                rows = Transfer.objects.filter(measurement__in=queryset.values("pk"))
                return stream_csv(rows, TRANSFER_COLUMNS, "transfers.csv")
            return stream_csv(queryset, MEASUREMENT_COLUMNS, "measurements.csv")
        return super().list(request, *args, **kwargs)

    @extend_schema(
        request=PolymorphicProxySerializer(
            component_name="MeasurementIngest",
            serializers=[
                MeasurementInSerializer,
                MeasurementInSerializer(many=True, max_length=MAX_BULK),
            ],
            resource_type_field_name=None,
            many=False,
        ),
        responses={
            201: INGEST_RESULT,
            200: OpenApiResponse(INGEST_RESULT, "Already stored (same payload)"),
            207: OpenApiResponse(s.BulkResultSerializer, "Bulk form with some items rejected"),
            400: OpenApiResponse(description="Field-level validation errors"),
            409: OpenApiResponse(description="uuid exists with different content"),
        },
        description="Ingest one measurement (an object) or many (a JSON list: bulk form).",
    )
    def create(self, request: Request, *args, **kwargs):
        if isinstance(request.data, list):
            return self._create_many(request.data)
        incoming = MeasurementInSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        try:
            result = measurement_ingest(payload=incoming.validated_data)
        except MeasurementConflict as conflict:
            return Response({"uuid": [str(conflict)]}, status=status.HTTP_409_CONFLICT)
        body = s.MeasurementSerializer(result.measurement, expand_transfers=False).data
        return Response(body, status=status.HTTP_201_CREATED if result.created else 200)

    def _create_many(self, items: list):
        if len(items) > MAX_BULK:
            raise ValidationError({"non_field_errors": [f"At most {MAX_BULK} measurements."]})
        results: list[dict] = [{} for _ in items]
        valid: list[tuple[int, dict]] = []
        # One serializer for every item: building its fields is the costly part.
        validator = MeasurementInSerializer()
        for i, item in enumerate(items):
            try:
                valid.append((i, validator.run_validation(item)))
            except ValidationError as exc:
                uuid = item.get("uuid") if isinstance(item, dict) else None
                results[i] = {
                    "index": i,
                    "uuid": uuid if isinstance(uuid, str) else None,
                    "status": 400,
                    "errors": exc.detail,
                }
        stored = measurements_ingest(payloads=[p for _, p in valid])
        for (i, payload), outcome in zip(valid, stored, strict=True):
            entry = {"index": i, "uuid": str(payload["uuid"])}
            if isinstance(outcome, MeasurementConflict):
                entry.update(status=409, errors={"uuid": [str(outcome)]})
            else:
                entry.update(status=201 if outcome.created else 200)
            results[i] = entry
        counts = {code: sum(1 for r in results if r["status"] == code) for code in (201, 200)}
        rejected = len(results) - counts[201] - counts[200]
        body = {
            "created": counts[201],
            "unchanged": counts[200],
            "rejected": rejected,
            "results": results,
        }
        if rejected:  # 207: some stored, some not; 400: nothing stored
            code = status.HTTP_207_MULTI_STATUS if rejected < len(results) else 400
        else:
            code = status.HTTP_201_CREATED if counts[201] else status.HTTP_200_OK
        return Response(body, status=code)


class NodeViewSet(viewsets.ReadOnlyModelViewSet):
    """Nodes with their measurement counts (annotated, one query per page)."""

    queryset = Node.objects.annotate(
        measurements_as_src_count=count_related(Measurement, "src"),
        measurements_as_dst_count=count_related(Measurement, "dst"),
    )
    serializer_class = s.NodeSerializer
    filterset_class = NodeFilterSet
    lookup_field = "name"
    lookup_value_regex = "[^/]+"


class CampaignViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Campaigns; POST asks for a campaign now (pending), PATCH reports its progress."""

    queryset = Campaign.objects.annotate(measurement_count=count_related(Measurement, "campaign"))
    serializer_class = cs.CampaignSerializer
    filterset_class = CampaignFilterSet
    lookup_field = "uuid"

    @extend_schema(request=cs.CampaignCreateSerializer, responses={201: cs.CampaignSerializer})
    def create(self, request: Request):
        incoming = cs.CampaignCreateSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        campaign = campaign_request(**incoming.validated_data)
        campaign.measurement_count = 0
        return Response(cs.CampaignSerializer(campaign).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=cs.CampaignUpdateSerializer, responses={200: cs.CampaignSerializer})
    def partial_update(self, request: Request, uuid=None):
        campaign = self.get_object()
        incoming = cs.CampaignUpdateSerializer(instance=campaign, data=request.data)
        incoming.is_valid(raise_exception=True)
        campaign_update(campaign=campaign, **incoming.validated_data)
        campaign.measurement_count = getattr(campaign, "measurement_count", 0)
        return Response(cs.CampaignSerializer(campaign).data)


def _ingest(request: Request, incoming_class, store, output_class) -> Response:
    """POST of a baseline or a preliminary run: 201 stored, 200 already stored, 409 conflict."""
    incoming = incoming_class(data=request.data)
    incoming.is_valid(raise_exception=True)
    try:
        stored = store(payload=incoming.validated_data)
    except UuidConflict as conflict:
        return Response({"uuid": [str(conflict)]}, status=status.HTTP_409_CONFLICT)
    code = status.HTTP_201_CREATED if stored.created else status.HTTP_200_OK
    return Response(output_class(stored.item).data, status=code)


def _responses(output_class) -> dict:
    return {
        201: output_class,
        200: OpenApiResponse(output_class, "Already stored (same payload)"),
        400: OpenApiResponse(description="Field-level validation errors"),
        409: OpenApiResponse(description="uuid exists with different content"),
    }


class BaselineViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Link baselines (iperf3 between two nodes): what TPC throughput is a fraction of."""

    queryset = Baseline.objects.select_related("src", "dst", "campaign")
    serializer_class = bs.BaselineSerializer
    filterset_class = BaselineFilterSet
    lookup_field = "uuid"

    @extend_schema(request=bs.BaselineInSerializer, responses=_responses(bs.BaselineSerializer))
    def create(self, request: Request) -> Response:
        return _ingest(request, bs.BaselineInSerializer, baseline_ingest, bs.BaselineSerializer)


class PrelimRunViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Preliminary runs on one node (the paper's Figures 3 and 4), with their points."""

    queryset = PrelimRun.objects.select_related("node").prefetch_related("points")
    serializer_class = ps.PrelimRunSerializer
    filterset_class = PrelimRunFilterSet
    lookup_field = "uuid"

    @extend_schema(request=ps.PrelimRunInSerializer, responses=_responses(ps.PrelimRunSerializer))
    def create(self, request: Request) -> Response:
        return _ingest(request, ps.PrelimRunInSerializer, prelim_run_ingest, ps.PrelimRunSerializer)
