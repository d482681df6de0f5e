from django.urls import path, re_path
from rest_framework.routers import DefaultRouter

from webapp.results.api import reference_views, views

router = DefaultRouter()
router.register("measurements", views.MeasurementViewSet)
router.register("nodes", views.NodeViewSet)
router.register("campaigns", views.CampaignViewSet)
router.register("baselines", reference_views.BaselineViewSet)
router.register("prelim-runs", reference_views.PrelimRunViewSet)

urlpatterns = [
    *router.urls,
    path(
        "throughput-vs-latency/",
        views.ThroughputVsLatencyView.as_view(),
        name="throughput-vs-latency",
    ),
    path("stream-comparison/", views.StreamComparisonView.as_view(), name="stream-comparison"),
]

maddash_urlpatterns = [
    re_path(r"^grids/?$", views.MaddashGridListView.as_view(), name="maddash-grids"),
    re_path(r"^grids/(?P<name>[^/]+)/?$", views.MaddashGridView.as_view(), name="maddash-grid"),
    re_path(
        r"^grids/(?P<name>[^/]+)/(?P<row>[^/]+)/?$",
        views.MaddashRowView.as_view(),
        name="maddash-row",
    ),
    re_path(
        r"^grids/(?P<name>[^/]+)/(?P<row>[^/]+)/(?P<col>[^/]+)/?$",
        views.MaddashCellView.as_view(),
        name="maddash-cell",
    ),
    re_path(
        r"^grids/(?P<name>[^/]+)/(?P<row>[^/]+)/(?P<col>[^/]+)/(?P<check>[^/]+)/?$",
        views.MaddashCheckView.as_view(),
        name="maddash-check",
    ),
]
