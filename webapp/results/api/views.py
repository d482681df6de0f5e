"""API views: thin; validation in serializers, writes in services, reads in selectors."""

from django.db.models import Count, IntegerField, OuterRef, Subquery
from django.db.models.functions import Coalesce
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiResponse,
    PolymorphicProxySerializer,
    extend_schema,
    extend_schema_view,
)
from rest_framework import mixins, status, viewsets
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from webapp.results import maddash, selectors, services
from webapp.results.api import aggregate_serializers as agg
from webapp.results.api import campaign_serializers as cs
from webapp.results.api import serializers as s
from webapp.results.api.csv_rows import MEASUREMENT_COLUMNS, TRANSFER_COLUMNS, stream_csv
from webapp.results.api.negotiation import JSONErrorsMixin
from webapp.results.api.renderers import CSVRenderer, EncodedJSON, FastJSONRenderer, json_bytes
from webapp.results.cache import cached_aggregate
from webapp.results.filtersets import CampaignFilterSet, MeasurementFilterSet, NodeFilterSet
from webapp.results.grid import UnknownGrid, grid_bands, grid_names
from webapp.results.models import Campaign, Measurement, Node, Transfer
from webapp.results.reference_selectors import with_baseline


def _count(model, field: str) -> Coalesce:
    """A correlated COUNT, so lists are annotated in one query rather than looped."""
    subquery = Subquery(
        model.objects.filter(**{field: OuterRef("pk")})
        .order_by()
        .values(field)
        .annotate(n=Count("*"))
        .values("n"),
        output_field=IntegerField(),
    )
    return Coalesce(subquery, 0)


# Aggregates and grids (large answers): orjson instead of the standard library's encoder.
FAST_RENDERERS = [
    FastJSONRenderer,
    *(r for r in APIView.renderer_classes if r.format != FastJSONRenderer.format),
]

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
            self.list_query = _query(s.MeasurementListQuerySerializer, request)

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
                s.MeasurementInSerializer,
                s.MeasurementInSerializer(many=True, max_length=MAX_BULK),
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
        incoming = s.MeasurementInSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        try:
            result = services.measurement_ingest(payload=incoming.validated_data)
        except services.MeasurementConflict as conflict:
            return Response({"uuid": [str(conflict)]}, status=status.HTTP_409_CONFLICT)
        body = s.MeasurementSerializer(result.measurement, expand_transfers=False).data
        return Response(body, status=status.HTTP_201_CREATED if result.created else 200)

    def _create_many(self, items: list):
        if len(items) > MAX_BULK:
            raise ValidationError({"non_field_errors": [f"At most {MAX_BULK} measurements."]})
        results: list[dict] = [{} for _ in items]
        valid: list[tuple[int, dict]] = []
        # One serializer for every item: building its fields is the costly part.
        validator = s.MeasurementInSerializer()
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
        stored = services.measurements_ingest(payloads=[p for _, p in valid])
        for (i, payload), outcome in zip(valid, stored, strict=True):
            entry = {"index": i, "uuid": str(payload["uuid"])}
            if isinstance(outcome, services.MeasurementConflict):
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
        measurements_as_src_count=_count(Measurement, "src"),
        measurements_as_dst_count=_count(Measurement, "dst"),
    )
    serializer_class = s.NodeSerializer
    filterset_class = NodeFilterSet
    lookup_field = "name"
    lookup_value_regex = "[^/]+"


class CampaignViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Campaigns; POST asks for a campaign now (pending), PATCH reports its progress."""

    queryset = Campaign.objects.annotate(measurement_count=_count(Measurement, "campaign"))
    serializer_class = cs.CampaignSerializer
    filterset_class = CampaignFilterSet
    lookup_field = "uuid"

    @extend_schema(request=cs.CampaignCreateSerializer, responses={201: cs.CampaignSerializer})
    def create(self, request: Request):
        incoming = cs.CampaignCreateSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        campaign = services.campaign_request(**incoming.validated_data)
        campaign.measurement_count = 0
        return Response(cs.CampaignSerializer(campaign).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=cs.CampaignUpdateSerializer, responses={200: cs.CampaignSerializer})
    def partial_update(self, request: Request, uuid=None):
        campaign = self.get_object()
        incoming = cs.CampaignUpdateSerializer(instance=campaign, data=request.data)
        incoming.is_valid(raise_exception=True)
        services.campaign_update(campaign=campaign, **incoming.validated_data)
        campaign.measurement_count = getattr(campaign, "measurement_count", 0)
        return Response(cs.CampaignSerializer(campaign).data)


def _wants_csv(request: Request) -> bool:
    return getattr(request.accepted_renderer, "format", None) == "csv"


def _query(serializer_class, request: Request) -> dict:
    # An empty parameter is one not given, as the list endpoints' filters read it.
    query = serializer_class(data={k: v for k, v in request.query_params.items() if v != ""})
    query.is_valid(raise_exception=True)
    return query.validated_data


class ThroughputVsLatencyView(JSONErrorsMixin, APIView):
    """Per pair: mean throughput vs mean RTT over a window, and a least-squares fit per protocol.

    With ?format=csv: the points, one row per pair and protocol.
    """

    renderer_classes = [*FAST_RENDERERS, CSVRenderer]
    csv_columns = list(agg.LatencyPointSerializer().fields)

    @extend_schema(
        parameters=[agg.ThroughputVsLatencyQuerySerializer],
        responses=agg.ThroughputVsLatencySerializer,
    )
    def get(self, request: Request) -> Response:
        result = selectors.throughput_vs_latency(
            **_query(agg.ThroughputVsLatencyQuerySerializer, request)
        )
        return Response(result["points"] if _wants_csv(request) else result)


class StreamComparisonView(JSONErrorsMixin, APIView):
    """Per pair: 1-stream vs multi-stream mean throughput over a window (CSV: the pairs)."""

    renderer_classes = [*FAST_RENDERERS, CSVRenderer]
    csv_columns = list(agg.StreamPairSerializer().fields)

    @extend_schema(
        parameters=[agg.StreamComparisonQuerySerializer], responses=agg.StreamComparisonSerializer
    )
    def get(self, request: Request) -> Response:
        result = selectors.stream_comparison(**_query(agg.StreamComparisonQuerySerializer, request))
        return Response(result["pairs"] if _wants_csv(request) else result)


class MaddashGridListView(APIView):
    """MaDDash's grid list: one grid per protocol with results."""

    renderer_classes = FAST_RENDERERS

    @extend_schema(
        parameters=[agg.DimensionsQuerySerializer],
        responses=OpenApiTypes.OBJECT,
        operation_id="maddash_grids_list",
    )
    def get(self, request: Request) -> Response:
        dimensions = _query(agg.DimensionsQuerySerializer, request)
        query = maddash.dimensions_query(**dimensions)
        return Response(
            {
                "grids": [
                    {"name": n, "uri": f"/maddash/grids/{n}{query}"}
                    for n in grid_names(**dimensions)
                ]
            }
        )


@cached_aggregate("maddash-grid-json")
def maddash_grid_json(*, name: str, window: str, auth: str, client: str) -> EncodedJSON:
    """maddash.maddash_grid() encoded, cached as such: a served grid is sent as it is, not
    rebuilt and encoded again (half a megabyte of JSON for 30 nodes). Its bands are computed
    here, not read from their own cache: that would be a second cache entry to write."""
    bands = grid_bands.uncached(name=name, window=window, auth=auth, client=client)
    return EncodedJSON(json_bytes(maddash.grid_document(bands)))


class MaddashGridView(APIView):
    """One grid in MaDDash's JSON shape."""

    renderer_classes = FAST_RENDERERS

    @extend_schema(
        parameters=[agg.MaddashWindowQuerySerializer],
        responses=OpenApiTypes.OBJECT,
        operation_id="maddash_grid_retrieve",
    )
    def get(self, request: Request, name: str) -> Response:
        query = _query(agg.MaddashWindowQuerySerializer, request)
        try:
            return Response(maddash_grid_json(name=name, **query))
        except UnknownGrid as exc:
            raise NotFound(str(exc)) from exc


class MaddashRowView(APIView):
    """One row of a grid (MaDDash's row resource): its cells, each with its checks."""

    renderer_classes = FAST_RENDERERS

    @extend_schema(
        parameters=[agg.MaddashWindowQuerySerializer],
        responses=OpenApiTypes.OBJECT,
        operation_id="maddash_row_retrieve",
    )
    def get(self, request: Request, name: str, row: str) -> Response:
        query = _query(agg.MaddashWindowQuerySerializer, request)
        try:
            return Response(maddash.maddash_row(grid=name, row=row, **query))
        except UnknownGrid as exc:
            raise NotFound(str(exc)) from exc


class MaddashCellView(APIView):
    """One cell of a grid (MaDDash's cell resource): its checks."""

    renderer_classes = FAST_RENDERERS

    @extend_schema(
        parameters=[agg.MaddashWindowQuerySerializer],
        responses=OpenApiTypes.OBJECT,
        operation_id="maddash_cell_retrieve",
    )
    def get(self, request: Request, name: str, row: str, col: str) -> Response:
        query = _query(agg.MaddashWindowQuerySerializer, request)
        try:
            return Response(maddash.maddash_cell(grid=name, row=row, col=col, **query))
        except UnknownGrid as exc:
            raise NotFound(str(exc)) from exc


class MaddashCheckView(APIView):
    """One check of one cell with its paged history (MaDDash's check resource)."""

    renderer_classes = FAST_RENDERERS

    @extend_schema(parameters=[agg.MaddashCheckQuerySerializer], responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, name: str, row: str, col: str, check: str) -> Response:
        query = _query(agg.MaddashCheckQuerySerializer, request)
        try:
            return Response(
                maddash.maddash_check(
                    grid=name,
                    row=row,
                    col=col,
                    check=check,
                    page=query["page"],
                    per_page=query["resultsPerPage"],
                    auth=query["auth"],
                    client=query["client"],
                )
            )
        except UnknownGrid as exc:
            raise NotFound(str(exc)) from exc
