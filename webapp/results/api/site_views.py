"""The sites' aggregate endpoints (issue 23): hop overhead per redirector level, and a
site's aggregate throughput against its number of hosts. JSON, or CSV of the rows."""

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from webapp.results.api import site_serializers as ss
from webapp.results.api.aggregate_views import FAST_RENDERERS
from webapp.results.api.negotiation import JSONErrorsMixin
from webapp.results.api.parameters import validated_query
from webapp.results.api.renderers import CSVRenderer
from webapp.results.selectors.sites import hop_overhead, site_scaling


def _wants_csv(request: Request) -> bool:
    return getattr(request.accepted_renderer, "format", None) == "csv"


class HopOverheadView(JSONErrorsMixin, APIView):
    """Per redirector level and protocol: lookups, failures and the medians of seconds,
    hops, seconds per hop and the RTT between the levels; STFC's published figure beside
    them. With ?format=csv: the levels."""

    renderer_classes = [*FAST_RENDERERS, CSVRenderer]
    csv_columns = list(ss.LevelSerializer().fields)

    @extend_schema(parameters=[ss.HopOverheadQuerySerializer], responses=ss.HopOverheadSerializer)
    def get(self, request: Request) -> Response:
        result = hop_overhead(**validated_query(ss.HopOverheadQuerySerializer, request))
        return Response(result["levels"] if _wants_csv(request) else result)


class SiteScalingView(JSONErrorsMixin, APIView):
    """Per site pair, protocol, streams and hosts: the scaling sweep's mean aggregate
    throughput, the ideal line (hosts x one host's) and the efficiency. With ?format=csv:
    the points."""

    renderer_classes = [*FAST_RENDERERS, CSVRenderer]
    csv_columns = list(ss.ScalingPointSerializer().fields)

    @extend_schema(parameters=[ss.SiteScalingQuerySerializer], responses=ss.SiteScalingSerializer)
    def get(self, request: Request) -> Response:
        result = site_scaling(**validated_query(ss.SiteScalingQuerySerializer, request))
        return Response(result["points"] if _wants_csv(request) else result)
