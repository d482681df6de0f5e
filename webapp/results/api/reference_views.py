"""The references' endpoints: link baselines and preliminary runs, POSTed by the orchestrator
(idempotent by uuid) and read back filtered and paginated."""

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from webapp.results import reference_services as services
from webapp.results.api import reference_serializers as s
from webapp.results.filtersets import BaselineFilterSet, PrelimRunFilterSet
from webapp.results.models import Baseline, PrelimRun


def _ingest(request: Request, incoming_class, store, output_class) -> Response:
    incoming = incoming_class(data=request.data)
    incoming.is_valid(raise_exception=True)
    try:
        stored = store(payload=incoming.validated_data)
    except services.ReferenceConflict as conflict:
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
    serializer_class = s.BaselineSerializer
    filterset_class = BaselineFilterSet
    lookup_field = "uuid"

    @extend_schema(request=s.BaselineInSerializer, responses=_responses(s.BaselineSerializer))
    def create(self, request: Request) -> Response:
        return _ingest(
            request, s.BaselineInSerializer, services.baseline_ingest, s.BaselineSerializer
        )


class PrelimRunViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Preliminary runs on one node (the paper's Figures 3 and 4), with their points."""

    queryset = PrelimRun.objects.select_related("node").prefetch_related("points")
    serializer_class = s.PrelimRunSerializer
    filterset_class = PrelimRunFilterSet
    lookup_field = "uuid"

    @extend_schema(request=s.PrelimRunInSerializer, responses=_responses(s.PrelimRunSerializer))
    def create(self, request: Request) -> Response:
        return _ingest(
            request, s.PrelimRunInSerializer, services.prelim_run_ingest, s.PrelimRunSerializer
        )
