"""The aggregates' endpoints: throughput versus latency, single versus multi stream, and the
MaDDash-compatible grids (grid list, grid, row, cell, check), each read through a selector
and shaped by its serializer or by api.maddash."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from webapp.results.api import aggregate_serializers as agg
from webapp.results.api import maddash
from webapp.results.api.negotiation import JSONErrorsMixin
from webapp.results.api.parameters import validated_query
from webapp.results.api.renderers import CSVRenderer, EncodedJSON, FastJSONRenderer, json_bytes
from webapp.results.cache import cached_aggregate
from webapp.results.choices import Scope
from webapp.results.grid.bands import GridBands
from webapp.results.grid.queries import UnknownGrid, check_history, grid_bands, grid_names
from webapp.results.grid.sites import site_grid_bands
from webapp.results.selectors.aggregates import stream_comparison, throughput_vs_latency

# Aggregates and grids (large answers): orjson instead of the standard library's encoder.
FAST_RENDERERS = [
    FastJSONRenderer,
    *(r for r in APIView.renderer_classes if r.format != FastJSONRenderer.format),
]


def _wants_csv(request: Request) -> bool:
    return getattr(request.accepted_renderer, "format", None) == "csv"


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
        result = throughput_vs_latency(
            **validated_query(agg.ThroughputVsLatencyQuerySerializer, request)
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
        result = stream_comparison(**validated_query(agg.StreamComparisonQuerySerializer, request))
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
        dimensions = validated_query(agg.DimensionsQuerySerializer, request)
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
def maddash_grid_json(
    *, name: str, window: str, auth: str, client: str, checksum: str, scope: str = "host"
) -> EncodedJSON:
    """maddash.grid_document() of grid `name` encoded, cached as such: a served grid is sent
    as it is, not rebuilt and encoded again (half a megabyte of JSON for 30 nodes). Its bands
    are computed here, not read from their own cache: that would be a second cache entry to
    write."""
    dimensions = {"auth": auth, "client": client, "checksum": checksum}
    if scope == Scope.SITE:
        bands = site_grid_bands.uncached(name=name, window=window, **dimensions)
    else:
        bands = grid_bands.uncached(name=name, window=window, **dimensions)
    return EncodedJSON(json_bytes(maddash.grid_document(bands)))


def _bands(name: str, query: dict) -> GridBands:
    """A MaDDash resource's grid: the host grid, or with scope site the site grid."""
    scope = query.pop("scope", Scope.HOST)
    return (site_grid_bands if scope == Scope.SITE else grid_bands)(name=name, **query)


class MaddashResourceView(APIView):
    """One of MaDDash's resources: an unknown grid, row, column or check is a 404."""

    renderer_classes = FAST_RENDERERS

    def handle_exception(self, exc):
        if isinstance(exc, UnknownGrid):
            exc = NotFound(str(exc))
        return super().handle_exception(exc)


def _window_schema(operation_id: str):
    return extend_schema(
        parameters=[agg.MaddashWindowQuerySerializer],
        responses=OpenApiTypes.OBJECT,
        operation_id=operation_id,
    )


class MaddashGridView(MaddashResourceView):
    """One grid in MaDDash's JSON shape."""

    @_window_schema("maddash_grid_retrieve")
    def get(self, request: Request, name: str) -> Response:
        query = validated_query(agg.MaddashWindowQuerySerializer, request)
        return Response(maddash_grid_json(name=name, **query))


class MaddashRowView(MaddashResourceView):
    """One row of a grid (MaDDash's row resource): its cells, each with its checks."""

    @_window_schema("maddash_row_retrieve")
    def get(self, request: Request, name: str, row: str) -> Response:
        bands = _bands(name, validated_query(agg.MaddashWindowQuerySerializer, request))
        return Response(maddash.row_document(bands, row))


class MaddashCellView(MaddashResourceView):
    """One cell of a grid (MaDDash's cell resource): its checks."""

    @_window_schema("maddash_cell_retrieve")
    def get(self, request: Request, name: str, row: str, col: str) -> Response:
        bands = _bands(name, validated_query(agg.MaddashWindowQuerySerializer, request))
        return Response(maddash.cell_document(bands, row, col))


class MaddashCheckView(MaddashResourceView):
    """One check of one cell with its paged history (MaDDash's check resource)."""

    @extend_schema(parameters=[agg.MaddashCheckQuerySerializer], responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, name: str, row: str, col: str, check: str) -> Response:
        query = validated_query(agg.MaddashCheckQuerySerializer, request)
        found = check_history(
            grid=name,
            row=row,
            col=col,
            check=check,
            page=query["page"],
            per_page=query["resultsPerPage"],
            auth=query["auth"],
            client=query["client"],
            checksum=query["checksum"],
        )
        return Response(maddash.check_document(found))
