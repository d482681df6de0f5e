from django.urls import path, re_path
from rest_framework.routers import DefaultRouter

from webapp.results.api import views
from webapp.results.api.aggregate_views import (
    MaddashCellView,
    MaddashCheckView,
    MaddashGridListView,
    MaddashGridView,
    MaddashRowView,
    StreamComparisonView,
    ThroughputVsLatencyView,
)
from webapp.results.api.alert_views import AlertViewSet
from webapp.results.api.lookup_views import LookupViewSet
from webapp.results.api.site_views import HopOverheadView, SiteScalingView

router = DefaultRouter()
router.register("measurements", views.MeasurementViewSet)
router.register("nodes", views.NodeViewSet)
router.register("campaigns", views.CampaignViewSet)
router.register("baselines", views.BaselineViewSet)
router.register("prelim-runs", views.PrelimRunViewSet)
router.register("lookups", LookupViewSet)
router.register("alerts", AlertViewSet)

urlpatterns = [
    *router.urls,
    path(
        "throughput-vs-latency/",
        ThroughputVsLatencyView.as_view(),
        name="throughput-vs-latency",
    ),
    path("hop-overhead/", HopOverheadView.as_view(), name="hop-overhead"),
    path("site-scaling/", SiteScalingView.as_view(), name="site-scaling"),
    path(
        "stream-comparison/",
        StreamComparisonView.as_view(),
        name="stream-comparison",
    ),
]

maddash_urlpatterns = [
    re_path(r"^grids/?$", MaddashGridListView.as_view(), name="maddash-grids"),
    re_path(r"^grids/(?P<name>[^/]+)/?$", MaddashGridView.as_view(), name="maddash-grid"),
    re_path(
        r"^grids/(?P<name>[^/]+)/(?P<row>[^/]+)/?$",
        MaddashRowView.as_view(),
        name="maddash-row",
    ),
    re_path(
        r"^grids/(?P<name>[^/]+)/(?P<row>[^/]+)/(?P<col>[^/]+)/?$",
        MaddashCellView.as_view(),
        name="maddash-cell",
    ),
    re_path(
        r"^grids/(?P<name>[^/]+)/(?P<row>[^/]+)/(?P<col>[^/]+)/(?P<check>[^/]+)/?$",
        MaddashCheckView.as_view(),
        name="maddash-check",
    ),
]
