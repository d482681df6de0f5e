"""Site scaling benchmark (not a test): how a site's aggregate TPC throughput grows with the
data servers it uses, under a shared site uplink and without one (issue 23: "the limitations
when multiple hosts are involved and perform transfers on the same network link").

Two real site labs (network namespaces; needs root), prefix `tpcbsc`, subnets 10.99.41-44,
each `lab up --sites a:3,b:3 --link-capacity H`: every host's own link capped at H (0.4
Gbit/s), and
- "shared cap": `--site-link-gbit U` (0.8 Gbit/s): both sites' uplinks hold U for all hosts;
- "no shared cap": no uplink cap, each host limited by its own link only.
On each, the scaling sweep of `campaign run --scope site --sweep-hosts` (campaign/site_scope.py):
K HTTPS-TPC copies (4 MiB x K... see FILE_SIZE) spread over m host pairs a-i -> b-i, m = 1..3,
each point taken REPEAT times, the median kept. Printed per m: the aggregate (the paper's
K x S x 8 / mean duration), its efficiency against one host, aggregate(m) / (m x
aggregate(1)), and the prediction min(m x H, U) / (m x H) (1 without a shared cap), with the
measured/predicted ratio and whether it is within 20%.

    .venv/bin/python bench/site_scaling.py [--repeat 3]

Exits 1 if a copy failed or an efficiency misses its prediction by more than 20%.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ca.authority import CertificateAuthority
from orchestrator.campaign.site_scope import site_fronts, site_request
from orchestrator.lab.lifecycle import start_lab, stop_lab
from orchestrator.lab.topology import LabNetwork
from orchestrator.measurement.run import run_measurement
from orchestrator.measurement.spec import MeasurementSpec

NETWORK = LabNetwork(prefix="tpcbsc", subnet_offset=41)
HOST_GBIT = 0.4
UPLINK_GBIT = 0.8
HOSTS = 3
TRANSFERS = 6
FILE_SIZE = 32 << 20


def sweep(uplink: float | None, repeat: int) -> dict[int, list[float]]:
    """Aggregate Gbit/s of every sweep point, `repeat` times each, on a fresh lab."""
    home = Path(tempfile.mkdtemp(prefix="tpcbench-bench-scaling-"))
    home.chmod(0o755)
    CertificateAuthority.init(home / "ca")
    sites = f"a:{HOSTS},b:{HOSTS}"
    try:
        inventory = start_lab(
            home, file_size=FILE_SIZE, network=NETWORK, sites=sites, rate_gbit=HOST_GBIT,
            site_link_gbit=uplink,
        )  # fmt: skip
        fronts = site_fronts(inventory.nodes, inventory.redirector_nodes)
        points: dict[int, list[float]] = {m: [] for m in range(1, HOSTS + 1)}
        for _ in range(repeat):
            for m in points:  # the points take turns: a burst of load hits each alike
                spec = MeasurementSpec("a-rdr", "b-rdr", "https", 1, scope="site", hosts=m)
                request = site_request(spec, fronts, TRANSFERS, FILE_SIZE)
                record = asyncio.run(
                    run_measurement(request, creds=inventory.client, measure_latency=False)
                )
                if record.failed:
                    message = next(t.message for t in record.transfers if not t.succeeded)
                    raise RuntimeError(f"{m} host pair(s): a copy failed: {message}")
                points[m].append(record.throughput_gbps)
                print(f"  {m} host pair(s): {record.throughput_gbps:.3f} Gbit/s", flush=True)
        return points
    finally:
        stop_lab(home)
        shutil.rmtree(home, ignore_errors=True)


def predicted(m: int, uplink: float | None) -> float:
    """The efficiency the links allow: m hosts at H each, through U when it is shared."""
    offered = m * HOST_GBIT
    return min(offered, uplink) / offered if uplink is not None else 1.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="takes per point (default 3)")
    args = parser.parse_args()
    ok = True
    print(f"{TRANSFERS} HTTPS-TPC copies of {FILE_SIZE >> 20} MiB per point, hosts capped at "
          f"{HOST_GBIT} Gbit/s; median of {args.repeat}")  # fmt: skip
    for label, uplink in (("shared cap", UPLINK_GBIT), ("no shared cap", None)):
        cap = f"{uplink} Gbit/s uplink per site" if uplink else "uplinks uncapped"
        print(f"--- {label}: {cap}")
        points = {m: statistics.median(v) for m, v in sweep(uplink, args.repeat).items()}
        print(f"{'hosts':>5} {'Gbit/s':>8} {'efficiency':>10} {'predicted':>9} {'ratio':>6}")
        for m, gbps in points.items():
            efficiency = gbps / (m * points[1])
            expected = predicted(m, uplink)
            ratio = efficiency / expected
            within = abs(ratio - 1) <= 0.2
            ok &= within
            print(f"{m:>5} {gbps:>8.3f} {efficiency:>10.2f} {expected:>9.2f} {ratio:>6.2f}"
                  f"  {'within 20%' if within else 'MISSED'}")  # fmt: skip
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
