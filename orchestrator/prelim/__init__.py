"""The paper's preliminary benchmarks: what one node's servers can do before any mesh result
means anything (copies between two memory-backed directories on one node: `cp`, HTTPS-TPC and
GridFTP-TPC between two server instances, at 1..N concurrent copies and several file sizes),
and what the link between two nodes carries (an iperf3 baseline)."""
