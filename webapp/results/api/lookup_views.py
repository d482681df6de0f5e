"""The redirector lookups' resource (issue 23): POST one (idempotent by uuid), and filtered,
paginated reads, as JSON or CSV."""

from drf_spectacular.utils import extend_schema
from rest_framework import mixins, viewsets
from rest_framework.request import Request
from rest_framework.views import APIView

from webapp.results.api.csv_rows import LOOKUP_COLUMNS, stream_csv
from webapp.results.api.lookup_serializers import LookupInSerializer, LookupSerializer
from webapp.results.api.negotiation import JSONErrorsMixin
from webapp.results.api.renderers import CSVRenderer
from webapp.results.api.views import _ingest, _responses
from webapp.results.filtersets import LookupFilterSet
from webapp.results.models import Lookup
from webapp.results.services.lookups import lookup_ingest


class LookupViewSet(
    JSONErrorsMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet
):
    """Redirector lookups: what each level of the redirector hierarchy costs (docs/api.md)."""

    queryset = Lookup.objects.select_related("campaign")
    serializer_class = LookupSerializer
    filterset_class = LookupFilterSet
    lookup_field = "uuid"
    renderer_classes = [*APIView.renderer_classes, CSVRenderer]

    def get_renderers(self):
        renderers = super().get_renderers()
        if self.action in ("create", "retrieve"):
            return [renderer for renderer in renderers if renderer.format != "csv"]
        return renderers

    def list(self, request: Request, *args, **kwargs):
        if request.accepted_renderer.format == "csv":
            # Every row: limit and offset are checked (a wrong one is a 400), not applied.
            self.paginator.get_limit(request)
            self.paginator.get_offset(request)
            queryset = self.filter_queryset(Lookup.objects.all())
            return stream_csv(queryset, LOOKUP_COLUMNS, "lookups.csv")
        return super().list(request, *args, **kwargs)

    @extend_schema(request=LookupInSerializer, responses=_responses(LookupSerializer))
    def create(self, request: Request):
        return _ingest(request, LookupInSerializer, lookup_ingest, LookupSerializer)
