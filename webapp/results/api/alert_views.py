"""The alerts' resource (issue 24): the checks' alert states, filtered, and an operator's
acknowledgement (a token with results.change_alert: every reporter's)."""

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.response import Response

from webapp.results.api.alert_serializers import AlertSerializer
from webapp.results.filtersets import AlertFilterSet
from webapp.results.models import Alert
from webapp.results.services.alert_acknowledgements import AlertIsOk, alert_acknowledge


class MayAcknowledge(BasePermission):
    """An authenticated user with results.change_alert (DRF answers 401 without one)."""

    def has_permission(self, request, view) -> bool:
        user = request.user
        return bool(user and user.is_authenticated and user.has_perm("results.change_alert"))


class AlertViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Each check's alert: its state (ok, warning, critical), since when and why."""

    queryset = Alert.objects.select_related("src", "dst")
    serializer_class = AlertSerializer
    filterset_class = AlertFilterSet
    lookup_field = "id"

    def get_permissions(self):
        if self.action == "acknowledge":
            return [MayAcknowledge()]
        return super().get_permissions()

    @extend_schema(
        request=None,
        responses={
            200: AlertSerializer,
            404: OpenApiResponse(description="No such alert"),
            409: OpenApiResponse(description="The alert is ok: nothing to acknowledge"),
        },
        description="Mute the alert's notifications until its check is ok again "
        "(then the flag clears by itself). Acknowledging again changes nothing.",
    )
    @action(detail=True, methods=["post"])
    def acknowledge(self, request: Request, id=None):
        alert = self.get_object()
        try:
            alert = alert_acknowledge(alert=alert)
        except AlertIsOk as refused:
            return Response({"state": [str(refused)]}, status=status.HTTP_409_CONFLICT)
        return Response(AlertSerializer(alert).data)
