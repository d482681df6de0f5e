from django.urls import path

from webapp.dashboard import prelim, run_now, sites, views

app_name = "dashboard"

urlpatterns = [
    path("", views.grid_page, name="grid"),
    path("pairs/<str:src>/<str:dst>/", views.pair_page, name="pair"),
    path("plots/latency/", views.latency_page, name="latency"),
    path("plots/streams/", views.streams_page, name="streams"),
    path("plots/prelim/", prelim.prelim_page, name="prelim"),
    path("sites/", sites.sites_page, name="sites"),
    path("campaigns/run-now/", run_now.run_now, name="run-now"),
]
