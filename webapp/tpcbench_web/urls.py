from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView

from webapp.results.api.urls import maddash_urlpatterns
from webapp.results.metrics import metrics_view

handler404 = "webapp.tpcbench_web.errors.not_found"

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/v1/", include("webapp.results.api.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="api-docs"),
    path("api/redoc/", SpectacularRedocView.as_view(url_name="schema"), name="api-redoc"),
    path("maddash/", include(maddash_urlpatterns)),
    path("metrics", metrics_view, name="metrics"),
    path("", include("webapp.dashboard.urls")),
]
