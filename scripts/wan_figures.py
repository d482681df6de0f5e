"""The shape of the paper's Figures 7 and 8, read from a running webapp's API (`make demo-wan`).

    .venv/bin/python scripts/wan_figures.py [URL] [--window latest]

Figure 7: throughput versus RTT per protocol and stream setting, and the least-squares slope
(GET /api/v1/throughput-vs-latency/). Figure 8: multi- versus single-stream throughput per
pair (GET /api/v1/stream-comparison/). It reports what the lab shows, agreeing with the paper
or not (a flat slope where the buffers fit the links is a result, not an error: `make
reproduce` compares with the paper); it exits 1 only when there is nothing to show.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import urllib.parse
import urllib.request
from typing import Any


def get(base: str, path: str, **query: object) -> dict[str, Any]:
    url = f"{base.rstrip('/')}{path}?{urllib.parse.urlencode(query)}"
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(url, timeout=30) as response:
        return json.load(response)


def figure7(base: str, window: str) -> bool:
    """Print each fit; True when every protocol and stream setting had points to fit."""
    print(f"Figure 7: throughput versus RTT (window {window})")
    fitted = True
    for protocol in ("https", "gridftp"):
        for streams in (1, 8):
            answer = get(
                base,
                "/api/v1/throughput-vs-latency/",
                protocol=protocol,
                streams=streams,
                window=window,
            )
            points = sorted(answer["points"], key=lambda p: p["rtt_ms"])
            fit = answer["fits"].get(protocol, {})
            slope = fit.get("slope_gbps_per_ms")
            if not points or slope is None:
                print(f"  {protocol:<8} {streams} stream(s): no points with an RTT")
                fitted = False
                continue
            verdict = "falls with RTT" if slope < 0 else "does NOT fall with RTT"
            print(
                f"  {protocol:<8} {streams} stream(s): slope {slope:+.4f} Gbit/s per ms, "
                f"r {fit.get('r') or 0:+.2f}, {len(points)} pairs: {verdict}"
            )
            cells = [f"{p['rtt_ms']:.0f} ms {p['throughput_gbps']:.2f}" for p in points]
            print("    " + ", ".join(cells))
    return fitted


def figure8(base: str, window: str) -> None:
    print(f"Figure 8: multi- versus single-stream throughput (window {window})")
    rtts = {
        (p["src"], p["dst"]): p["rtt_ms"]
        for p in get(base, "/api/v1/throughput-vs-latency/", window=window)["points"]
    }
    for protocol in ("https", "gridftp"):
        pairs = get(base, "/api/v1/stream-comparison/", protocol=protocol, window=window)["pairs"]
        rows = sorted(
            (rtts.get((p["src"], p["dst"]), 0.0), p["ratio"], p["multi_streams"])
            for p in pairs
            if p["ratio"] is not None
        )
        if not rows:
            print(f"  {protocol:<8} no pair has both stream settings")
            continue
        ratios = [r for _, r, _ in rows]
        print(
            f"  {protocol:<8} multi/single median {statistics.median(ratios):.2f} "
            f"(from {min(ratios):.2f} to {max(ratios):.2f}); by RTT: "
            + ", ".join(f"{rtt:.0f} ms x{ratio:.2f}" for rtt, ratio, _ in rows)
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("url", nargs="?", default="http://127.0.0.1:8000")
    parser.add_argument("--window", default="latest", help="latest, <N>h or <N>d")
    args = parser.parse_args(argv)
    fitted = figure7(args.url, args.window)
    figure8(args.url, args.window)
    print(f"  dashboard: {args.url}/plots/latency/ and {args.url}/plots/streams/")
    print("  the paper's findings beside ours, with confidence intervals: make reproduce")
    if not fitted:
        print("some protocol and stream setting has no measurement with an RTT to fit")
    return 0 if fitted else 1


if __name__ == "__main__":
    sys.exit(main())
