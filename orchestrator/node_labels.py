"""The Kubernetes node labels that describe a node under test: its site and its link capacity.

The operator (or the chart's values) puts them on the nodes, `tpcbench lab up --kubernetes`
puts them on the lab's, and Kubernetes discovery reads them into Endpoint.site and .link_gbps.
"""

# The first of these node labels that is present names the node's site.
SITE_LABELS = ("tpc-bench/site", "topology.kubernetes.io/zone")
LINK_GBPS_LABEL = "tpc-bench/link-gbps"
