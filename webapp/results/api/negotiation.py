"""How an answer's format is chosen: an unknown ?format= is a bad parameter, and errors are
JSON whatever format was asked for."""

from django.http import Http404
from rest_framework.exceptions import ValidationError
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import JSONRenderer


class FormatParameterNegotiation(DefaultContentNegotiation):
    """?format=xml is a 400 naming the parameter, not DRF's 404 (the page exists)."""

    def select_renderer(self, request, renderers, format_suffix=None):
        try:
            return super().select_renderer(request, renderers, format_suffix)
        except Http404:
            if format_suffix:  # a URL suffix (measurements.xml): that page does not exist
                raise
            formats = ", ".join(sorted({renderer.format for renderer in renderers}))
            raise ValidationError(
                {self.settings.URL_FORMAT_OVERRIDE: [f"Not one of: {formats}."]}
            ) from None


class JSONErrorsMixin:
    """For views that also answer in CSV: an error is JSON (a field -> messages object), not
    that object squeezed into CSV rows."""

    def handle_exception(self, exc):
        renderer = getattr(self.request, "accepted_renderer", None)  # none if negotiation failed
        if getattr(renderer, "format", None) == "csv":
            self.request.accepted_renderer = JSONRenderer()
            self.request.accepted_media_type = JSONRenderer.media_type
        return super().handle_exception(exc)
