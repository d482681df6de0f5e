"""The results database, one module per kind of record: what was measured (nodes,
campaigns, measurements, transfers), what it is read against (link baselines, preliminary
runs), redirector lookups, the checks' alerts, the grid's thresholds and the data version the cached
aggregates are keyed by. Django loads an app's models from here."""

from webapp.results.models.alerts import Alert, AlertChange
from webapp.results.models.baselines import Baseline
from webapp.results.models.data_version import DataVersion
from webapp.results.models.lookups import Lookup
from webapp.results.models.measurements import Campaign, Measurement, Node, Transfer
from webapp.results.models.prelim_runs import PrelimPoint, PrelimRun
from webapp.results.models.thresholds import Threshold

__all__ = [
    "Alert",
    "AlertChange",
    "Baseline",
    "Campaign",
    "DataVersion",
    "Lookup",
    "Measurement",
    "Node",
    "PrelimPoint",
    "PrelimRun",
    "Threshold",
    "Transfer",
]
