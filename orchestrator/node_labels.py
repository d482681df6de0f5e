"""The Kubernetes node labels that describe a node under test: its site and its link capacity.

The operator (or the chart's values) puts them on the nodes, `tpcbench lab up --kubernetes`
puts them on the lab's, and Kubernetes discovery reads them into Endpoint.site and .link_gbps.
"""

# The first of these node labels that is present names the node's site (tpc-bench.io/site:
# the chart's sites.label default, docs/install.md#sites).
SITE_LABELS = ("tpc-bench/site", "tpc-bench.io/site", "topology.kubernetes.io/zone")
LINK_GBPS_LABEL = "tpc-bench/link-gbps"
